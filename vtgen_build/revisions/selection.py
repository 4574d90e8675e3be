"""Which ops a change since a git revision touches, entry by entry.

An op is selected when its native_functions.yaml entry differs from the revision
(added or edited), when the derivatives.yaml entry its formulas come from differs,
or when a helper its formulas call is declared on a changed line of a manual helper
header (or its ``.cpp``).  A change to a whole file the code depends on (tags.yaml, a
template, the generator's sources, an input renamed, added or removed) selects
every op.  Whitespace-only and comment-only edits between entries select nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import VtgenError
from ..inputs.files import Inputs
from ..inputs.load import Entry, load_entries, load_text
from .git import FileChange, Repository

if TYPE_CHECKING:
    from ..emit.output_index import OutputIndex

__all__ = ["Changes", "changes_since"]

# PyTorch-checkout paths whose change changes every op's code: templates, the generator (its lists)
_WHOLE_FILE_PREFIXES = ("tools/autograd/templates/",)
_GENERATOR_SOURCES = re.compile(r"^tools/autograd/[^/]+\.py$")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_NOT_HELPERS = frozenset(
    {
        "if",
        "for",
        "while",
        "switch",
        "return",
        "sizeof",
        "decltype",
        "static_assert",
        "static_cast",
        "const_cast",
        "reinterpret_cast",
        "dynamic_cast",
        "TORCH_CHECK",
    }
)


@dataclass(frozen=True)
class Changes:
    """What differs from ``revision``: every op, or the entries and helpers that changed."""

    revision: str
    everything: str | None  # why every op is selected, or None
    ops: tuple[str, ...] = ()  # ops whose own entry (native or derivative) differs
    derivatives: str = ""  # derivatives.yaml, resolved: the file the spans are lines of
    spans: tuple[tuple[int, int], ...] = ()  # derivatives.yaml lines of the entries whose formulas count

    def select(self, index: OutputIndex) -> list[str] | None:
        """The ops of ``index`` to check; None: every op."""
        if self.everything is not None:
            return None
        known = index.kernels_of_op
        chosen = {op for op in self.ops if known.get(op)}
        for (path, line), nodes in index.formula_lines.items():
            if path == self.derivatives and any(first <= line <= last for first, last in self.spans):
                chosen |= {op for node in nodes for op in index.ops_of_node(node)}
        return sorted(chosen)


def _name(entry: Entry, key: str) -> str | None:
    """The op name (``add.Tensor``) of an entry's ``func:``/``name:`` schema."""
    for f in entry.fields:
        if f.key == key and isinstance(f.value, str):
            return f.value.split("(", 1)[0].strip()
    return None


def _by_name(entries: Iterable[Entry], key: str) -> dict[str, Entry]:
    return {name: e for e in entries if (name := _name(e, key)) is not None}


def _differing(old: dict[str, Entry], new: dict[str, Entry]) -> set[str]:
    return {n for n in old.keys() | new.keys() if n not in old or n not in new or old[n].text != new[n].text}


def _old_entries(repo: Repository, rel: str, path: str, key: str) -> dict[str, Entry] | None:
    text = repo.text_at_revision(rel)
    if text is None:
        return None
    try:
        return _by_name(load_text(text, f"{path}@{repo.commit[:12]}"), key)
    except VtgenError:
        return None  # it did not load at the revision: compared as a whole-file change


def _span(entry: Entry) -> tuple[int, int]:
    return entry.location.line, entry.location.line + entry.text.count("\n") - (entry.text.endswith("\n"))


def _calls(lines: Iterable[str]) -> set[str]:
    return {n for line in lines for n in _CALL.findall(line) if n not in _NOT_HELPERS}


def _helpers(repo: Repository, rels: Sequence[str]) -> set[str]:
    """Names declared (or called) on the changed lines of the helper files.

    A hunk naming none (a parameter on a line of its own) counts the declaration git
    names as its context (the line above it that starts a declaration).
    """
    names: set[str] = set()
    for rel in rels:
        for context, lines in repo.changed_hunks(rel):
            names |= _calls(lines) or _calls([context])
    return names


def _whole_file(changes: list[FileChange], inputs: dict[str, str], policy: bool) -> str | None:
    """Why a change to a whole file selects every op, or None."""
    for c in changes:
        for path in {c.path, c.old}:
            if path in inputs and (c.status in "ADRCT" or inputs[path] == "tags"):
                kind = {"A": "added", "D": "removed", "R": "renamed", "C": "copied", "T": "replaced"}.get(c.status)
                return f"{path} {kind or 'changed'}"
            if path.startswith(_WHOLE_FILE_PREFIXES) or (policy and _GENERATOR_SOURCES.match(path)):
                return f"{path} changed"
    return None


def _spelled(repo: Repository, path: str) -> str | None:
    """``path`` relative to the work tree as spelled (symbolic links not followed), or None."""
    try:
        return Path(os.path.abspath(path)).relative_to(repo.root).as_posix()
    except ValueError:
        return None


def _uncomparable(repo: Repository, paths: Sequence[str], by_path: set[str]) -> str | None:
    """Why git cannot tell how one of ``paths`` (the inputs and helper files read) differs from the
    revision, or None: it lies outside the work tree (or is reached through a link out of it), it is
    neither tracked nor shown as new (ignored), or a symbolic link on the way to it changed."""
    for path in paths:
        rel = repo.relative(path)
        if rel is None:
            return f"{path} is outside the git work tree {repo.root} (or reached through a link out of it)"
        spelled = _spelled(repo, path)
        if spelled is not None and spelled != rel and spelled in by_path:
            return f"{spelled} (a symbolic link to {rel}) changed"
        if rel not in by_path and not repo.tracked_at_revision(rel):
            return f"{rel} is not tracked by git (ignored?)"
    return None


def changes_since(revision: str, inputs: Inputs, helper_files: Sequence[str], pytorch_root: str | None) -> Changes:
    """What differs between ``revision`` and the working tree of the git work tree holding the inputs.

    An input or helper file git cannot compare (``_uncomparable``) selects every op: an edit to it
    must never read as "nothing changed"."""
    repo = Repository.at(str(Path(inputs.derivatives).resolve().parent), revision)
    files = {"native": inputs.native_functions, "derivatives": inputs.derivatives, "tags": inputs.tags}
    rel = {kind: r for kind, path in files.items() if path and (r := repo.relative(path)) is not None}
    changed = repo.changed()
    by_path = {c.path for c in changed}
    derivatives = str(Path(inputs.derivatives).resolve())
    read = [p for p in (*files.values(), *helper_files) if p]
    whole = _whole_file(changed, {v: k for k, v in rel.items()}, pytorch_root is not None)
    whole = whole or _uncomparable(repo, read, by_path)
    if whole is not None:
        return Changes(revision, whole, derivatives=derivatives)
    new_native = _by_name(load_entries(inputs.native_functions), "func")
    new_derivatives = _by_name(load_entries(inputs.derivatives), "name")
    ops: set[str] = set()
    entries: set[str] = set()  # derivatives.yaml entries (by op name) whose formulas count
    for kind, key, new, path in (
        ("native", "func", new_native, inputs.native_functions),
        ("derivatives", "name", new_derivatives, inputs.derivatives),
    ):
        if rel.get(kind) not in by_path:
            continue
        old = _old_entries(repo, rel[kind], path, key)
        if old is None:
            return Changes(revision, f"{rel[kind]} does not load at {revision}", derivatives=derivatives)
        differing = _differing(old, new)
        ops |= differing
        entries |= differing
    helpers = _helpers(repo, [r for f in helper_files if (r := repo.relative(f)) is not None and r in by_path])
    for name, entry in new_derivatives.items():
        if helpers and any(re.search(rf"\b{re.escape(h)}\b", entry.text) for h in helpers):
            entries.add(name)
    spans = tuple(sorted(_span(new_derivatives[n]) for n in entries if n in new_derivatives))
    return Changes(revision, None, tuple(sorted(ops)), derivatives, spans)
