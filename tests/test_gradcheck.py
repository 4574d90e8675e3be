"""``check --gradcheck`` and the torchlib room: caching, hidden-symbol analysis, reports, and a real run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import RealYaml
from vtgen_build.base.errors import Location
from vtgen_build.compile import identify
from vtgen_build.gradcheck.formulas import FormulaPlaces
from vtgen_build.gradcheck.records import entries_of
from vtgen_build.gradcheck.report import Report
from vtgen_build.torchlib import BuildSettings, TorchInstall, compile_objects, unlinkable_roots

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def _fake_torch(tmp: Path) -> TorchInstall:
    (tmp / "include").mkdir(exist_ok=True)
    return TorchInstall(sys.executable, "0.0", tmp, (tmp / "include",), tmp / "lib", True)


@needs_gxx
@pytest.mark.parametrize("flag", ["-I", "-isystem"])
def test_objects_are_cached_by_content(tmp_path: Path, flag: str) -> None:
    """Whatever flag finds a header (check passes the user's -I directories as -isystem), editing it recompiles."""
    (tmp_path / "h.h").write_text("inline int h() { return 1; }\n")
    compiler = identify(shutil.which("g++") or "g++")
    settings = BuildSettings(compiler, _fake_torch(tmp_path), tmp_path / "cache", extra_flags=(f"{flag}{tmp_path}",))
    units = [("a", '#include "h.h"\nint a() { return h(); }\n'), ("b", "int b() { return 2; }\n")]
    first = compile_objects(settings, units)
    assert [u.compiled for u in first] == [True, True] and all(u.object for u in first)
    assert [u.compiled for u in compile_objects(settings, units)] == [False, False]
    (tmp_path / "h.h").write_text("inline int h() { return 3; }\n")  # a header one unit reads
    again = compile_objects(settings, units)
    assert [u.compiled for u in again] == [True, False]
    assert again[0].digest != first[0].digest and again[1].digest == first[1].digest


@needs_gxx
def test_roots_reaching_hidden_torch_symbols_are_found(tmp_path: Path) -> None:
    source = tmp_path / "roots.cpp"
    source.write_text(
        "namespace torch::autograd::generated::details { double hidden(double); double shown(double); }\n"
        "namespace { double via(double x) { return torch::autograd::generated::details::hidden(x); } }\n"
        'extern "C" double root_direct(double x) { return torch::autograd::generated::details::hidden(x); }\n'
        'extern "C" double root_indirect(double x) { return via(x) + 1; }\n'
        'extern "C" double root_fine(double x) { return torch::autograd::generated::details::shown(x); }\n'
    )
    obj = tmp_path / "roots.o"
    flags = ["-c", "-O0", "-fPIC", "-ffunction-sections", "-fdata-sections"]
    subprocess.run(["g++", *flags, str(source), "-o", str(obj)], check=True)
    exported = frozenset({"_ZN5torch8autograd9generated7details5shownEd"})
    roots = {"root_direct": "direct", "root_indirect": "indirect", "root_fine": "fine", "root_absent": "absent"}
    found = unlinkable_roots([obj], roots, exported)
    assert sorted(found) == ["absent", "direct", "indirect"]
    assert found["indirect"].missing == ("torch::autograd::generated::details::hidden(double)",)
    assert found["absent"].missing == ()


def _places() -> dict[str, FormulaPlaces]:
    y = "derivatives.yaml"
    return {
        "xlogy.Tensor": FormulaPlaces(
            ("self", "other"),
            False,
            (),
            ((("self",), Location(y, 1007)), (("other",), Location(y, 1008))),
            (Location(y, 1009),),
            Location(y, 1006),
        )
    }


def _entry(status: str, kind: str, ours: bool, message: str = "") -> dict[str, object]:
    check = {
        "test": "t",
        "kind": kind,
        "variant": "function",
        "dtype": "float64",
        "status": status,
        "ours_ran": ours,
        "hit": ["xlogy.Tensor"] if ours else [],
        "sample": 2,
        "message": message,
        "positions": [0, 1],
    }
    return {"entry": "xlogy", "direct": {"function": ["xlogy.Tensor"], "inplace": []}, "checks": [check]}


def test_a_failure_is_reported_at_the_formula_of_its_input() -> None:
    message = "Jacobian mismatch for output 0 with respect to input 1, numerical:..."
    report = Report.from_results(
        entries_of([_entry("failed", "backward", True, message)]), ["xlogy.Tensor"], {}, _places(), None, 0
    )
    (failure,) = report.failures
    assert str(failure).startswith("derivatives.yaml:1008: error: gradcheck failed for xlogy (float64 sample 2)")
    assert "backward Jacobian mismatch for input 1" in str(failure)
    forward = Report.from_results(
        entries_of([_entry("failed", "forward", True, message)]), ["xlogy.Tensor"], {}, _places(), None, 0
    )
    assert str(forward.failures[0]).startswith("derivatives.yaml:1009: error:")
    assert forward.failed_ops == ["xlogy.Tensor"] and not forward.ok


def test_a_forward_failure_is_reported_at_the_formula_of_its_output() -> None:
    """`sincos -> (s, c)` with `s:` (line 3) and `c:` (line 4) forward formulas: a forward-mode
    mismatch of output 0 is `s:`'s line, of output 1 `c:`'s (the plan keeps them in either order)."""
    y = "derivatives.yaml"
    forward = (Location(y, 4), Location(y, 3))
    place = FormulaPlaces(("self",), False, (), ((("self",), Location(y, 2)),), forward, Location(y, 1),
                          forward_outputs=(("c",), ("s",)), returns=("s", "c"))  # fmt: skip
    places = {"xlogy.Tensor": place}
    for output, line in ((0, 3), (1, 4)):
        message = f"Jacobian computed with forward mode mismatch for output {output} with respect to input 0, ..."
        report = Report.from_results(
            entries_of([_entry("failed", "forward", True, message)]), ["xlogy.Tensor"], {}, places, None, 0
        )
        assert str(report.failures[0]).startswith(f"derivatives.yaml:{line}: error:"), report.failures


def test_a_pass_without_our_kernel_is_an_error() -> None:
    report = Report.from_results(
        entries_of([_entry("passed", "backward", False)]), ["xlogy.Tensor"], {}, _places(), None, 0
    )
    assert not report.ok and report.passed["backward"] == 0
    assert "never ran" in str(report.failures[0])
    passed = Report.from_results(
        entries_of([_entry("passed", "backward", True)]), ["xlogy.Tensor"], {}, _places(), None, 0
    )
    assert passed.ok and passed.passed["backward"] == 1 and passed.passed_ops == ["xlogy.Tensor"]


@pytest.mark.slow
@pytest.mark.torch
@needs_gxx
def test_gradcheck_of_sin_end_to_end(real_yaml: RealYaml, tmp_path: Path) -> None:
    """Build sin's and nansum's kernels against the installed torch, gradcheck them in a child, rerun cached.

    nansum's formula calls ``nansum_backward``, which libtorch hides: it is bound from libtorch's
    symbol table, and left out (listed, with the reason) when binding is off.
    """
    args = [
        "check",
        "--pytorch-root",
        str(real_yaml.torchgen_dir),
        "--out",
        str(tmp_path),
        "--gradcheck",
        "--op",
        "sin",
        "--op",
        "nansum",
    ]
    run = subprocess.run([sys.executable, "-m", "vtgen_build", *args], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "calling 1 helpers libtorch hides, bound from its symbol table" in run.stdout
    assert "passed backward 2, forward-AD 2, gradgrad 2, forward-over-reverse 2; failed 0" in run.stdout
    assert "testing an op of ours directly: backward 2, forward-AD 2, gradgrad 2, forward-over-reverse 2" in run.stdout
    assert "ops: passed 3, failed 0, not run 2" in run.stdout  # sin, sin_, nansum ran; out= overloads: no OpInfo
    rows = [json.loads(line) for line in (tmp_path / ".vtgen-gradcheck/results.jsonl").read_text().splitlines()]
    checks = [c for r in rows if r.get("entry") == "sin" for c in r["checks"] if c["status"] == "passed"]
    assert {c["variant"] for c in checks} == {"function", "inplace"}
    assert all(c["ours_ran"] and c["hit"] for c in checks)  # our kernels' counters moved
    summed = [c for r in rows if r.get("entry") == "nansum" for c in r["checks"] if c["status"] == "passed"]
    assert summed and all(c["hit"] == ["nansum"] for c in summed)
    (lib,) = tmp_path.glob(".vtgen-gradcheck/cache/*/libvtgen_gradcheck.so")
    marker = tmp_path / "constructor-ran"  # a library with a constructor planted where the cached one was
    planted = tmp_path / "planted.cpp"
    planted.write_text('#include <cstdio>\n__attribute__((constructor)) static void f() { std::fopen(MARKER, "w"); }\n')
    subprocess.run(["g++", "-shared", "-fPIC", f'-DMARKER="{marker}"', str(planted), "-o", str(lib)], check=True)
    again = subprocess.run([sys.executable, "-m", "vtgen_build", *args], capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "0 compiled now, linked" in again.stdout, again.stdout + again.stderr
    assert not marker.exists()  # relinked: the planted library never ran
    unbound = [*args, "--no-bind-hidden"]
    off = subprocess.run([sys.executable, "-m", "vtgen_build", *unbound], capture_output=True, text=True, check=False)
    assert off.returncode == 3, off.stdout + off.stderr  # nansum left unverified: a distinct status
    assert "not run: nansum: needs symbols libtorch does not export: " in off.stderr
    assert "  not verified: nansum: our kernel could not be built into the library (needs symbols" in off.stderr
    assert "nansum_backward(" in off.stderr and "binding hidden helpers is off" in off.stderr


def test_a_batching_failure_is_reported_at_its_inputs_formula_and_says_the_values_are_right() -> None:
    row = _entry("failed", "backward", True, "While computing batched gradients, got: vmap: aten::add_(self) ...")
    check = row["checks"][0]  # type: ignore[index]
    check.update(batched=True, input=1)
    report = Report.from_results(entries_of([row]), ["xlogy.Tensor"], {}, _places(), None, 0)
    (failure,) = report.failures
    assert str(failure).startswith("derivatives.yaml:1008: error: gradcheck failed for xlogy (float64 sample 2): ")
    assert "batching failure of the backward formula for input 1 under vmap (its values are right)" in str(failure)
    assert "vmap: aten::add_" in str(failure) and "Jacobian mismatch" not in str(failure)


def test_only_a_failure_of_the_batched_part_is_a_batching_failure() -> None:
    from vtgen_build.gradcheck_child.batching import BatchingFailure, run_batched

    calls: list[bool] = []

    def failing_batched(on: bool) -> None:
        calls.append(on)
        if on:
            raise RuntimeError(
                "For output 0 and input 2:\n\ngradcheck or gradgradcheck failed while testing batched gradient "
                "computation."
            )

    with pytest.raises(BatchingFailure) as caught:
        run_batched(failing_batched, True, lambda: None)
    assert calls == [True, False] and caught.value.input == 2  # the values rerun without it, and passed
    assert str(caught.value) == "For output 0 and input 2:"  # PyTorch's message, without its advice

    def wrong_values(on: bool) -> None:
        raise RuntimeError("Jacobian mismatch for output 0 with respect to input 0")

    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        run_batched(wrong_values, True)
    run_batched(lambda on: None, False)  # off: nothing batched asked


def test_an_op_vmap_cannot_run_is_checked_unbatched() -> None:
    """A library's view op has no batching rule (and no vmap fallback): its forward-AD values are still
    checked, without the batched part, as an OpInfo turns it off; not 'not run', not a batching failure."""
    from vtgen_build.gradcheck_child.batching import run_batched

    calls: list[bool] = []

    def no_rule(on: bool) -> None:
        calls.append(on)
        if on:
            raise RuntimeError(
                "While computing batched gradients, got: Batching rule not implemented for vtsample::swap_dims; "
                "the fallback path doesn't work on out= or view ops. gradcheck failed while testing batched "
                "gradient computation."
            )

    run_batched(no_rule, True)
    assert calls == [True, False]


def test_a_view_functions_batched_forward_part_is_a_note() -> None:
    """torch's custom Function refuses a batched tangent of a view output (the Python tier's view ops): the
    values are checked unbatched and the check carries a note saying its batched forward part could not run."""
    from vtgen_build.gradcheck_child.batching import run_batched

    calls: list[bool] = []

    def refused(on: bool) -> None:
        calls.append(on)
        if on:
            raise RuntimeError(
                "While computing batched gradients, got: A custom Function's forward is returning a view (or an "
                "input as-is) but the jvp is not returning a view. gradcheck failed while testing batched gradient"
            )

    note = run_batched(refused, True)
    assert calls == [True, False] and "batched (vmap) forward part could not run" in note
    assert run_batched(lambda on: None, True) == ""
