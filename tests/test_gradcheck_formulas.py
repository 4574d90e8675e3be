"""Wrong formulas that compile: plain ``check`` passes them, ``check --gradcheck`` fails at their line.

Fifteen realistic edits, each on its own op, go into ONE copy of the real yaml (the one the
reach and norm-samples tests edit too: ``edited_real_yaml``, tests/conftest.py); one plain
``check`` of the edited ops and one ``check --gradcheck`` run of these (session fixtures) serve
every parametrized assertion.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.edited_checkout import Edit, EditedYaml, SharedEdits, vtgen

pytestmark = [pytest.mark.slow, pytest.mark.torch]


EDITS = (
    Edit(
        "sin", "wrong derivative of a unary op", "  self: grad * self.cos().conj()", "  self: grad * self.sin().conj()"
    ),
    Edit("cos", "dropped sign", "  self: grad * -self.sin().conj()", "  self: grad * self.sin().conj()"),
    Edit("exp", "input used where the output was meant", "  self: grad * result.conj()", "  self: grad * self.conj()"),
    Edit(
        "sinh",
        "dropped conj(): only complex inputs reveal it",
        "  self: grad * self.cosh().conj()",
        "  self: grad * self.cosh()",
    ),
    Edit("sqrt", "dropped factor", "  self: grad / (2 * result.conj())", "  self: grad / result.conj()"),
    Edit(
        "hypot",
        "wrong forward formula: only forward AD reveals it",
        "  result: self_t * self_p / result + other_t * other_p / result",
        "  result: self_t * self_p / result + other_t * self_p / result",
    ),
    Edit(
        "reciprocal",
        "dropped sign",
        "  self: -grad * (result * result).conj()",
        "  self: grad * (result * result).conj()",
    ),
    Edit(
        "atan",
        "sign flipped inside",
        "  self: grad / (self * self + 1).conj()",
        "  self: grad / (self * self - 1).conj()",
    ),
    Edit(
        "log2",
        "another op's constant pasted",
        "  self: grad / (self.conj() * 0.6931471805599453)",
        "  self: grad / (self.conj() * 2.3025850929940456)",
    ),
    Edit("expm1", "dropped term", "  self: grad * (result.conj() + 1)", "  self: grad * result.conj()"),
    Edit(
        "xlogy",
        "second input's formula with its operands swapped",
        "  other: grad * self / other",
        "  other: grad * other / self",
    ),
    Edit("frac", "wrong forward formula: only forward AD reveals it", "  result: self_t", "  result: -self_t"),
    Edit(
        "rsqrt",
        "wrong power",
        "  self: -0.5 * grad * result.pow(3).conj()",
        "  self: -0.5 * grad * result.pow(2).conj()",
    ),
    Edit(
        "atan2",
        "a helper's operands swapped (the helper is libtorch's own, hidden, bound from its symbol table)",
        "  self, other: atan2_backward(grad, self, other, grad_input_mask)",
        "  self, other: atan2_backward(grad, other, self, grad_input_mask)",
    ),
    Edit(
        "_euclidean_dist",
        "a helper's operands swapped, on an op no OpInfo names: only schema-driven samples reach it",
        "  x1, x2: _euclidean_dist_backward(grad, x1, x2, result)",
        "  x1, x2: _euclidean_dist_backward(grad, x2, x1, result)",
    ),
)


@pytest.fixture(scope="session")
def edited_yaml(edited_real_yaml: SharedEdits) -> EditedYaml:
    return edited_real_yaml.yaml


def _ops() -> list[str]:
    return [a for e in EDITS for a in ("--op", e.op)]


@pytest.fixture(scope="session")
def gradcheck_run(edited_yaml: EditedYaml, edited_real_yaml: SharedEdits) -> subprocess.CompletedProcess[str]:
    out = edited_real_yaml.out
    # one shard: the edited ops' kernels and Nodes compile as one unit against the real headers; every
    # check, so that each wrong formula is found (by default the run answers at the first confirmed failure),
    # on two samples of each (as the reach test's run: every sample found the same 358 failures, 30% slower)
    args = ("--pytorch-root", str(edited_yaml.root), "--out", str(out), "--shards", "1", "--gradcheck", "--all-checks")
    return vtgen("check", *args, "--max-samples", "2", *_ops())


def test_every_wrong_formula_compiles(edited_plain_check: subprocess.CompletedProcess[str]) -> None:
    assert edited_plain_check.returncode == 0, edited_plain_check.stderr[-3000:]
    assert "OK, 0 errors" in edited_plain_check.stdout


def test_gradcheck_fails(gradcheck_run: subprocess.CompletedProcess[str]) -> None:
    assert gradcheck_run.returncode == 1, gradcheck_run.stdout[-3000:] + gradcheck_run.stderr[-3000:]
    assert "FAILED" in gradcheck_run.stderr


@pytest.mark.parametrize("edit", EDITS, ids=[e.op for e in EDITS])
def test_gradcheck_points_at_the_formula(
    edit: Edit, edited_yaml: EditedYaml, gradcheck_run: subprocess.CompletedProcess[str]
) -> None:
    where = f"{edited_yaml.derivatives}:{edited_yaml.lines[edit.op]}: error: gradcheck failed for {edit.op} "
    found = [line for line in gradcheck_run.stderr.splitlines() if line.startswith(where)]
    assert found, f"{edit.why}: no failure at {where}\n{gradcheck_run.stderr[-4000:]}"
    # Only a first-order check fails on this op's own edit alone: a double-backward check differentiates the
    # formula through the ops it calls, whose formulas other edits here break (sin's calls cos: cos's edit fails
    # sin's double-backward at sin's line, sin's own edit or not).  A swapped-operand edit may show as a
    # wrong-shaped gradient rather than a mismatch (_euclidean_dist: "backward check: mat1 and mat2 shapes ...").
    first_order = ("): backward Jacobian mismatch for input ", "): backward check: ")
    backward = [line for line in found if any(said in line for said in first_order)]
    forward = [line for line in found if "): forward-AD Jacobian mismatch for input " in line]
    if "only forward AD reveals it" in edit.why:  # a forward formula: forward-mode gradcheck alone fails
        assert forward and not [line for line in found if line in backward or "): double-backward" in line], found
    else:  # a backward formula: the backward Jacobian is wrong
        assert backward, found
