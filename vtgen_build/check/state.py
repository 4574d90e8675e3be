"""The one ``--changed`` state record: each op's code digest when it last passed, under a settings key.

``check --changed`` and ``check --gradcheck --changed`` keep one each (``.vtgen-check/state``,
``.vtgen-gradcheck/state.json``), in this one format: a data-only, hash-checked ``store`` file
``{"settings": <digest of everything but the ops' own code>, "ops": {op: digest}}``.  A record of
other settings, or a damaged one, reads as empty: every op counts as changed.

The hand-written helpers formulas call (``helper_files``: ``--manual-header`` files found through ``-I``
and the torch's include directories, ``helper_roots``; ``--pytorch-root``'s FunctionsManual) are in no
op's own code.  ``check``'s key holds their content (``files_text``: an edit checks every op again, a
compile each); ``--gradcheck``, whose check of every op takes hours, adds to each op's digest the
content of the helper files naming a function its formulas call (``with_helpers``): an edit checks
again the ops that may call what changed.  ``--watch`` looks at the same files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from ..base import store
from ..compile import artifact_key
from ..emit.output_index import OutputIndex

__all__ = [
    "changed_ops",
    "files_text",
    "free_calls",
    "helper_files",
    "helper_roots",
    "read_state",
    "with_helper_calls",
    "with_helpers",
    "write_state",
]

_FREE_CALL = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(")  # name( but not x.name(, p->name(, ns::name(
_YAML_LINE = re.compile(r'^\s*#line \d+ "(.*)"\s*$')


def free_calls(text: str) -> set[str]:
    """The free functions ``text`` calls (``name(``, not ``x.name(`` nor ``ns::name(``)."""
    return set(_FREE_CALL.findall(text))


def helper_roots(include_dirs: Sequence[str], torch_include_dirs: Sequence[str | Path]) -> list[str]:
    """Where a ``--manual-header`` is looked for: each ``-I`` directory, then the include directories of
    the torch compiled against (the compiler's order).  The one rule of ``--changed``'s digests and of
    what ``--watch`` looks at."""
    return list(dict.fromkeys([*include_dirs, *map(str, torch_include_dirs)]))


def helper_files(
    roots: Sequence[str], manual_headers: Sequence[str], manual_header_file: str | None, sources: bool = True
) -> list[Path]:
    """The helper files the formulas' code depends on beside the ops' own: ``manual_header_file`` (a
    checkout's FunctionsManual.h) and, with ``sources`` (what ``--gradcheck`` builds), its ``.cpp``; and
    each ``--manual-header`` under each of ``roots`` (``helper_roots``)."""
    manual = [Path(manual_header_file)] if manual_header_file else []
    manual += [manual[0].with_suffix(".cpp")] if manual and sources else []
    return manual + [Path(d) / h for d in roots for h in manual_headers]


def files_text(paths: Iterable[Path]) -> str:
    """Each existing file's path and content digest, one a line (a key's text: ``artifact_key``)."""
    return "".join(f"{path}\0{store.sha256_hex(path.read_bytes())}\n" for path in paths if path.is_file())


def read_state(path: Path, kind: str, settings: str) -> dict[str, str]:
    """Op → its digest at its last pass, as recorded under ``settings`` (else empty)."""
    data = store.read(path, kind)
    ops = data.get("ops") if isinstance(data, dict) and data.get("settings") == settings else None
    if not isinstance(ops, dict):
        return {}
    return {str(k): v for k, v in ops.items() if isinstance(v, str)}


def write_state(path: Path, kind: str, settings: str, ops: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    store.write(path, kind, {"settings": settings, "ops": dict(sorted(ops.items()))})


def changed_ops(state: Mapping[str, str], digests: Mapping[str, str]) -> list[str]:
    """The ops whose code is not what last passed (new ones too)."""
    return [op for op, d in digests.items() if state.get(op) != d]


def _formula_calls(index: OutputIndex, op: str) -> set[str]:
    """The free functions the formula code of ``op`` calls: the lines its kernels and Nodes hold between a
    ``#line`` naming a yaml file and the next ``#line`` (a check build's line directives)."""
    blocks = [index.kernels[k] for k in index.kernels_of_op.get(op, ()) if k in index.kernels]
    blocks += [b for node in index.nodes_of_op(op) for b in index.node_blocks.get(node, ())]
    names: set[str] = set()
    for block in blocks:
        formula = False
        for line in block.text.split("\n"):
            if (m := _YAML_LINE.match(line)) is not None:
                formula = not m.group(1).endswith((".cpp", ".h"))
            elif formula:
                names.update(_FREE_CALL.findall(line))
    return names


def with_helpers(index: OutputIndex, digests: Mapping[str, str], files: Iterable[Path]) -> dict[str, str]:
    """Each op's digest, with the content digest of every helper file in ``files`` that names (declares or
    calls) a free function the op's formulas call: an edit of a helper changes the digests of the ops that
    may call it, and of no other op."""
    return with_helper_calls(lambda op: _formula_calls(index, op), digests, files)


def with_helper_calls(
    calls: Callable[[str], set[str]], digests: Mapping[str, str], files: Iterable[Path]
) -> dict[str, str]:
    """``with_helpers`` for any code: ``calls(op)`` names the functions the op's formulas call (the generated
    C++'s for the compiled tier, the translated Python's for the Python tier)."""
    helpers: list[tuple[set[str], str]] = []
    for path in dict.fromkeys(files):
        if path.is_file():
            data = path.read_bytes()
            names = set(_FREE_CALL.findall(data.decode("utf-8", "replace")))
            helpers.append((names, f"{path}\0{store.sha256_hex(data)}"))
    if not helpers:
        return dict(digests)
    mixed: dict[str, str] = {}
    for op, digest in digests.items():
        called = calls(op)
        tags = [tag for names, tag in helpers if names & called]
        mixed[op] = artifact_key("changed-op", "", (), "", "", [digest, *tags]) if tags else digest
    return mixed
