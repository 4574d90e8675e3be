"""``check --gradcheck`` catches formulas that are right value for value but break under vmap, and random ops.

Three value-correct, vmap-breaking edits of common ops (the batched ``grad`` written in place into
a tensor made without it: ``zeros_like(self).add_``, ``clone().mul_``, ``empty_like(self).copy_``)
and one wrong formula of a random op go into ONE copy of the real yaml (its own: the formulas test
edits sin, exp and cos otherwise; ``batched_real_yaml``, tests/conftest.py).  One session run checks
them with the batched checks on (the default): each vmap edit fails at its line as a *batching*
failure with PyTorch's message, the random op's wrong formula fails at its line, and the unedited
ops beside them (a random one among them) pass with no batched failure.  A second run with
``--no-batched-grad`` passes the three vmap edits: their values are right.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest

from tests.edited_checkout import Edit, EditedYaml, SharedEdits, vtgen

pytestmark = [pytest.mark.slow, pytest.mark.torch]


INPLACE = "right in value, but written in place into a tensor made without grad: vmap breaks it"
VMAP_EDITS = (
    Edit("sin", INPLACE, "  self: grad * self.cos().conj()", "  self: zeros_like(self).add_(grad * self.cos().conj())"),
    Edit("exp", INPLACE, "  self: grad * result.conj()", "  self: result.conj().clone().mul_(grad)"),
    Edit(
        "cos",
        INPLACE,
        "  self: grad * -self.sin().conj()",
        "  self: at::empty_like(self).copy_(grad * -self.sin().conj())",
    ),
)
# a random op's wrong formula: the mask's scale dropped (train=True is what every sample passes)
RANDOM_EDIT = Edit(
    "native_dropout",
    "the mask's scale dropped",
    '  input: "GradMode::is_enabled() ? infinitely_differentiable_native_dropout_backward(grad, result1, '
    "(!train.has_value() || !train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p)))) : native_dropout_backward(grad, "
    'result1, (!train.has_value() || !train.value() ? 1 : (p == 1 ? 0.0 : 1.0 / (1.0 - p))))"',
    '  input: "GradMode::is_enabled() ? infinitely_differentiable_native_dropout_backward(grad, result1, 1) : '
    'native_dropout_backward(grad, result1, 1)"',
)
# unedited: common ops (one with two inputs) and a random op whose formula is right
UNEDITED = ("tanh", "atan2", "rrelu_with_noise")


@pytest.fixture(scope="session")
def batched_yaml(batched_real_yaml: SharedEdits) -> EditedYaml:
    return batched_real_yaml.yaml


@dataclass(frozen=True)
class Runs:
    batched: subprocess.CompletedProcess[str]  # every edited and unedited op, batched checks on
    unbatched: subprocess.CompletedProcess[str]  # the vmap edits, --no-batched-grad


@pytest.fixture(scope="session")
def runs(batched_yaml: EditedYaml, batched_real_yaml: SharedEdits) -> Runs:
    out = batched_real_yaml.out  # shared with tests/test_gradcheck_shard.py, whose ops are not edited here
    base = ("check", "--pytorch-root", str(batched_yaml.root), "--out", str(out), "--shards", "1", "--gradcheck")
    base = (*base, "--all-checks")  # each edit's failure, not only the first confirmed one
    base += ("--max-samples", "2")
    ops = [a for op in [*(e.op for e in VMAP_EDITS), RANDOM_EDIT.op, *UNEDITED] for a in ("--op", op)]
    batched = vtgen(*base, *ops)
    vmap_ops = [a for e in VMAP_EDITS for a in ("--op", e.op)]
    return Runs(batched, vtgen(*base, "--no-batched-grad", *vmap_ops))


@pytest.mark.parametrize("edit", VMAP_EDITS, ids=[e.op for e in VMAP_EDITS])
def test_a_vmap_breaking_formula_fails_at_its_line_as_a_batching_failure(
    edit: Edit, batched_yaml: EditedYaml, runs: Runs
) -> None:
    done = runs.batched
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    where = f"{batched_yaml.derivatives}:{batched_yaml.lines[edit.op]}: error: gradcheck failed for {edit.op} "
    found = [line for line in done.stderr.splitlines() if line.startswith(where)]
    assert found, f"no failure at {where}\n{done.stderr[-6000:]}"
    assert all("batching failure of the" in line and "(its values are right)" in line for line in found), found
    assert any("vmap: aten::" in line and "is not possible" in line for line in found), found  # PyTorch's message
    assert not any("Jacobian mismatch" in line for line in found)


def test_the_vmap_edits_pass_with_batched_checks_off(runs: Runs) -> None:
    done = runs.unbatched
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "batching failure" not in done.stdout + done.stderr
    assert done.stdout.rstrip().splitlines()[-1].startswith("OK: 6 ops verified")  # sin, exp, cos and in-place


def test_a_random_ops_wrong_formula_fails_at_its_line(batched_yaml: EditedYaml, runs: Runs) -> None:
    where = f"{batched_yaml.derivatives}:{batched_yaml.lines[RANDOM_EDIT.op]}: error: gradcheck failed for "
    found = [line for line in runs.batched.stderr.splitlines() if line.startswith(where)]
    assert found, f"no failure at {where}\n{runs.batched.stderr[-6000:]}"
    assert not any("batching failure" in line for line in found)


def test_unedited_ops_pass_with_no_batched_failure(batched_yaml: EditedYaml, runs: Runs) -> None:
    """The correct formulas beside the edits (tanh, atan2, the random rrelu_with_noise) pass, batched checks on;
    every failure is at an edited line (or at the forward formula ``auto_element_wise`` derives from it)."""
    text = runs.batched.stdout + runs.batched.stderr
    for op in UNEDITED:
        assert f"gradcheck failed for {op}" not in text and f"not verified: {op}:" not in text, text[-6000:]
    prefix = f"{batched_yaml.derivatives}:"
    failing = {int(line[len(prefix) :].split(":")[0]) for line in text.splitlines() if line.startswith(prefix)}
    edited = {batched_yaml.lines[e.op] + d for e in VMAP_EDITS for d in (0, 1)} | {batched_yaml.lines[RANDOM_EDIT.op]}
    assert failing and failing <= edited, (sorted(failing), sorted(edited))


def _scale_add_inplace(clone: bool = True) -> Any:
    """A Function writing ``self`` (as the generated one does): its jvp copies into self's own tangent.
    ``clone``: on a copy of ``self`` (else into the tensor passed, as ``scale_add_``)."""
    import torch

    class ScaleAdd(torch.autograd.Function):
        @staticmethod
        def forward(ctx: object, self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
            self.add_(other)
            ctx.mark_dirty(self)  # type: ignore[attr-defined]
            return self

        @staticmethod
        def backward(ctx: object, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return grad, grad

        @staticmethod
        def jvp(ctx: object, self_t: torch.Tensor | None, other_t: torch.Tensor) -> torch.Tensor:
            if self_t is None:
                return other_t.clone()
            version = self_t._version
            self_t.copy_(self_t + other_t)
            if self_t._version == version:  # the generated jvp's _bump_tangent: vmap's copy_ leaves it
                torch.autograd.graph.increment_version(self_t)
            return self_t

    return (lambda a, b: ScaleAdd.apply(a.clone(), b)) if clone else ScaleAdd.apply


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's forward-AD decompositions load via jit.script
def test_vmaps_refusal_to_write_an_inplace_tangent_is_told_apart() -> None:
    """Only another input's tangent batched: vmap refuses the copy_ PyTorch demands of the jvp (not
    applicable); a formula's own vmap failure (the backward's add_ into an unbatched tensor) is not that."""
    import torch

    from vtgen_build.gradcheck_child import batching

    a, b = (torch.randn(3, dtype=torch.float64, requires_grad=True) for _ in range(2))
    fn = _scale_add_inplace()

    def forward(on: bool) -> None:
        torch.autograd.gradcheck(
            fn, (a, b), check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
            check_batched_forward_grad=on, fast_mode=True,
        )  # fmt: skip

    with pytest.raises(batching.BatchingFailure) as refused:
        batching.run_batched(forward, True)
    assert batching.inplace_tangent_refused(refused.value), str(refused.value)

    def bad_backward(x: torch.Tensor) -> torch.Tensor:
        class Bad(torch.autograd.Function):
            @staticmethod
            def forward(ctx: object, x: torch.Tensor) -> torch.Tensor:
                return x * 2

            @staticmethod
            def backward(ctx: object, grad: torch.Tensor) -> torch.Tensor:
                return torch.zeros(grad.shape[-1], dtype=grad.dtype).add_(grad * 2)

        return Bad.apply(x)

    with pytest.raises(batching.BatchingFailure) as formula:
        batching.run_batched(lambda on: torch.autograd.gradcheck(bad_backward, (a,), check_batched_grad=on), True)
    assert not batching.inplace_tangent_refused(formula.value), str(formula.value)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_an_inplace_ops_batched_forward_part_vmap_refuses_is_a_note_not_a_silent_pass() -> None:
    """A schema sample's in-place check (as ``scale_add_``'s): the values pass, vmap refuses its batched
    forward part; the check row says so, the report prints it as a note, the coverage JSON keeps it."""
    import torch

    from vtgen_build.base.errors import Location
    from vtgen_build.gradcheck import coverage
    from vtgen_build.gradcheck.formulas import FormulaPlaces
    from vtgen_build.gradcheck.records import Entry
    from vtgen_build.gradcheck.report import Report
    from vtgen_build.gradcheck_child import schema_child

    scale_add_ = _scale_add_inplace(clone=False)
    a, b = (torch.randn(3, dtype=torch.float64, requires_grad=True) for _ in range(2))
    call = schema_child.Call(torch, lambda self, other: scale_add_(self, other), {"self": a, "other": b}, ["self"], [])
    note = schema_child.gradcheck(torch, "forward", call, batched=True)
    assert note.startswith("its batched (vmap) part could not run") and "vmap: aten::copy_" in note, note
    assert schema_child.gradcheck(torch, "forward", call, batched=False) == ""  # nothing asked, nothing to say

    row = {"status": "passed", "samples": 1, "ours_ran": True, "hit": ["scale_add_"], "unbatched": note}
    checks = [{"test": "schema_forward_ad", "kind": "forward", "variant": "inplace", "dtype": "float64", **row}]
    entry = Entry.from_json({"entry": "scale_add (schema samples)", "aten": "scale_add", "checks": checks,
                         "direct": {"function": ["scale_add"], "inplace": ["scale_add_"]}, "schema": True})  # fmt: skip
    yaml = Location("derivatives.yaml", 13)
    place = FormulaPlaces(("self", "other"), False, ("alpha",), ((("self",), Location("derivatives.yaml", 14)),),
                          (Location("derivatives.yaml", 16),), yaml, ("self",), True)  # fmt: skip
    report = Report.from_results([entry], ["scale_add_"], {}, {"scale_add_": place}, None, 1.0)
    said = [line for line in report.render().splitlines() if line.startswith("  note: scale_add (schema samples)")]
    assert said and "forward-AD check (inplace, float64) passed; its batched (vmap) part could not run" in said[0]
    entries = coverage.coverage({"scale_add_": place}, [entry], [])
    forward = next(f for f in entries[0].formulas if f.kind == "forward")
    assert forward.check and forward.note == note
    text = coverage.to_json(entries)
    assert json.loads(text)["entries"][0]["formulas"][1]["note"] == note
    assert coverage.to_json(coverage.from_json(text).entries) == text  # kept through a merge
    assert "ran only in checks whose batched (vmap) part could not run" in coverage.render(entries)
