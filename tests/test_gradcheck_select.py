"""Choosing checks by what samples reach, the honest verdict and formula coverage (no compiler).

The reach and capture tests run real torch calls in this process (torch's own kernels); the
wrong-formula side, with our kernels built into a library, is tests/test_gradcheck_reach.py.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from vtgen_build.base import store
from vtgen_build.base.errors import Location
from vtgen_build.gradcheck import coverage, reach, verdict
from vtgen_build.gradcheck.formulas import FormulaPlaces
from vtgen_build.gradcheck.records import Check, entries_of
from vtgen_build.gradcheck.report import Report
from vtgen_build.gradcheck.units import Registration


def _child_module(name: str) -> ModuleType:
    """A module of the gradcheck child package (imported as the child imports it)."""
    return importlib.import_module(f"vtgen_build.gradcheck_child.{name}")


def _places(**kw: Any) -> FormulaPlaces:
    at = Location("derivatives.yaml", 10)
    defaults: dict[str, Any] = {
        "arguments": ("grad_output", "self"),
        "out": False,
        "keywords": (),
        "backward": (
            (("grad_output",), Location("derivatives.yaml", 11)),
            (("self",), Location("derivatives.yaml", 12)),
        ),
        "forward": (Location("derivatives.yaml", 13),),
        "entry": at,
        "differentiable": ("grad_output", "self"),
        "forward_ad": True,
    }
    return FormulaPlaces(**{**defaults, **kw})


class _Entry:
    def __init__(self, name: str, fn: Any, make: Any) -> None:
        self.name, self.fn, self.make = name, fn, make

    def calls(self, dtype: Any, limit: int) -> Iterator[Any]:
        sources = _child_module("sample_sources")
        yield sources.Call(self.fn, self.make(dtype))


class _NoCounters:
    def snapshot(self) -> list[int]:
        return []

    def entered(self, before: list[int]) -> set[str]:
        return set()


@pytest.mark.torch
def test_reach_sees_the_backward_op_a_formula_calls() -> None:
    torch = pytest.importorskip("torch")
    capture = _child_module("capture")
    celu = _Entry("celu", torch.nn.functional.celu, lambda d: (torch.randn(5, dtype=d, requires_grad=True),))
    found = capture.reach(celu, [torch.float64])
    assert found is not None
    forward, backward = found
    assert "celu" in forward and "elu_backward" not in forward
    assert "elu_backward" in backward  # celu's formula calls it: its formulas are celu's double backward


class _TwoCalls:
    """An entry whose first call reaches one op and whose later call another (an OpInfo's Scalar sample)."""

    name = "two calls"

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def calls(self, dtype: Any, limit: int) -> Iterator[Any]:
        sources, torch = _child_module("sample_sources"), self.torch
        yield sources.Call(torch.sin, (torch.randn(3, dtype=dtype, requires_grad=True),))
        if limit == 1:
            return
        yield sources.Call(lambda t: torch.add(t, 2.5), (torch.randn(3, dtype=dtype, requires_grad=True),))


@pytest.mark.torch
def test_reach_reads_later_calls_and_capture_finds_their_arguments() -> None:
    torch = pytest.importorskip("torch")
    capture = _child_module("capture")
    found = capture.reach(_TwoCalls(torch), [torch.float64])
    assert found is not None and "sin" in found[0]
    assert "add.Tensor" in found[0] or "add.Scalar" in found[0]  # only the second call adds
    reached = next(op for op in found[0] if op.startswith("add."))
    sets = capture.capture(_TwoCalls(torch), torch.float64, {reached}, 1)[reached]
    assert len(sets) == 1 and capture.op_name(sets[0].func) == reached


@pytest.mark.torch
def test_captured_arguments_gradcheck_the_backward_op_itself() -> None:
    torch = pytest.importorskip("torch")
    capture = _child_module("capture")
    elu = _Entry("elu", torch.nn.functional.elu, lambda d: (torch.randn(6, dtype=d, requires_grad=True),))
    sets = capture.capture(elu, torch.float64, {"elu_backward"}, 1)["elu_backward"]
    assert len(sets) == 1 and capture.op_name(sets[0].func) == "elu_backward"
    prepared = capture.prepare(sets[0], {"grad_output", "self_or_result"})
    assert prepared.names == ("grad_output", "self_or_result") and prepared.positions == (0, 5)
    rows = capture.captured_checks(sets, {"grad_output", "self_or_result"}, ["backward", "forward"], _NoCounters())
    assert [(r.kind, r.status) for r in rows] == [("backward", "passed"), ("forward", "passed")], rows
    assert rows[0].inputs == ("grad_output", "self_or_result")


def test_targets_prefer_the_entry_named_after_the_op_and_mark_backward_reach() -> None:
    m = reach.ReachMap(
        (
            reach.Reach("nn.functional.selu", frozenset({"elu"}), frozenset({"elu_backward"})),
            reach.Reach("nn.functional.elu", frozenset({"elu"}), frozenset({"elu_backward"})),
            reach.Reach("nn.functional.elu (inplace)", frozenset({"elu_"}), frozenset({"elu_backward"})),
            reach.Reach("big.composite", frozenset({"elu", "mul.Tensor", "add.Tensor"}), frozenset()),
        )
    )
    regs = [Registration("aten", "Autograd", "elu", "elu"), Registration("aten", "Autograd", "elu_backward", "elu_bw")]
    places = {"elu": _places(arguments=("self",)), "elu_backward": _places()}
    found = {t.op: t for t in reach.targets(m, regs, places, 2)}
    assert found["elu"].entries == ("nn.functional.elu", "nn.functional.selu")
    assert found["elu_backward"].entries == ("nn.functional.elu", "nn.functional.selu")  # one variant each
    assert found["elu_backward"].through_backward == found["elu_backward"].entries


def test_a_backward_op_is_checked_through_an_opinfo_before_a_module_entry() -> None:
    """Only an OpInfo runs the double backward that checks a ``*_backward`` op's own formulas."""
    m = reach.ReachMap(
        (
            reach.Reach(
                "module:nn.LogSigmoid", frozenset({"log_sigmoid_forward"}), frozenset({"log_sigmoid_backward"})
            ),
            reach.Reach(
                "nn.functional.logsigmoid",
                frozenset({"log_sigmoid_forward"}),
                frozenset({"log_sigmoid_backward", "mul.Tensor"}),
            ),
        )
    )
    regs = [Registration("aten", "Autograd", op, op) for op in ("log_sigmoid_forward", "log_sigmoid_backward")]
    places = {"log_sigmoid_forward": _places(arguments=("self",)), "log_sigmoid_backward": _places()}
    found = {t.op: t for t in reach.targets(m, regs, places, 1)}
    assert found["log_sigmoid_backward"].entries == ("nn.functional.logsigmoid",)
    assert found["log_sigmoid_forward"].entries == ("module:nn.LogSigmoid",)  # forward reach: fewest ops first


def test_of_equally_specific_entries_the_cheapest_measured_goes_first() -> None:
    """``cos`` and ``_foreach_cos`` both reach ``sin`` through three backward ops: by name ``_foreach_cos``
    would win; by the measured seconds of their checks (``shard.Costs``) ``cos`` does; unmeasured goes last."""
    m = reach.ReachMap(
        (
            reach.Reach("sin", frozenset({"sin"}), frozenset({"cos"})),
            reach.Reach("_foreach_cos", frozenset({"_foreach_cos"}), frozenset({"sin", "mul.Tensor", "neg"})),
            reach.Reach("cos", frozenset({"cos"}), frozenset({"sin", "mul.Tensor", "neg"})),
            reach.Reach("aaa.unmeasured", frozenset({"x"}), frozenset({"sin", "mul.Tensor", "neg"})),
        )
    )
    regs = [Registration("aten", "Autograd", "sin", "sin")]
    places = {"sin": _places(arguments=("self",))}
    by_name = reach.targets(m, regs, places, 2)
    assert by_name[0].entries == ("sin", "_foreach_cos")
    measured = reach.targets(m, regs, places, 3, {"cos": 0.1, "_foreach_cos": 1.41, "sin": 0.08})
    assert measured[0].entries == ("sin", "cos", "_foreach_cos")


def test_a_damaged_reach_map_reads_as_none(tmp_path: Path) -> None:
    record = tmp_path / "reach.json"
    store.write(record, reach.KIND, {"key": "k", "entries": [["sin", ["sin"], ["cos", "mul.Tensor"]]]})
    decoded = reach._decode(store.read(record, reach.KIND), "k")
    assert decoded is not None and decoded.reaching("cos")[1][0].entry == "sin"
    assert reach._decode(store.read(record, reach.KIND), "other torch") is None
    data = bytearray(record.read_bytes())
    data[-3] ^= 1
    record.write_bytes(bytes(data))
    assert reach._decode(store.read(record, reach.KIND), "k") is None


def _report(passed: list[str], unverified: list[verdict.Unverified], accept: bool = False) -> Report:
    report = Report(1.0)
    report.passed_ops = passed
    report.unverified = unverified
    report.accept_unverified = accept
    return report


def test_the_verdict_names_each_unverified_op_with_its_reason() -> None:
    regs = [
        Registration("aten", "Autograd", "native_dropout", "k1"),
        Registration("aten", "Autograd", "celu", "k2"),
        Registration("aten", "Autograd", "celu.out", "k3"),
        Registration("aten", "AutogradNestedTensor", "nested_only", "k4"),
        Registration("aten", "Autograd", "weird", "k5"),
        Registration("aten", "Autograd", "plain", "k6"),
    ]
    places = {op: _places() for op in ("native_dropout", "celu", "nested_only", "weird", "plain")}
    places["celu.out"] = _places(out=True)
    found = verdict.unverified(regs, places, ["celu"], [], {"weird": "needs kHidden"}, {"native_dropout": "random"})
    assert [str(u) for u in found] == [
        "native_dropout: random",
        "nested_only: needs sparse / quantized / nested inputs"
        " (its kernel is registered for AutogradNestedTensor only)",
        "plain: no sample yet (no OpInfo, ModuleInfo or other sample call reached our kernel in a passing check)",
        "weird: our kernel could not be built into the library (needs kHidden)",
    ]


def test_an_unverified_op_is_never_ok() -> None:
    missing = [verdict.Unverified("native_dropout", "random")]
    report = _report(["sin"], missing)
    last = report.render().splitlines()[-1]
    assert report.status == verdict.UNVERIFIED == 3 and last.startswith("NOT VERIFIED: 1 selected ops")
    assert "  not verified: native_dropout: random" in report.render()
    accepted = _report(["sin"], missing, accept=True)
    assert accepted.status == 0 and "OK" not in accepted.render().splitlines()[-1]
    assert _report(["sin"], []).render().splitlines()[-1] == "OK: 1 ops verified"
    nothing = _report([], []).render().splitlines()[-1]
    assert "OK" not in nothing and nothing.startswith("NOTHING CHECKED")


def test_coverage_counts_a_formula_only_when_its_input_was_differentiated_in_a_passing_check() -> None:
    places = {"elu_backward": _places(), "native_dropout": _places(entry=Location("derivatives.yaml", 20))}
    check = {"status": "passed", "ours_ran": True, "variant": "function", "dtype": "float64"}
    records = [
        {
            "entry": "elu_backward (arguments from nn.functional.elu)",
            "source": "nn.functional.elu",
            "direct": {"function": ["elu_backward"]},
            "checks": [{**check, "kind": "backward", "inputs": ["grad_output"]}, {**check, "kind": "forward"}],
        }
    ]
    missing = [verdict.Unverified("native_dropout", "random")]
    entries = coverage.coverage(places, entries_of(records), missing)
    first = entries[0]
    assert [f.check is not None for f in first.formulas] == [True, False, True]
    assert not first.backward_covered and first.reason == "no sample yet"
    records[0]["checks"][0]["inputs"] = ["grad_output", "self"]
    entries = coverage.coverage(places, entries_of(records), missing)
    assert entries[0].backward_covered and entries[1].reason == "random"
    assert coverage.figure(entries) == (1, 2)
    data = json.loads(coverage.to_json(entries))
    assert data["covered"] == 1 and data["entries"][1]["reason"] == "random"
    assert "formula coverage: 1 of 2 entries" in coverage.render(entries)


def test_coverage_keeps_the_fixed_reason_and_moves_the_rest_to_the_detail() -> None:
    places = {"repeat": _places(), "roll": _places(entry=Location("derivatives.yaml", 20))}
    missing = [
        verdict.Unverified("repeat", "no sample yet: argument 'repeats' of type SymInt[] (add a sample hint)"),
        verdict.Unverified("roll", verdict.REASONS[4], "no OpInfo, ModuleInfo or other sample call reached it"),
    ]
    entries = coverage.coverage(places, [], missing)
    assert [e.reason for e in entries] == [verdict.REASONS[4]] * 2
    assert entries[0].detail == "argument 'repeats' of type SymInt[] (add a sample hint)"
    assert entries[1].detail == "no OpInfo, ModuleInfo or other sample call reached it"
    assert "   2 entries: no sample yet" in coverage.render(entries)  # one line per fixed reason
    assert json.loads(coverage.to_json(entries))["entries"][0]["detail"].startswith("argument 'repeats'")


@pytest.mark.torch
def test_a_failure_torchs_own_kernels_share_is_not_a_failure(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import sys

    from vtgen_build.gradcheck.reference import judge_failures

    capture = _child_module("capture")
    make = lambda d: (torch.randn(2, 3, dtype=d, requires_grad=True),)  # noqa: E731
    norm = _Entry("layer_norm", lambda x: torch.nn.functional.layer_norm(x, [3]), make)
    sets = capture.capture(norm, torch.float64, {"native_layer_norm_backward"}, 1)["native_layer_norm_backward"]
    # the backward op differentiated in its input with the forward's mean and rstd held: no formula passes that
    rows = capture.captured_checks(sets, {"grad_out", "input"}, ["backward"], _NoCounters())
    assert rows[0].status == "failed"
    kept = str(tmp_path / "kept.pt")
    capture.save_sets(kept, sets, {"grad_out", "input"}, "backward", None)
    sin = _Entry("sin", torch.sin, make)
    fine = str(tmp_path / "fine.pt")
    capture.save_sets(fine, capture.capture(sin, torch.float64, {"sin"}, 1)["sin"], {"self"}, "backward", None)
    failed = {"kind": "backward", "status": "failed", "message": "Jacobian mismatch", "hit": ["x"]}
    records = [{"entry": "e", "checks": [{**failed, "reference": kept}, {**failed, "reference": fine}]}]
    judged = judge_failures(sys.executable, entries_of(records), tmp_path)[0].checks
    assert judged[0].status == "not run" and "PyTorch's own kernels fail it" in judged[0].why
    assert judged[0].hit == ()
    assert judged[1].status == "failed"  # torch's own kernels pass it: the failure stays ours


@pytest.mark.torch
def test_a_whole_call_failure_torchs_own_kernels_share_is_not_a_failure(tmp_path: Path) -> None:
    import sys

    from vtgen_build.gradcheck.reference import judge_failures

    pytest.importorskip("torch")
    child = _child_module("child")
    folder = str(tmp_path / "reference")
    # PyTorch's own _foreach_add.Tensor backward fails once its single `other` tensor needs a gradient (sample 6)
    foreach = child._keep_call_for_reference(folder, ["_foreach_add", "backward", "function", "float64", 8])
    sin = child._keep_call_for_reference(folder, ["sin", "backward", "function", "float64", 1])
    failed = {"test": "through_grad", "kind": "backward", "status": "failed", "message": "mismatch", "hit": ["x"]}
    records = [{"entry": "e", "checks": [{**failed, "sample": 6, "reference": p} for p in (foreach, sin)]}]
    records[0]["checks"].append({**failed, "sample": 2, "reference": foreach})  # ours failed where theirs passed
    judged = judge_failures(sys.executable, entries_of(records), tmp_path)[0].checks
    assert judged[0].status == "not run" and "inconsistent range" in judged[0].why, judged[0]
    assert judged[1].status == "failed"  # torch's own kernels pass it: the failure stays ours
    assert judged[2].status == "failed"


def test_a_failure_at_a_sample_torchs_own_kernels_passed_stays_ours() -> None:
    from vtgen_build.gradcheck.reference import _earlier

    ours = Check("backward", "function", "failed", sample=2, message="gradient list size mismatch")
    theirs = Check("backward", "function", "failed", sample=6, message="range")
    assert _earlier(ours, theirs) and not _earlier(theirs, ours) and not _earlier(ours, ours)


@pytest.mark.torch
def test_an_op_dense_inputs_reach_only_through_a_composite_kernel_says_why() -> None:
    pytest.importorskip("torch")
    child = _child_module("child")
    assert child.uncheckable("aten::linear") == verdict.REASONS[1]  # dense: CompositeImplicitAutograd; ours: nested
    assert child.uncheckable("aten::max_pool2d") == verdict.REASONS[0]  # dense: CompositeImplicitAutograd; ours: MPS
    assert child.uncheckable("aten::sin") == ""
    assert child.uncheckable("aten::native_dropout") == ""  # random, checked seeded (capture.same_draws)


def test_schema_samples_that_verified_nothing_give_the_ops_own_account() -> None:
    from vtgen_build.gradcheck.schema_run import schema_whys

    def record(op: str, *checks: dict[str, object]) -> dict[str, object]:
        return {"entry": f"{op} (schema samples)", "aten": op, "schema": True, "checks": list(checks)}

    rejected = {"status": "not run", "why": "the op rejects the sample: Expected 4D input"}
    sparse = {"status": "not run", "why": "needs sparse / quantized / nested inputs: a sparse or nested result"}
    passed = {"status": "passed", "ours_ran": True}
    whys = schema_whys(
        entries_of(
            [
                record("pool", {"status": "not run", "why": "no forward formula"}, rejected),
                record("to_sparse", sparse),
                record("sin", passed, rejected),
            ]
        )
    )
    assert whys == {"pool": "no sample yet: the op rejects the sample: Expected 4D input", "to_sparse": sparse["why"]}


def test_a_failure_at_an_input_torchs_own_kernels_passed_stays_ours() -> None:
    from vtgen_build.gradcheck.reference import _earlier

    def failed(message: str) -> Check:
        return Check("backward", "function", "failed", message=message)

    ours = failed("Jacobian mismatch for output 0 with respect to input 0, numerical:1.0 analytical:1.1")
    theirs = failed("Jacobian mismatch for output 0 with respect to input 1, numerical:0.0 analytical:0.3")
    assert _earlier(ours, theirs) and not _earlier(theirs, ours) and not _earlier(ours, ours)
    assert not _earlier(failed("backward check: not reentrant"), theirs)


def test_an_entry_whose_check_failed_is_never_covered_and_says_so() -> None:
    places = {"celu": _places()}
    check = {"status": "passed", "ours_ran": True, "variant": "function", "dtype": "float64", "kind": "backward"}
    records = [{"entry": "celu", "direct": {"function": ["celu"]}, "checks": [{**check, "inputs": ["grad_output"]}]}]
    entry = coverage.coverage(places, entries_of(records), [], failed=["celu"])[0]
    assert not entry.backward_covered and entry.reason == coverage.FAILED and entry.detail == "celu"


def test_a_hint_skip_stating_a_reason_leaves_the_denominator() -> None:
    places = {"values": _places(), "roll": _places(entry=Location("derivatives.yaml", 20))}
    missing = [
        verdict.Unverified(
            "values", "needs sparse / quantized / nested inputs: its input must be sparse (sample hints)"
        ),
        verdict.Unverified("roll", "no sample yet: needs src shaped like the slice (sample hints)"),
    ]
    entries = coverage.coverage(places, [], missing)
    assert [e.reason for e in entries] == [verdict.REASONS[1], verdict.REASONS[4]]
    assert entries[0].detail == "its input must be sparse (sample hints)"
    assert coverage.figure(entries) == (0, 1)  # only roll counts against the figure


def test_schema_samples_still_run_for_an_op_entered_only_inside_another_ops_decomposition() -> None:
    from vtgen_build.gradcheck.schema_run import _verified_by

    passed = {
        "status": "passed",
        "ours_ran": True,
        "kind": "backward",
        "variant": "function",
        "hit": ["cdist", "_euclidean_dist"],
    }
    records: list[dict[str, object]] = [
        {"entry": "cdist", "direct": {"function": ["cdist"], "inplace": []}, "checks": [passed]},
        {"entry": "sin", "direct": {"function": ["sin"]}, "checks": [{**passed, "status": "failed", "hit": ["sin"]}]},
    ]
    assert _verified_by(entries_of(records)) == {"cdist"}  # _euclidean_dist's formula ran on arguments no check chose


def test_a_schema_sample_failure_torchs_own_kernels_share_is_not_a_failure() -> None:
    from vtgen_build.gradcheck.records import Entry
    from vtgen_build.gradcheck.reference import judge_schema_failures

    def record(op: str, *checks: Check) -> Entry:
        return Entry(f"{op} (schema samples)", checks, aten=op, schema=True)

    value = Check("backward", "function", "failed", dtype="float64", sample=0, message="Jacobian mismatch")
    vmap = Check("forward", "function", "failed", dtype="float64", sample=0, message="vmap: ...", batched=True)
    ours = [record("a", value), record("b", value, vmap), record("c", Check("backward", "function", "passed"))]
    asked: list[set[str]] = []

    def theirs(ops: set[str]) -> list[Entry]:
        asked.append(ops)
        return [record("a", replace(value, status="passed")), record("b", value, vmap)]

    judged = judge_schema_failures(ours, theirs)
    assert asked == [{"a", "b"}]  # only the failing ops run again
    assert judged[0].checks[0].status == "failed"  # theirs passed: the failure is ours
    shared, batched = judged[1].checks
    assert shared.status == "not run" and shared.why.startswith("PyTorch's own kernels fail it")
    assert batched.status == "passed"  # the values passed; torch's formula breaks under vmap too
    assert judged[2] is ours[2]


def test_a_backward_ops_formulas_count_as_run_in_its_forward_ops_double_backward() -> None:
    """log_sigmoid_backward's own formulas run when the double backward of log_sigmoid's OpInfo entered our
    kernel of it: gradgrad proves its backward formulas, forward-over-reverse its forward one."""
    places = {"log_sigmoid_backward": _places()}
    check = {"status": "passed", "ours_ran": True, "variant": "function", "dtype": "float64"}
    row = {
        "entry": "log_sigmoid_backward (arguments from nn.functional.logsigmoid)",
        "source": "nn.functional.logsigmoid",
        "direct": {"function": ["log_sigmoid_backward"]},
        "checks": [{**check, "kind": "gradgrad", "test": "test_fn_gradgrad"}],
    }
    (entry,) = coverage.coverage(places, entries_of([row]), [])
    assert entry.backward_covered and [f.check is not None for f in entry.formulas] == [True, True, False]
    assert (
        entry.formulas[0].check
        == "log_sigmoid_backward (arguments from nn.functional.logsigmoid): test_fn_gradgrad float64"
    )
    row["checks"].append({**check, "kind": "fwd_over_rev", "test": "test_fn_fwgrad_bwgrad"})  # type: ignore[attr-defined]
    (entry,) = coverage.coverage(places, entries_of([row]), [])
    assert all(f.check for f in entry.formulas) and entry.reason is None
    by_name = {
        **row,
        "source": "",
        "entry": "log_sigmoid_backward",
    }  # an OpInfo's own gradgrad: its backward's backward
    (entry,) = coverage.coverage(places, entries_of([by_name]), [])
    assert not any(f.check for f in entry.formulas)


def test_a_forward_over_reverse_failure_is_at_the_formula_it_differentiates() -> None:
    """An OpInfo's own forward-over-reverse check differentiates its op's backward formulas (at their line);
    through a backward op's forward OpInfo, it differentiates that backward op's forward formula."""
    from vtgen_build.gradcheck.report import _failure

    places = {"log_sigmoid_backward": _places()}
    check = {"status": "failed", "ours_ran": True, "variant": "function", "dtype": "float64", "sample": 0,
             "kind": "fwd_over_rev", "test": "test_fn_fwgrad_bwgrad", "hit": ["log_sigmoid_backward"],
             "positions": [0, 1], "message": "Jacobian computed with forward mode mismatch for output 0 with "
             "respect to input 1"}  # fmt: skip
    own = {"entry": "log_sigmoid_backward", "direct": {"function": ["log_sigmoid_backward"]}, "checks": [check]}
    through = {**own, "entry": "log_sigmoid_backward (arguments from nn.functional.logsigmoid)",
               "source": "nn.functional.logsigmoid"}  # fmt: skip
    (mine, theirs) = entries_of([own, through])
    assert _failure(mine, mine.checks[0], places).location == Location("derivatives.yaml", 12)
    assert _failure(theirs, theirs.checks[0], places).location == Location("derivatives.yaml", 13)


@pytest.mark.torch
def test_captured_in_place_and_random_ops_check_right_with_torchs_own_kernels() -> None:
    """A captured in-place op keeps its input's tangent (forward AD) and graph on the copy it writes; a random
    op draws the same mask in every evaluation gradcheck makes (one seed before each), and the noise
    ``rrelu_with_noise`` writes goes to a copy; the batched parts run too."""
    torch = pytest.importorskip("torch")
    capture = _child_module("capture")
    x = torch.rand(3, 4, dtype=torch.float64) + 0.5
    noise = torch.zeros(3, 4, dtype=torch.float64)
    cases = [
        (torch.ops.aten.exp_.default, (x,), {}, {"self"}),
        (torch.ops.aten.native_dropout.default, (x, 0.5, True), {}, {"input"}),
        (torch.ops.aten.rrelu_with_noise.default, (x - 1.0, noise, 0.1, 0.3, True), {}, {"self"}),
    ]
    for func, args, kwargs, grad in cases:
        sets = [capture.Captured(func, args, kwargs)]
        outputs = [True, False] if func is torch.ops.aten.native_dropout.default else None
        rows = capture.captured_checks(sets, grad, ["backward", "forward"], capture._NoCounters(), outputs,
                                       {"backward", "forward"})  # fmt: skip
        assert [r.status for r in rows] == ["passed", "passed"], (func, rows)
    assert capture.is_random(torch.ops.aten.native_dropout.default) and not capture.is_random(
        torch.ops.aten.sin.default
    )


def test_an_entry_cut_at_a_failure_not_ours_runs_again_whole(tmp_path: Path) -> None:
    """The child answers at an entry's first failed check (``cut``); when PyTorch's own kernels fail it too,
    the entry's lines go from the results (so the child runs it again) and it is named ``whole`` (every check)."""
    from vtgen_build.gradcheck.run import _run_again_whole

    results = tmp_path / "results.jsonl"
    rows = [
        {"start": "abs"},
        {"entry": "abs", "checks": []},
        {"start": "sin"},
        {"at": "sample 0 (float64) of the backward check of sin (function)"},
        {"entry": "sin", "cut": True, "checks": [{"status": "failed"}]},
    ]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    whole: list[str] = []
    _run_again_whole(results, whole)
    kept = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert whole == ["sin"]
    assert kept == rows[:2] + rows[3:4]  # abs stays done; sin is neither started nor finished
    _run_again_whole(results, whole)  # nothing cut now: nothing changes
    assert whole == ["sin"] and len(results.read_text(encoding="utf-8").splitlines()) == 3
