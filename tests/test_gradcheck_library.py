"""``check --gradcheck --library``: an op library's own ops, on samples made from their schemas.

The slow tests reuse conftest's ``torch_tree`` (the sample op library built once against the
real torch): its ctest test (``vtgen_add_gradcheck_test`` in sample_project/CMakeLists.txt)
verifies every differentiable op; a dropped factor in a formula is caught at its line in
tests/test_sample_runtime.py's wrong-formula build (no build of its own here).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vtgen_build.gradcheck.records import entries_of
from vtgen_build.gradcheck.report import Report

from .conftest import SAMPLE, CliRunner, TorchTree, run_clean, sample_inputs

HINTS = SAMPLE / "sample_hints.yaml"
# The differentiable ops of the torch_tree copy: the sample's 8 functional ops, 2 in-place, 2 out=,
# and tests/packages/op_library's view op narrow_last, its two `-> ()` mutating ops cube_ and mix_,
# and its structured cubic with cubic.out.
VERIFIED = 17


def library_check(tree: TorchTree, *extra: str, package: Path | None = None) -> tuple[int, str]:
    """``check --gradcheck --library`` of the tree's built library (or of ``package``, a directory on
    PYTHONPATH whose import loads it), in a fresh process."""
    library = package.name if package else str(tree.library)
    args = [sys.executable, "-m", "vtgen_build", "check", *sample_inputs(tree.source)]
    args += ["--out", str(tree.binary / "gradcheck-out"), "--gradcheck", "--library", library]
    args += ["--hints", str(tree.source / "sample_hints.yaml"), *extra]
    if package is None:
        return run_clean(args, tree.binary)
    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    done = subprocess.run(args, cwd=tree.binary, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout


def test_a_wrong_op_name_says_did_you_mean_among_the_librarys_ops(run_cli: CliRunner, tmp_path: Path) -> None:
    fake = tmp_path / "lib.so"
    fake.write_bytes(b"")  # never loaded: the name is checked first
    base = [*sample_inputs(), "--out", str(tmp_path / "out"), "--gradcheck", "--library", str(fake)]
    result = run_cli("check", *base, "--hints", str(HINTS), "--op", "vtsample::softsine")
    assert result.code == 1
    assert "error: --op vtsample::softsine: the library has no differentiable op of that name; " in result.err
    assert "did you mean 'vtsample::softsign'?" in result.err
    assert "no op with an Autograd kernel selected" not in result.err
    result = run_cli("check", *base, "--op", "tile_too")
    assert result.code == 1 and "did you mean 'tile_to'?" in result.err


def test_a_missing_library_is_an_error(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli("check", *sample_inputs(), "--out", str(tmp_path), "--gradcheck", "--library", "no/lib.so")
    assert result.code == 1 and "error: --library no/lib.so: no such file (build the library first)" in result.err


@pytest.mark.slow
@pytest.mark.torch
def test_ctest_verifies_every_differentiable_op(torch_tree: TorchTree) -> None:
    code, log = torch_tree.build()
    assert code == 0, log
    code, log = run_clean(["ctest", "--test-dir", torch_tree.binary, "-R", "vtgen_gradcheck", "-V"], torch_tree.binary)
    assert code == 0, log
    assert f"ops: passed {VERIFIED}, failed 0, not run 0" in log and f"OK: {VERIFIED} ops verified" in log, log
    schema = "ops checked on samples made from their schema: "
    schema += "12; passed backward 12, forward-AD 9, gradgrad 12; failed 0"
    assert schema in log, log


@pytest.mark.slow
@pytest.mark.torch
def test_op_names_with_and_without_the_namespace(torch_tree: TorchTree) -> None:
    code, log = torch_tree.build()
    assert code == 0, log
    package = torch_tree.binary / "gradcheck-package" / "vtsample_loader"
    package.mkdir(parents=True, exist_ok=True)
    loads = f"import torch\ntorch.ops.load_library({str(torch_tree.library)!r})\n"
    (package / "__init__.py").write_text(loads, encoding="utf-8")
    # one run: both spellings of --op, and --library naming a package whose import loads the library
    code, log = library_check(torch_tree, "--op", "vtsample::affine", "--op", "tile_to", package=package)
    assert code == 0, log
    assert log.strip().endswith("ops: passed 2, failed 0, not run 0\nOK: 2 ops verified"), log


@pytest.mark.slow
@pytest.mark.torch
def test_every_op_of_the_built_library_passes(torch_tree: TorchTree) -> None:
    """--library with every op selected, as a CI job runs it: exit 0, each out= variant verified through our
    generated (C++) Autograd kernel, none said to have no kernel of ours."""
    code, log = torch_tree.build()
    assert code == 0, log
    code, log = library_check(torch_tree)
    assert code == 0, log
    assert log.strip().endswith(f"ops: passed {VERIFIED}, failed 0, not run 0\nOK: {VERIFIED} ops verified"), log


@pytest.mark.slow
@pytest.mark.torch
def test_library_ops_without_library_say_how(run_cli: CliRunner, tmp_path: Path) -> None:
    """The sample's ops are not in the installed torch: the message names --library (no build is tried)."""
    pytest.importorskip("torch")
    result = run_cli("check", *sample_inputs(), "--out", str(tmp_path), "--gradcheck", "--op", "vtsample::softsign")
    assert result.code == 1
    assert "the installed torch has none of the selected vtsample:: ops" in result.err and "--library" in result.err
    assert "no op with an Autograd kernel selected" not in result.err and "did you mean" not in result.err


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--coverage", "cov.json"], "--coverage cannot be used with --library: it reports which formulas"),
        (["--max-samples", "2"], "--max-samples cannot be used with --library"),
        (["--changed"], "--changed cannot be used with --library"),
        (["--no-bind-hidden"], "--no-bind-hidden cannot be used with --library"),
    ],
)
def test_an_option_library_runs_would_ignore_is_an_error(
    run_cli: CliRunner, tmp_path: Path, option: list[str], says: str
) -> None:
    """--coverage FILE with --library once wrote no file and exited 0: refused, before anything runs."""
    fake = tmp_path / "lib.so"
    fake.write_bytes(b"")
    result = run_cli("check", *sample_inputs(), "--out", str(tmp_path / "out"), "--gradcheck", "--library",
                     str(fake), *option)  # fmt: skip
    assert result.code == 1 and f"error: {says}" in result.err, result.err
    assert not (tmp_path / "cov.json").exists() and not (tmp_path / "out" / ".vtgen-gradcheck").exists()


def test_timeout_is_checked(run_cli: CliRunner, tmp_path: Path) -> None:
    base = [*sample_inputs(), "--out", str(tmp_path / "out")]
    result = run_cli("check", *base, "--gradcheck", "--library", "x.so", "--timeout", "0")
    assert result.code == 1 and "--timeout must be between 1 and 86400 seconds, got 0" in result.err
    result = run_cli("check", *base, "--timeout", "5")
    assert result.code == 1 and "--timeout applies to --gradcheck only" in result.err


def _out_verdict(register_out_autograd: bool) -> Report:
    """The out= check of a two-op library defined here through torch.library (no counters, no generated
    Autograd kernel of the out= op: ``register_out_autograd`` gives it another one), run as ``--library``
    runs it, and the report built as ``run_library`` builds it."""
    import torch

    from vtgen_build.gradcheck.schema_run import _without_kernel
    from vtgen_build.gradcheck_child import schema_child
    from vtgen_build.gradcheck_child.protocol import ArgSample, Entry, OpSamples

    name = f"vtoutk{int(register_out_autograd)}"
    lib = torch.library.Library(name, "DEF")
    lib.define("twice(Tensor self) -> Tensor")
    lib.define("twice.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)")
    lib.impl("twice", lambda x: x * 2, "CPU")
    lib.impl("twice.out", lambda x, *, out: out.copy_(x * 2), "CPU")
    if register_out_autograd:  # an Autograd kernel that is not a generated one: ours never ran
        lib.impl("twice.out", lambda x, *, out: torch.ops.aten.mul.out(x, 2, out=out), "Autograd")
    spec = ArgSample("self", "tensor", (3,), dtype="float")
    entry = OpSamples("twice", name, None, None, None, "twice.out", ((spec,),), ("float64",), False, out_args=("out",))
    check = schema_child._out_check(torch, entry, None, lambda where: None)  # type: ignore[arg-type]
    direct = (("function", ("twice",)), ("inplace", ()), ("out", ("twice.out",)))
    records = [Entry("twice (schema samples)", (check,), direct, aten="twice", schema=True)]
    report = Report.from_results(records, ["twice.out"], {}, {}, None, 0.0)
    report.no_kernel = _without_kernel(records)
    return report


@pytest.mark.torch
def test_an_out_variant_without_an_autograd_kernel_is_said_apart_not_failed() -> None:
    """A stable library's Python autograd registers nothing for an out= variant: "our kernel never ran" can
    never be met there, and --library failed the run on it (sample_stable, every release). Said as such, not
    passed; an out= variant that does have an Autograd kernel whose run is not proven ours still fails."""
    pytest.importorskip("torch")
    said = _out_verdict(register_out_autograd=False)
    assert said.ok and not said.failures and said.passed_ops == [], said.render()
    assert said.no_kernel == [("twice.out", "the library registers no Autograd kernel for it (autograd refuses an "
                                            "out= variant anyway)")]  # fmt: skip
    assert "  no autograd kernel of ours: twice.out: the library registers no Autograd" in said.render()
    failed = _out_verdict(register_out_autograd=True)
    assert not failed.ok and failed.no_kernel == [], failed.render()
    assert "schema_out passed but our kernel of twice.out never ran" in str(failed.failures[0])


def test_without_namespace_library_ops_are_not_looked_up_in_aten(run_cli: CliRunner, tmp_path: Path) -> None:
    """No --namespace: the ops were looked up in aten, each an AttributeError reported as a sample error
    (exit 3). Now one error saying what to pass, before anything runs."""
    args = sample_inputs()
    at = args.index("--namespace")
    del args[at : at + 2]
    fake = tmp_path / "lib.so"
    fake.write_bytes(b"")
    for library, guess in ((str(fake), "e.g. --namespace mylib"), ("vtsample", "e.g. --namespace vtsample")):
        result = run_cli("check", *args, "--out", str(tmp_path / "out"), "--gradcheck", "--library", library)
        assert result.code == 1, result.err
        assert result.err.startswith("vtgen-build: error: --library: the ops would be looked up in namespace 'aten'")
        assert "pass the namespace the library registers its ops in" in result.err and guess in result.err
        assert "Traceback" not in result.err and not (tmp_path / "out" / ".vtgen-gradcheck").exists()


def _func_report(verdict: str) -> Report:
    """One op's schema-sample entry whose torch.func row holds one check with ``verdict`` beside passing ones."""
    check = {"test": "schema_grad", "kind": "backward", "variant": "function", "dtype": "float64",
             "status": "passed", "samples": 1, "ours_ran": True, "hit": ["mul2"]}  # fmt: skip
    func = {
        "op": "mul2",
        "vmap": "rule",
        "sample": 0,
        "checks": [["vmap", verdict, "the detail"], ["grad", "ok", "equal"], ["jvp", "n/a", "no forward formula"]],
    }
    row = {"entry": "mul2 (schema samples)", "aten": "mul2", "direct": {"function": ["mul2"]}, "checks": [check],
           "schema": True, "func": [func]}  # fmt: skip
    return Report.from_results(entries_of([row]), ["mul2"], {}, {}, None, 0.0)


def test_torch_func_checks_are_reported_per_op_and_only_a_failed_one_fails_the_run() -> None:
    """check --gradcheck --library runs torch.func over each op (gradcheck_child/transforms.py): one table row
    per op; n/a (no forward formula) and "no rule" (PyTorch's loop cannot run the op) are said, never failures;
    a FAIL (a wrong batching rule) fails the run at its op."""
    for verdict in ("ok", "no rule"):
        report = _func_report(verdict)
        text = report.render()
        assert report.status == 0 and report.passed_ops == ["mul2"], text
        assert f"  | mul2 | rule | {verdict} | ok | - | n/a | - | - | - | - | - | - |" in text, text
        assert "  n/a: mul2: jvp: no forward formula" in text, text
    report = _func_report("FAIL")
    assert report.status == 1 and report.failed_ops == ["mul2"], report.render()
    (failure,) = report.failures
    assert str(failure).startswith("vtgen-build: error: torch.func vmap of mul2 (vmap through its generated batching "
                                   "rule; float64 sample 0) failed: the detail"), failure  # fmt: skip
    assert "torch.func: 1 ops; 1 ok, 1 FAIL, 1 n/a" in report.render()


@pytest.mark.torch
def test_an_op_with_a_rule_is_vmapped_with_the_fallback_off() -> None:
    """A FuncTorchBatched kernel is taken as the op's rule: vmap runs with PyTorch's fallback loop off, so a
    "rule" that leaves the op to the loop (a kernel batching nothing) fails; without a rule the loop is the
    answer."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child.transforms import transform_checks

    lib = torch.library.Library("vtgen_test_loop", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
    x = torch.randn(3, dtype=torch.float64)
    try:
        verdicts = {ruled: dict((c, v) for c, v, _ in transform_checks(torch.ops.vtgen_test_loop.twice, (x,), ruled))
                    for ruled in (False, True)}  # fmt: skip
    finally:
        lib._destroy()
    assert verdicts[False]["vmap"] == "ok" and verdicts[True]["vmap"] == "FAIL", verdicts


def _func_rows(*cases: tuple[int, str]) -> Report:
    """One op's schema-sample entry whose torch.func table has a row per (sample, case)."""
    check = {"test": "schema_grad", "kind": "backward", "variant": "function", "dtype": "float64",
             "status": "passed", "samples": 2, "ours_ran": True, "hit": ["lin"]}  # fmt: skip
    func = [{"op": "lin", "vmap": "fallback", "sample": i, "case": case, "checks": [["vmap", "ok", "equal"]]}
            for i, case in cases]  # fmt: skip
    row = {"entry": "lin (schema samples)", "aten": "lin", "direct": {"function": ["lin"]}, "checks": [check],
           "schema": True, "func": func}  # fmt: skip
    return Report.from_results(entries_of([row]), ["lin"], {}, {}, None, 0.0)


def test_an_op_with_several_samples_gets_a_torch_func_row_per_sample() -> None:
    """Each float64 sample the op takes is its own row, named by what it passes (``bias=None``); an op with one
    sample keeps its plain row."""
    text = _func_rows((0, "x: 3, b=None"), (1, "x: 3, b: 3")).render()
    assert "  | lin (x: 3, b=None) | fallback | ok |" in text and "  | lin (x: 3, b: 3) | fallback | ok |" in text, text
    assert "torch.func: 1 ops, 2 samples; 2 ok" in text, text
    text = _func_rows((0, "x: 3")).render()
    assert "  | lin | fallback | ok |" in text and "torch.func: 1 ops; 1 ok" in text, text


@pytest.mark.slow  # its first torch.func transforms and assert_close import much of torch (~6 s alone, 20 s in CI)
@pytest.mark.torch
def test_torch_func_runs_on_every_float64_sample_the_op_takes() -> None:
    """gradcheck_child.schema_child.func_checks: one row per sample the op takes (an optional tensor absent and
    present), a sample it rejects left out."""
    torch = pytest.importorskip("torch")
    from vtgen_build.gradcheck_child.schema_child import func_checks

    lib = torch.library.Library("vtgen_test_rows", "DEF")
    lib.define("lin(Tensor x, Tensor? b=None) -> Tensor")
    lib.impl("lin", lambda x, b=None: x * 2 if b is None else x * 2 + b, "CompositeImplicitAutograd")

    from vtgen_build.gradcheck_child.protocol import ArgSample, OpSamples

    def tensor(name: str, size: int) -> ArgSample:
        return ArgSample(name, "tensor", (size,), dtype="float64", grad=True)

    absent = ArgSample("b", "value")
    samples = ((tensor("x", 3), absent), (tensor("x", 3), tensor("b", 3)), (tensor("x", 3), tensor("b", 2)))
    entry = OpSamples("lin", "vtgen_test_rows", None, None, None, None, samples, ("float64",), False, outputs=(0,))
    try:
        rows = func_checks(torch, entry, "function", lambda _: None)  # type: ignore[arg-type]
    finally:
        lib._destroy()
    assert [(r.sample, r.case) for r in rows] == [(0, "x: 3, b=None"), (1, "x: 3, b: 3")], rows
    assert all(v == "ok" for r in rows for c, v, _ in r.checks if c in ("vmap", "grad", "jacrev")), rows
