"""Choosing checks by what samples reach, the honest verdict and formula coverage (no compiler).

The reach and capture tests run real torch calls in this process (torch's own kernels); the
wrong-formula side, with our kernels built into a library, is tests/test_gradcheck_reach.py.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from vtgen_build.base import store
from vtgen_build.base.errors import Location
from vtgen_build.gradcheck import coverage, reach, verdict
from vtgen_build.gradcheck.formulas import FormulaPlaces
from vtgen_build.gradcheck.report import Report
from vtgen_build.gradcheck.units import Registration

HERE = Path(reach.__file__).resolve().parent


def _child_module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"test_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    import sys

    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


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
    assert [(r["kind"], r["status"]) for r in rows] == [("backward", "passed"), ("forward", "passed")], rows
    assert rows[0]["inputs"] == ["grad_output", "self_or_result"]


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
    entries = coverage.coverage(places, records, missing)
    first = entries[0]
    assert [f.check is not None for f in first.formulas] == [True, False, True]
    assert not first.backward_covered and first.reason == "no sample yet"
    records[0]["checks"][0]["inputs"] = ["grad_output", "self"]
    entries = coverage.coverage(places, records, missing)
    assert entries[0].backward_covered and entries[1].reason == "random"
    assert coverage.figure(entries) == (1, 2)
    data = json.loads(coverage.to_json(entries))
    assert data["covered"] == 1 and data["entries"][1]["reason"] == "random"
    assert "formula coverage: 1 of 2 entries" in coverage.render(entries)
