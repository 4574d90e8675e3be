"""No silent fallback: what cannot be done is refused, reported, or (for users) announced."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from vtgen_build.base.errors import Location, VtgenError
from vtgen_build.engine import generate as generate_module
from vtgen_build.engine import incremental
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.policy import read_policy_sources
from vtgen_build.plan.request import BuildRequest
from vtgen_build.plan.target import resolve_target

from .conftest import CliRunner, copy_sample, strict_incremental


def _edited_sample(tmp_path: Path) -> tuple[Inputs, GenerateOptions, Path]:
    """A generated copy of the sample whose derivatives.yaml was then edited (the next run is incremental)."""
    root = copy_sample(tmp_path / "sample")
    names = ("native_functions.yaml", "derivatives.yaml", "tags.yaml")
    inputs = Inputs(*(str(root / n) for n in names), "vtsample")
    options = GenerateOptions(str(tmp_path / "out"), shards=2, request=BuildRequest("vtsample"))
    assert generate(inputs, options).mode == "full"
    path = root / "derivatives.yaml"
    path.write_text(path.read_text().replace("softsign_backward(grad, self)", "softsign_backward(grad, self) * 2"))
    return inputs, options, root


def _broken_incremental(*args: object, **kwargs: object) -> object:
    raise TypeError("a bug in the incremental path")


def test_an_incremental_path_bug_raises_under_the_test_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inputs, options, _ = _edited_sample(tmp_path)
    # tests/conftest.py installs the strict hook in every test process; this test names it again
    monkeypatch.setattr(generate_module, "_INCREMENTAL_FAILURE_HOOKS", [strict_incremental])
    monkeypatch.setattr(incremental, "incremental_run", _broken_incremental)
    with pytest.raises(TypeError, match="a bug in the incremental path"):
        generate(inputs, options)


def test_an_incremental_path_bug_is_a_full_run_with_a_notice_for_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs, options, _ = _edited_sample(tmp_path)
    monkeypatch.setattr(generate_module, "_INCREMENTAL_FAILURE_HOOKS", [])  # as in production: no hook
    monkeypatch.setattr(incremental, "incremental_run", _broken_incremental)
    result = generate(inputs, options)
    assert result.mode == "full"
    reason = "the incremental path failed (TypeError: a bug in the incremental path)"
    assert result.explanations == (f"all ops: {reason}",)
    assert capsys.readouterr().err == f"vtgen-build: note: {reason}; regenerating everything\n"
    monkeypatch.undo()  # the suite's strict hook again
    assert generate(inputs, options).mode == "up-to-date"  # the full run left a consistent directory


_SOURCES = (
    "packaged/autograd/gen_trace_type.py",
    "packaged/autograd/gen_variable_type.py",
    "packaged/autograd/gen_inplace_or_view_type.py",
    "api/autograd.py",
    "packaged/ATen/native/tags.yaml",
    "packaged/ATen/native/native_functions.yaml",
    "packaged/autograd/derivatives.yaml",
)


def _generator_sources(dest: Path, source: Path | None = None) -> Path:
    """A torchgen tree holding only the generator sources and yaml we read (no torch/version.py beside it)."""
    torchgen = pytest.importorskip("torchgen")
    source = source or Path(torchgen.__file__).parent
    for rel in _SOURCES:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, dest / rel)
    return dest


@pytest.mark.parametrize(
    ("statement", "name"),
    [
        ('DONT_REQUIRE_DERIVATIVE.add("my_op")', "DONT_REQUIRE_DERIVATIVE"),
        ('DONT_REQUIRE_DERIVATIVE |= {"my_op"}', "DONT_REQUIRE_DERIVATIVE"),
        ("GRADIENT_IMPLEMENTED_FOR_COMPLEX = set(compute_the_names())", "GRADIENT_IMPLEMENTED_FOR_COMPLEX"),
    ],
    ids=["add", "augmented", "call"],
)
def test_a_statement_changing_a_read_list_that_cannot_be_evaluated_is_a_located_error(
    tmp_path: Path, statement: str, name: str
) -> None:
    root = _generator_sources(tmp_path / "torchgen")
    module = root / "packaged/autograd/gen_variable_type.py"
    text = module.read_text(encoding="utf-8")
    module.write_text(text + f"\n{statement}\n", encoding="utf-8")
    line = len((text + "\n").splitlines()) + 1
    with pytest.raises(VtgenError) as info:
        read_policy_sources(str(root))
    assert info.value.location == Location(str(module), line)
    assert f"cannot evaluate this statement, which changes {name}" in info.value.message


def test_release_is_inferred_from_the_generator_sources_or_the_guess_is_announced(
    tmp_path: Path, run_cli: CliRunner
) -> None:
    root = _generator_sources(tmp_path / "torchgen")  # 2.13's sources, no version file
    target = resolve_target(None, None, str(root))
    assert (target.release, target.warning) == ("2.13", None)
    assert target.source == f"the generator sources under {root} (PyTorch 2.13's lists)"
    module = root / "packaged/autograd/gen_variable_type.py"
    module.write_text(module.read_text(encoding="utf-8") + '\nDONT_REQUIRE_DERIVATIVE.update({"new_op"})\n')
    target = resolve_target(None, None, str(root))  # lists of no known release: a newer one?
    assert (target.release, target.source) == ("2.13", "default (a guess)")
    result = run_cli("inspect", "--pytorch-root", str(root))
    assert result.code == 0, result.err
    assert result.err == f"vtgen-build: warning: {target.warning}\n"
    assert "generator sources matching no known release (2.13, 2.14): generating for PyTorch 2.13; say which" in (
        result.err
    )
    assert run_cli("inspect", "--pytorch-root", str(root), "--torch-version", "2.14").err == ""


class _Sample:
    def __init__(self, tensor: object) -> None:
        self.input, self.args, self.kwargs, self.broadcasts_input = tensor, (), {}, False

    def output_process_fn_grad(self, out: object) -> object:
        return out


class _InplaceOp:
    """What the child reads of an OpInfo, for an in-place op: ``throws`` says where it fails."""

    gradcheck_fast_mode = None
    gradcheck_nondet_tol = 0.0

    def __init__(self, throws: str) -> None:
        self.throws = throws

    def inplace_variant(self, t: Any) -> Any:
        import torch

        below_autograd = torch._C._dispatch_tls_is_dispatch_key_excluded(torch._C.DispatchKey.AutogradFunctionality)
        if self.throws == "always" or (self.throws == "in our kernel" and not below_autograd):
            raise RuntimeError(f"throws {self.throws}")
        return t.mul_(2)

    def gradcheck_wrapper(self, op: Any, *args: Any, **kwargs: Any) -> Any:
        return op(*args, **kwargs)

    def sample_inputs(self, device: str, dtype: Any, requires_grad: bool) -> list[_Sample]:
        import torch

        return [_Sample(torch.randn(3, dtype=dtype, requires_grad=requires_grad)) for _ in range(2)]


class _NoCounters:
    def snapshot(self) -> list[int]:
        return []

    def entered(self, before: list[int]) -> set[str]:
        return set()


@pytest.mark.parametrize(
    ("throws", "expected"),
    [
        ("in our kernel", {"status": "failed", "sample": 0, "message": "throws in our kernel", "positions": (0,)}),
        ("always", {"status": "not run", "why": "no usable sample"}),  # the op itself cannot take them
        ("never", {"status": "passed", "samples": 2}),
    ],
)
def test_an_inplace_kernel_that_throws_on_every_sample_fails(throws: str, expected: dict[str, object]) -> None:
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child import child
    from vtgen_build.gradcheck_child.rows import Check

    result = child._check(_InplaceOp(throws), "backward", "inplace", torch.float64, 0, _NoCounters(), set())
    assert result == Check("backward", "inplace", dtype="float64", **expected)  # type: ignore[arg-type]


def test_unreadable_result_lines_fail_the_report(tmp_path: Path) -> None:
    from vtgen_build.gradcheck.records import entries_of, read_rows
    from vtgen_build.gradcheck.report import Report

    results = tmp_path / "results.jsonl"
    passed = {"entry": "sin", "checks": []}
    results.write_text(f'{{"start": "sin"}}\n{json.dumps(passed)}\nnot json\n[1, 2]\n{{"start": "co', encoding="utf-8")
    rows = read_rows(results)
    assert rows == [
        {"start": "sin"},
        passed,
        {"entry": "results.jsonl:3", "unreadable": "not json"},
        {"entry": "results.jsonl:4", "unreadable": "[1, 2]"},
    ]  # the torn last line (the child died writing it) is left to the crash handling
    report = Report.from_results(entries_of(rows), [], {}, {}, None, 0.0)
    assert not report.ok
    assert [str(f) for f in report.failures] == [
        "vtgen-build: error: unreadable result line results.jsonl:3 of the gradcheck process: 'not json'",
        "vtgen-build: error: unreadable result line results.jsonl:4 of the gradcheck process: '[1, 2]'",
    ]


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ({"entry": "sin", "checks": [{"kind": "backward", "status": 3}]}, "status: 3 is not a string"),
        ({"entry": "sin", "checks": "all passed"}, "checks: 'all passed' is not a list"),
        ({"entry": "sin", "checks": [{"kind": "backward", "status": "passed", "ours_ran": "yes"}]}, "ours_ran"),
        ({"entry": "sin", "direct": {"function": [1]}, "checks": []}, "direct.function: [1] is not a list of strings"),
        ({"entry": "sin", "checks": [{"kind": "backward", "status": "failed", "sample": True}]}, "sample: True"),
    ],
)
def test_a_result_row_of_the_wrong_shape_is_unreadable_and_fails_the_report(row: dict[str, object], why: str) -> None:
    from vtgen_build.gradcheck.records import entries_of
    from vtgen_build.gradcheck.report import Report

    (entry,) = entries_of([row])
    assert entry.name == "sin" and why in entry.unreadable and not entry.checks
    report = Report.from_results([entry], ["sin"], {}, {}, None, 0.0)
    assert not report.ok and "unreadable result line sin of the gradcheck process" in str(report.failures[0])
