"""A PyTorch-checkout-shaped copy of the real yaml with edited formulas (the gradcheck edit tests).

The reach, formulas and norm-samples edit tests share ONE such copy holding all their edits
(``shared_edits``, the session fixture ``edited_real_yaml`` of tests/conftest.py) and one ``--out``: a
``check --gradcheck`` run compiles one unit per op family, keyed by its text, so each run compiles only
its own ops' units, while the precompiled header, the reach map and the analyses of the installed
torch are made once for the three.  Each test selects its own ops (``--op``) and reads only the lines
of its own edits.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import RealYaml, installed_torch_include

WORK = ".vtgen-gradcheck"  # a gradcheck run's work directory in its --out (its --changed record: state.json)


@dataclass(frozen=True)
class Edit:
    """One formula line of the real derivatives.yaml changed: in the entry ``- name: <op>(...`` (``op`` as
    the yaml spells it, overload name and all; a bare name without such an entry: its first overload),
    the one line that starts with ``old`` has that start replaced by ``new`` (most often the whole line)."""

    op: str  # the op whose formula is edited (and the entry the error must name)
    why: str
    old: str
    new: str
    starts: int = 0  # the formula starts this many lines above the edited one (a multi-line formula)


@dataclass(frozen=True)
class EditedYaml:
    root: Path  # a PyTorch-checkout-shaped copy: --pytorch-root
    derivatives: Path
    lines: dict[str, int]  # op → the line of its edited formula


def edit_formula(text: str, edit: Edit) -> tuple[str, int]:
    """``text`` with ``edit`` made, and the 1-based line its formula starts on; an edit that does not
    find exactly one line to change is a broken test, said at once (the yaml moved on)."""
    lines = text.split("\n")
    exact = [i for i, line in enumerate(lines) if line.startswith(f"- name: {edit.op}(")]
    overloads = [i for i, line in enumerate(lines) if line.startswith(f"- name: {edit.op}.")]
    assert exact or overloads, f"no entry of {edit.op} in derivatives.yaml"
    head = (exact or overloads)[0]
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("- name: ")), len(lines))
    found = [i for i in range(head + 1, end) if lines[i].startswith(edit.old)]
    assert len(found) == 1, f"{edit.op}: {len(found)} lines of its entry start with {edit.old!r}"
    (at,) = found
    lines[at] = edit.new + lines[at][len(edit.old) :]
    return "\n".join(lines), at + 1 - edit.starts


def edited_checkout(real_yaml: RealYaml, root: Path, edits: Sequence[Edit]) -> EditedYaml:
    """Lay out ``root`` as a checkout: the real native_functions.yaml and tags.yaml, the installed
    torch's FunctionsManual.h, and the real derivatives.yaml with ``edits`` made as
    tools/autograd/derivatives.yaml."""
    derivatives = real_yaml.derivatives.read_text(encoding="utf-8")
    lines: dict[str, int] = {}
    for edit in edits:
        derivatives, lines[edit.op] = edit_formula(derivatives, edit)
    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    include = installed_torch_include("torch/csrc/autograd/FunctionsManual.h")
    native = root / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(real_yaml.native_functions, native / "native_functions.yaml")
    shutil.copy(real_yaml.tags, native / "tags.yaml")
    manual = root / "torch/csrc/autograd/FunctionsManual.h"
    manual.parent.mkdir(parents=True)
    manual.symlink_to(include / "torch/csrc/autograd/FunctionsManual.h")
    path = root / "tools/autograd/derivatives.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(derivatives, encoding="utf-8")
    return EditedYaml(root, path, lines)


@dataclass(frozen=True)
class SharedEdits:
    """The edit tests' one checkout (every edit of theirs made) and the ``--out`` of their gradcheck runs."""

    yaml: EditedYaml
    out: Path  # one --out: its artifact cache holds the precompiled header, the reach map and every unit
    ops: tuple[str, ...]  # the edited ops


def shared_edits(real_yaml: RealYaml, root: Path, edits: Sequence[Edit]) -> SharedEdits:
    """The checkout of ``edits`` under ``root`` (no op edited twice: each test names its failures by op
    and line) and the ``--out`` its gradcheck runs share."""
    ops = tuple(e.op for e in edits)
    assert len(set(ops)) == len(ops), sorted(op for op in ops if ops.count(op) > 1)
    return SharedEdits(edited_checkout(real_yaml, root / "checkout", edits), root / "out", ops)


@contextmanager
def warm_worker(out: Path) -> Iterator[None]:
    """The warm gradcheck worker of ``out`` (``vtgen-build worker start``) while the shared runs last: their
    children fork from it instead of each importing torch and PyTorch's test suite anew (their results are
    the same: tests/test_gradcheck_crashes.py, tests/test_library_concurrency.py).  Stopped at the end; an
    idle limit ends it should the session die first."""
    started = vtgen("worker", "start", "--out", str(out), "--idle", "3600")
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield
    finally:
        vtgen("worker", "stop", "--out", str(out))


def plain_check(shared: SharedEdits, out: Path) -> subprocess.CompletedProcess[str]:
    """One plain ``check`` (no --gradcheck) of every edited op: each edit compiles, only gradcheck fails it."""
    selected = [a for op in shared.ops for a in ("--op", op)]
    return vtgen("check", "--pytorch-root", str(shared.yaml.root), "--out", str(out), *selected)


def own_lines(yaml: EditedYaml, edits: Sequence[Edit]) -> set[int]:
    """The lines of ``edits``' formulas in the shared checkout (the others' edits are on other lines)."""
    return {yaml.lines[e.op] for e in edits}


def vtgen(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m vtgen_build ARGS`` in a child process."""
    exe = [sys.executable, "-m", "vtgen_build"]
    return subprocess.run([*exe, *args], capture_output=True, text=True, check=False, timeout=3000)
