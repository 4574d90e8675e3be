"""``check --gradcheck --changed`` after an edit of a helper file only (``--manual-header``): the ops whose
formulas call a function the file names are checked again, and no other op (issue 44, item 3)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from vtgen_build import torchlib
from vtgen_build.check import CheckOptions, changed_ops
from vtgen_build.cli import watch
from vtgen_build.cli.commands import main
from vtgen_build.compile import Compiler
from vtgen_build.emit.output_index import OutputIndex, read_index
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.gradcheck.run import GradcheckOptions, _op_digests, _selected
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.request import BuildRequest
from vtgen_build.torchlib import BuildSettings, TorchInstall

SAMPLE = Path(__file__).resolve().parent.parent / "sample_project"
HEADER = "vtsample/helpers.h"


YAML = ("native_functions.yaml", "derivatives.yaml", "tags.yaml")


def _project(tmp: Path) -> tuple[OutputIndex, BuildSettings, GradcheckOptions]:
    for name in YAML:
        shutil.copy(SAMPLE / name, tmp / name)
    (tmp / "include" / "vtsample").mkdir(parents=True)
    shutil.copy(SAMPLE / "include" / HEADER, tmp / "include" / HEADER)
    out = tmp / "out"
    inputs = Inputs(
        str(tmp / "native_functions.yaml"), str(tmp / "derivatives.yaml"), str(tmp / "tags.yaml"), "vtsample"
    )
    generate(
        inputs,
        GenerateOptions(
            str(out), 2, BuildRequest("vtsample", manual_headers=(HEADER,), stub_decls=True), line_directives=True
        ),
    )
    (tmp / "torch" / "include").mkdir(parents=True)
    torch = TorchInstall(sys.executable, "0.0", tmp / "torch", (tmp / "torch" / "include",), tmp / "torch", True)
    settings = BuildSettings(Compiler("c++", "gcc", "c++ 1", "id"), torch, tmp / "work", release="2.13")
    return read_index(out), settings, GradcheckOptions(CheckOptions(changed=True, include_dirs=(str(tmp / "include"),)))


def test_a_helper_edit_selects_the_ops_calling_it(tmp_path: Path) -> None:
    index, settings, options = _project(tmp_path)
    before = _op_digests(index, settings, (HEADER,), options)
    assert _op_digests(index, settings, (HEADER,), options) == before
    header = tmp_path / "include" / HEADER
    header.write_text(header.read_text().replace("// d/dx x / (1 + |x|)", "// made wrong: d/dx x / (1 + |x|)"))
    after = _op_digests(index, settings, (HEADER,), options)
    changed = changed_ops(before, after)
    assert {"softsign", "softsign_", "scale_add"} <= set(changed)
    assert not any(op.startswith("swap_dims") for op in changed)  # its formulas call no helper
    chosen = {r.op for r in _selected(index, index.registrations, options, after, before)}
    assert chosen == set(changed) and chosen


def test_a_helper_found_in_the_torch_include_directory_counts_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--manual-header torch/csrc/autograd/FunctionsManual.h``, found in the torch's headers (an editable
    checkout's), is read like a header found through ``-I``: by ``--changed``'s digests and by what
    ``--watch`` looks at (one rule, ``check.helper_roots``)."""
    index, settings, options = _project(tmp_path)
    moved = settings.torch.include_dirs[0] / HEADER
    moved.parent.mkdir(parents=True)
    shutil.move(tmp_path / "include" / HEADER, moved)
    before = _op_digests(index, settings, (HEADER,), options)
    moved.write_text(moved.read_text() + "\n// edited\n")
    assert "softsign" in changed_ops(before, _op_digests(index, settings, (HEADER,), options))
    watched: list[str] = []
    monkeypatch.setattr(torchlib, "locate_torch", lambda python=None, worker=None: settings.torch)
    monkeypatch.setattr(watch, "watch", lambda files, *rest: watched.extend(files) or 0)
    yaml = [f"--{name.split('.')[0].replace('_', '-')}={tmp_path / name}" for name in YAML]
    args = ["check", "--gradcheck", "--watch", *yaml, "--namespace=vtsample", f"--manual-header={HEADER}"]
    assert main([*args, f"-I{tmp_path / 'include'}", f"--out={tmp_path / 'out'}"]) == 0
    assert str(moved) in watched, watched
