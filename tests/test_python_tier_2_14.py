"""The Python tier on torch 2.14.1's own yaml, in its environment (``tools/torch_envs.py``): the planted
formulas of ``test_python_tier`` fail at their 2.14.1 lines, and nothing else fails, in one child run (an
unedited entry beside them is no clean pass: its checks run the planted ``mul.Tensor`` and ``sin``); the
benchmark's three ops (``bench/bench_gradcheck.py --verdicts``: sin, celu, elu_backward) pass unedited in a
second run, as the benchmark runs them.
Without the environment the test skips, unless ``VTGEN_REQUIRE_STABLE_MATRIX`` is set (CI): then the
environment is made, or the test fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import RealYaml, release_python_or_skip
from tests.edited_checkout import edited_checkout, vtgen
from tests.test_python_tier import PLANTS

_FAILED = re.compile(r": error: \[python tier\] (?:gradcheck failed for )?([\w.]+)")


def _yaml_of(python: Path) -> RealYaml:
    """The yaml the environment's own torchgen ships (found without importing torch)."""
    (torchgen,) = python.parent.parent.glob("lib/python*/site-packages/torchgen")
    packaged = torchgen / "packaged"
    return RealYaml(torchgen, packaged / "ATen/native/native_functions.yaml", packaged / "ATen/native/tags.yaml",
                    packaged / "autograd/derivatives.yaml")  # fmt: skip


@pytest.mark.slow
@pytest.mark.torch
def test_the_plants_fail_at_their_2_14_lines_and_nothing_else_does(tmp_path: Path) -> None:
    python = release_python_or_skip("2.14.1")
    planted = edited_checkout(_yaml_of(python), tmp_path / "src", PLANTS[:4])
    ops = [a for p in PLANTS[:4] for a in ("--op", p.op)]
    args = ("--pytorch-root", str(planted.root), "--torch-version", "2.14", "--python", str(python))
    done = vtgen("check", *args, "--out", str(tmp_path / "out"), "--gradcheck", "--tier", "python", *ops)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said[-4000:]
    for plant in PLANTS[:4]:
        at = f"{planted.derivatives}:{planted.lines[plant.op]}: error: [python tier] "
        assert at in said, f"{plant.op} ({plant.why}): no failure at its line\n{said[-4000:]}"
    assert set(_FAILED.findall(said)) == {p.op for p in PLANTS[:4]}, said[-4000:]


@pytest.mark.slow
@pytest.mark.torch
def test_the_benchmarks_ops_pass_unedited_on_2_14(tmp_path: Path) -> None:
    python = release_python_or_skip("2.14.1")
    unedited = edited_checkout(_yaml_of(python), tmp_path / "src", ())
    args = ("--pytorch-root", str(unedited.root), "--torch-version", "2.14", "--python", str(python))
    ops = ("sin", "celu", "elu_backward")
    done = vtgen("check", *args, "--out", str(tmp_path / "out"), "--gradcheck", "--tier", "python",
                 *(a for op in ops for a in ("--op", op)))  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 0 and not _FAILED.findall(said), said[-4000:]
    for op in (*ops, "sin_", "celu_"):
        assert f"[python tier] {op}: passed (" in said, f"{op} did not pass unedited\n{said[-4000:]}"
