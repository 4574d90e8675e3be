"""A yaml with several errors names the same first error whatever the directory's history:
incrementally (after any sequence of edits and successful runs) and clean."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vtgen_build.base.errors import VtgenError
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.request import BuildRequest

from .conftest import SAMPLE

# What an edit puts right after an entry's `- name:` line (None: restore the entry).
BREAKS = {
    "key": "  bogus_key: grad\n",  # an unknown key: the entry does not parse
    "yaml": "  self: [grad\n",  # not YAML: the file does not load
    "arg": "  no_such_input: grad\n",  # parses, but names no argument: the plan fails
    "comment": "  # edited\n",  # harmless
    "restore": None,
}
EDITS = st.lists(st.tuples(st.sampled_from(sorted(BREAKS)), st.integers(0, 7)), min_size=1, max_size=6)


def _entries(text: str) -> tuple[str, list[str]]:
    """The text before the first entry, and each entry's text."""
    starts = [m.start() for m in re.finditer(r"^- name: ", text, re.M)]
    return text[: starts[0]], [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _outcome(inputs: Inputs, out: Path) -> str | dict[str, bytes]:
    """The error a run reports, or the files it leaves (its records aside)."""
    try:
        generate(inputs, GenerateOptions(str(out), shards=2, request=BuildRequest("vtsample")))
    except VtgenError as exc:
        return str(exc)
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and ".vtgen" not in str(p)
    }


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_the_first_error_does_not_depend_on_history(tmp_path_factory, edits) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("first-error")
    for name in ("native_functions.yaml", "tags.yaml", "derivatives.yaml"):
        shutil.copyfile(SAMPLE / name, root / name)
    inputs = Inputs(*(str(root / n) for n in ("native_functions.yaml", "derivatives.yaml", "tags.yaml")), "vtsample")
    head, original = _entries((root / "derivatives.yaml").read_text(encoding="utf-8"))
    entries = list(original)
    incremental = root / "incremental"
    assert isinstance(_outcome(inputs, incremental), dict)
    for step, (kind, k) in enumerate(edits):
        first, rest = original[k].split("\n", 1)
        entries[k] = original[k] if BREAKS[kind] is None else f"{first}\n{BREAKS[kind]}{rest}"
        Path(inputs.derivatives).write_text(head + "".join(entries), encoding="utf-8")
        clean = _outcome(inputs, root / f"clean-{step}")
        assert _outcome(inputs, incremental) == clean, (step, kind, k)
