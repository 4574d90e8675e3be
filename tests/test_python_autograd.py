"""The generated Python autograd (``generate --python-autograd``) in real torch processes.

The vehicle is tests/packages/py_autograd: an op library whose kernels carry no autograd
(Python CPU kernels defined from its native_functions.yaml through torch.library, standing in
for a stable-ABI ``.so``), with the generated module registered on top.  Checked: gradcheck and
gradgradcheck (float64) of every op and variant, forward AD, the mutating ops' history, versions
and errors, ``not_implemented``, opcheck's autograd-registration test, ``torch.compile``
(Inductor) equal to eager, and ``check --gradcheck --library`` failing at the yaml line of a
sign flip, a wrong input and a wrong double backward of a helper op, in two torch releases.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.conftest import release_python_or_skip

if TYPE_CHECKING:
    from tests.conftest import CliRunner

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tests" / "packages" / "py_autograd"
GOLDEN = Path(__file__).parent / "golden" / "python_autograd_pyag.txt"
OTHER_RELEASE = "2.10.0"  # the stable floor: a second torch the generated module must work with

pytest.importorskip("torch")


def _generate(pkg: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "vtgen_build",
        "generate",
        "--native-functions", str(pkg / "native_functions.yaml"),
        "--derivatives", str(pkg / "derivatives.yaml"),
        "--namespace", "pyag",
        "--out", str(pkg / "out"),
        "--python-autograd", str(pkg / "pyag" / "_autograd.py"),
        "--python-formulas", str(pkg / "pyag" / "formulas.py"),
    ], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _copy(dest: Path) -> Path:
    pkg = dest / "py_autograd"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("_autograd.py", "__pycache__", "out"))
    _generate(pkg)
    return pkg


TRANSFORMS = ROOT / "vtgen_build" / "gradcheck_child" / "transforms.py"


def _checks(pkg: Path, *groups: str) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, str(pkg / "checks.py"), str(pkg), *groups],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "VTGEN_TRANSFORMS": str(TRANSFORMS)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _copy(tmp_path_factory.mktemp("pyag"))


@pytest.fixture(scope="module")
def results(package: Path) -> list[dict[str, object]]:
    return _checks(package, "grad", "forward", "mutating", "errors", "opcheck", "vmap_paths", "func")


def _failed(results: list[dict[str, object]]) -> list[str]:
    return [f"{r['op']}: {r['check']}: {r['detail']}" for r in results if not r["ok"]]


def test_golden_module(package: Path, update_golden: bool) -> None:
    text = (package / "pyag" / "_autograd.py").read_text()
    if update_golden:
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), f"{GOLDEN.name} differs: review, then rerun with --update-golden"


def test_an_op_without_a_list_argument_builds_no_layout_per_call(package: Path) -> None:
    """An op with no Tensor[] argument: its kernel applies the Function with a literal layout and the arguments
    as they came, its forward and setup_context take them by name (no ``_flatten``/``_unflatten`` per call:
    bench_python_autograd.py); an op with one (``stack_mean``) still spreads the list."""
    text = (package / "pyag" / "_autograd.py").read_text()
    plain = text[text.index("class _scale_add(") : text.index('_lib.impl("scale_add", ')]
    assert "_flatten(" not in plain and "_unflatten(" not in plain
    assert "def forward(layout, self, other, alpha):" in plain and "_, self, other, alpha, = inputs" in plain
    assert "_scale_add_apply(((0, None), (1, None), (2, None),), self, other, alpha)" in plain
    listed = text[text.index("class _stack_mean(") : text.index('_lib.impl("stack_mean", ')]
    assert "def forward(layout, *flat):" in listed and "_stack_mean_apply(*_flatten((tensors, dim, ), (0,)))" in listed


def test_gradcheck_and_gradgradcheck_every_op(results: list[dict[str, object]]) -> None:
    grads = [r for r in results if r["check"] in ("gradcheck", "gradgradcheck")]
    ops = {str(r["op"]) for r in grads}
    assert {"softsign", "softsign_", "scale_add", "scale_add_", "topk_abs", "stack_mean", "affine", "mix_"} <= ops
    assert {"tile_to", "softsign_backward", "affine(bias=None)", "soft_quantize", "cube", "cube_"} <= ops
    assert len(grads) >= 23 and not _failed(grads)


def test_mutating_ops_rebase_history_bump_versions_and_refuse_as_torch_does(results: list[dict[str, object]]) -> None:
    mutating = [r for r in results if r["check"] not in ("gradcheck", "gradgradcheck", "opcheck autograd registration")]
    mutating = [r for r in mutating if r["op"] in ("softsign_", "scale_add_")]
    assert len(mutating) >= 4 and not _failed(mutating)


def test_not_implemented_names_the_yaml_and_forward_ad_runs(results: list[dict[str, object]]) -> None:
    errors = {(r["op"], r["check"]): r for r in results if r["op"] in ("soft_quantize", "softsign")}
    assert errors[("soft_quantize", "not_implemented raises")]["ok"]
    assert errors[("softsign", "forward AD")]["ok"]  # the tangent came through the translated jvp


def test_forward_ad_of_every_op_with_forward_formulas(results: list[dict[str, object]]) -> None:
    """Forward formulas run through each Function's jvp (a -> () op updates its tangent in place);
    an op without them refuses, naming its yaml entry, instead of dropping the tangent."""
    checked = {str(r["op"]) for r in results if r["check"] == "forward AD gradcheck"}
    assert {"softsign", "softsign_", "scale_add", "scale_add_", "topk_abs", "affine", "tile_to", "cube_"} <= checked
    refused = {str(r["op"]) for r in results if r["check"] == "forward AD refused"}
    assert {"stack_mean", "mix_", "softsign_backward"} <= refused
    forward = [r for r in results if str(r["check"]).startswith("forward AD")]
    assert not _failed(forward)


def test_opcheck_autograd_registration(results: list[dict[str, object]]) -> None:
    checked = [r for r in results if r["check"] == "opcheck autograd registration"]
    assert len(checked) == 6 and not _failed(checked)


def test_torch_func_transforms_equal_the_eager_loops(results: list[dict[str, object]]) -> None:
    """vmap, grad, vjp, jvp, jacrev, jacfwd, hessian, per-sample gradients, vmap(jvp) and vmap(vjp) of
    every op: the Functions have torch.func's form (forward without ctx, setup_context) and run at the
    level of the innermost transform.  n/a: forward mode of an entry without forward formulas (the
    refusal naming its yaml); "no rule": vmap of an op PyTorch's fallback refuses (-> (), Tensor[])."""
    found = [r for r in results if str(r["check"]).startswith("func ")]  # the shared process's func group
    assert len(found) == 14 * 10 and not _failed(found)
    verdicts = {(str(r["op"]), str(r["check"])[5:]): str(r["verdict"]) for r in found}
    for op in ("softsign", "scale_add", "topk_abs", "affine", "affine(bias=None)", "tile_to", "cube", "cube_"):
        missing = [
            c for c in ("vmap", "grad", "vjp", "jvp", "jacrev", "jacfwd", "vmap(grad)") if verdicts[(op, c)] != "ok"
        ]
        assert not missing, (op, missing)
    assert verdicts[("softsign", "hessian")] == "n/a"  # softsign_backward has no forward formula in pyag
    assert verdicts[("scale_add", "hessian")] == "ok" and verdicts[("cube", "hessian")] == "ok"
    refused = {(str(r["op"]), str(r["check"])) for r in found if r["verdict"] == "n/a"}
    assert all("derivatives.yaml:" in str(r["detail"]) for r in found if r["verdict"] == "n/a"), refused
    no_rule = {str(r["op"]) for r in found if r["verdict"] == "no rule"}
    assert no_rule == {"softsign_", "scale_add_", "mix_", "stack_mean"}


@pytest.mark.slow
def test_torch_compile_inductor_forward_and_backward_equal_eager(package: Path) -> None:
    found = _checks(package, "compile")
    assert found and not _failed(found)


def test_a_wrong_formula_fails_gradcheck(tmp_path: Path) -> None:
    """The checks can fail: a sign flipped in one formula fails that op's gradcheck, and only it."""
    pkg = _copy(tmp_path)
    yaml = pkg / "derivatives.yaml"
    yaml.write_text(yaml.read_text().replace("self: handle_r_to_c(self.scalar_type(), grad)", "self: -grad"))
    _generate(pkg)
    found = _checks(pkg, "grad")
    failed = {str(r["op"]) for r in found if not r["ok"]}
    assert failed == {"scale_add", "scale_add_"}


# --- view ops: carried by the Function; what PyTorch refuses is refused loudly -----------------
_VIEW_SCHEMA = "swap_dims(Tensor(a) self, int dim0, int dim1) -> Tensor(a)"
_VIEW_KERNEL = """

@_kernel("swap_dims")
def swap_dims(self, dim0, dim1):
    return self.transpose(dim0, dim1)
"""
_VIEW_CHECKS = """
import json, sys, torch
import torch.autograd.forward_ad as fwAD
sys.path.insert(0, sys.argv[1])
import pyag

op, found = torch.ops.pyag.swap_dims, {}
x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
found["gradcheck"] = torch.autograd.gradcheck(lambda a: op(a, 0, 1), (x,), raise_exception=False)
found["gradgradcheck"] = torch.autograd.gradgradcheck(lambda a: op(a, 0, 1), (x,), raise_exception=False)
y = op(x, 0, 1)
found["aliases"] = [y._base is x, y.grad_fn.name()]
with torch.no_grad():
    found["aliases_without_grad"] = op(x, 0, 1)._base is x
for written in ("view", "base"):
    a = x.clone()
    v = op(a, 0, 1)
    try:
        (v if written == "view" else a).mul_(2)
        v.sum().backward()
        found[f"inplace_on_{written}"] = "no error"
    except RuntimeError as exc:
        found[f"inplace_on_{written}"] = str(exc).split(".")[0]
with fwAD.dual_level():
    t = torch.randn(2, 3, dtype=torch.float64)
    d = fwAD.make_dual(torch.randn(2, 3, dtype=torch.float64), t)
    found["forward_ad"] = torch.equal(fwAD.unpack_dual(op(d, 0, 1)).tangent, t.transpose(0, 1))
print(json.dumps(found))
"""


def _with_view_op(tmp_path: Path, formula: str) -> Path:
    pkg = tmp_path / "py_autograd"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("_autograd.py", "__pycache__", "out"))
    with (pkg / "native_functions.yaml").open("a") as f:
        f.write(f"\n- func: {_VIEW_SCHEMA}\n")
    with (pkg / "derivatives.yaml").open("a") as f:
        f.write(f"\n- name: {_VIEW_SCHEMA}\n  self: {formula}\n  result: auto_linear\n")
    with (pkg / "pyag" / "kernels.py").open("a") as f:
        f.write(_VIEW_KERNEL)
    _generate(pkg)
    return pkg


def _view_checks(pkg: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", _VIEW_CHECKS, str(pkg)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_view_op_is_differentiated_and_inplace_through_it_is_refused(tmp_path: Path) -> None:
    """A view op (``Tensor(a) self -> Tensor(a)``) gets its Function like any functional op: its output
    is a view of the input (the kernel's alias, kept), backward, double backward and forward AD run the
    yaml's formulas.  An in-place write to the view or to its base afterwards is refused by PyTorch's
    own error for views made inside a custom Function (the classic mode rebases instead): never a
    silently wrong gradient.  A sign flip in the formula fails gradcheck."""
    found = _view_checks(_with_view_op(tmp_path / "right", "grad.transpose(dim0, dim1)"))
    assert found["gradcheck"] is True and found["gradgradcheck"] is True, found
    assert found["aliases"] == [True, "SwapDimsBackward0"] and found["aliases_without_grad"] is True, found
    assert found["forward_ad"] is True, found
    for written in ("view", "base"):
        message = found[f"inplace_on_{written}"]
        assert isinstance(message, str) and message.startswith("Output 0 of SwapDims is a view"), found
    wrong = _view_checks(_with_view_op(tmp_path / "wrong", "-grad.transpose(dim0, dim1)"))
    assert wrong["gradcheck"] is False, wrong


def test_tensor_list_return_is_refused_at_its_yaml_line(tmp_path: Path, run_cli: CliRunner) -> None:
    """A ``-> Tensor(a)[]`` op (split-like views, or any list return): an autograd.Function cannot
    return a list, so its elements would silently get no history: an error at the entry's line."""
    pkg = tmp_path / "py_autograd"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("_autograd.py", "__pycache__", "out"))
    schema = "halves(Tensor(a -> *) self) -> Tensor(a)[]"
    with (pkg / "native_functions.yaml").open("a") as f:
        f.write(f"\n- func: {schema}\n")
    derivatives = pkg / "derivatives.yaml"
    line = len(derivatives.read_text().splitlines()) + 2
    with derivatives.open("a") as f:
        f.write(f"\n- name: {schema}\n  self: at::cat(grads, 0)\n")
    args = ["--native-functions", str(pkg / "native_functions.yaml"), "--derivatives", str(derivatives)]
    args += ["--namespace", "pyag", "--python-formulas", str(pkg / "pyag" / "formulas.py")]
    result = run_cli("generate", *args, "--out", str(pkg / "out"), "--python-autograd", str(pkg / "pyag" / "_a.py"))
    message = f"{derivatives}:{line}: error: 'halves': the Python autograd cannot carry a Tensor[] return"
    assert result.code == 1 and result.err.startswith(message), result.err
    assert not (pkg / "pyag" / "_a.py").exists()
    result = run_cli("inspect", *args, "--op", "halves", "--python-autograd")
    assert result.code == 0 and "Python autograd: refused (" in result.out, result.out + result.err


def _vmap_group(pkg: Path) -> tuple[dict[tuple[str, str], bool], list[str]]:
    done = subprocess.run(
        [sys.executable, str(pkg / "checks.py"), str(pkg), "vmap"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    warned = [line for line in done.stderr.splitlines() if "BatchedFallback" in line]
    return {(str(r["op"]), str(r["check"])): bool(r["ok"]) for r in found}, warned


# `vmap: elementwise` in pyag's yaml; scale_add again with samples of two ranks (broadcast as one sample does)
RULED = ("softsign", "softsign_backward", "scale_add", "cube", "scale_add(ranks 2, 1)")


def test_generated_batching_rules_run_without_the_fallback_and_a_wrong_one_fails_at_its_op(
    package: Path, tmp_path: Path
) -> None:
    """``vmap: elementwise`` ops get a batching rule (the op's FuncTorchBatched kernel, registered by the
    generated module): vmap over dim 1 with an unbatched argument equals the loop with PyTorch's fallback turned
    off and prints no BatchedFallback warning; topk_abs (no rule) does warn, and raises without the
    fallback.  A wrong rule planted in the generated module fails at its op only."""
    found, warned = _vmap_group(package)
    for op in RULED:
        assert found[(op, "vmap equal to the loop")] and found[(op, "vmap without the fallback")], (op, found)
    assert found[("topk_abs", "vmap equal to the loop")] and not found[("topk_abs", "vmap without the fallback")]
    assert len(warned) == 1 and "pyag::topk_abs" in warned[0], warned
    bad = _copy(tmp_path)
    module = bad / "pyag" / "_autograd.py"
    right = "_elementwise_batched(torch.ops.pyag.softsign.default)"
    assert right in module.read_text()
    module.write_text(module.read_text().replace(right, "_elementwise_batched(torch.ops.pyag.cube.default)"))
    planted, _ = _vmap_group(bad)
    wrong = {op for (op, check), ok in planted.items() if check == "vmap equal to the loop" and not ok}
    assert wrong == {"softsign"}, planted


def test_the_rule_calls_the_kernel_straight_only_where_nothing_outside_vmap_would_see_it(
    results: list[dict[str, object]],
) -> None:
    """The generated rule skips functorch's return to the state outside vmap (and the op's Autograd kernel
    there) only under the outermost transform on plain inputs: an input requiring grad keeps its history, a
    conjugate input is conjugated, a dual tensor keeps its tangent, a dispatch mode sees the op, and nested in
    grad or vmap the outer transform still sees it."""
    paths = ("vmap of", "vmap under", "grad inside vmap", "vmap inside")
    found = [r for r in results if r["op"] == "softsign" and str(r["check"]).startswith(paths)]
    assert len(found) == 8 and not _failed(found), found


def test_inspect_says_which_ops_have_a_batching_rule(tmp_path: Path, run_cli: CliRunner) -> None:
    pkg = PACKAGE
    args = ["--native-functions", str(pkg / "native_functions.yaml"), "--derivatives", str(pkg / "derivatives.yaml")]
    args += ["--namespace", "pyag", "--python-formulas", str(pkg / "pyag" / "formulas.py"), "--python-autograd"]
    ruled = run_cli("inspect", *args, "--op", "softsign")
    assert ruled.code == 0 and "vmap batching rule: generated element-wise rule" in ruled.out, ruled.out + ruled.err
    fallback = run_cli("inspect", *args, "--op", "topk_abs")
    assert "vmap batching rule: none: PyTorch's vmap fallback" in fallback.out, fallback.out + fallback.err


def test_vmap_key_errors_are_located(tmp_path: Path, run_cli: CliRunner) -> None:
    """A misspelled ``vmap:`` kind, and ``vmap: elementwise`` on an op a rule cannot batch (a Tensor[]
    argument), are errors at the entry's line, not a traceback and not a silent fallback."""
    derivatives = tmp_path / "derivatives.yaml"
    derivatives.write_text("")
    for text, message in (
        ("- func: f(Tensor self) -> Tensor\n  vmap: elementwse\n", "'vmap' must be one of none, elementwise"),
        ("- func: g(Tensor[] xs) -> Tensor\n  vmap: elementwise\n", "'g': vmap: elementwise needs"),
    ):
        native = tmp_path / "native_functions.yaml"
        native.write_text(text)
        result = run_cli(
            "generate", "--native-functions", str(native), "--derivatives", str(derivatives), "--namespace", "pv",
            "--out", str(tmp_path / "out"), "--python-autograd", str(tmp_path / "_a.py"),
        )  # fmt: skip
        assert result.code == 1 and f"{native}:" in result.err and message in result.err, result.err
        assert "Traceback" not in result.err


def test_a_pointwise_op_a_rule_cannot_batch_keeps_the_fallback(tmp_path: Path, run_cli: CliRunner) -> None:
    """The ``pointwise`` tag alone on an op with a list argument is no error (an existing yaml keeps
    generating): that op keeps PyTorch's vmap fallback; the tagged op a rule can batch gets one."""
    (tmp_path / "derivatives.yaml").write_text("- name: h(Tensor self) -> Tensor\n  self: grad\n")
    native = tmp_path / "native_functions.yaml"
    native.write_text("- func: h(Tensor self) -> Tensor\n  tags: pointwise\n"
                      "- func: g(Tensor[] xs) -> Tensor\n  tags: pointwise\n")  # fmt: skip
    module = tmp_path / "_a.py"
    result = run_cli(
        "generate", "--native-functions", str(native), "--derivatives", str(tmp_path / "derivatives.yaml"),
        "--namespace", "pv", "--out", str(tmp_path / "out"), "--python-autograd", str(module),
    )  # fmt: skip
    assert result.code == 0, result.err
    text = module.read_text()
    assert '_lib.impl("h", _elementwise_batched(' in text and '_lib.impl("g", _elementwise_batched(' not in text


# --- check --gradcheck --library: failures at their yaml line, in two torch releases ---------

BREAKS = {
    "sign flip": ("derivatives.yaml", "self: softsign_backward(grad, self)", "self: -softsign_backward(grad, self)"),
    "wrong input": (  # mix_'s gradient for other reads other where it needs self
        "derivatives.yaml",
        'other: "grads[0].defined() && grads[1].defined() ? grads[0] * alpha + grads[1] * self.conj()',
        'other: "grads[0].defined() && grads[1].defined() ? grads[0] * alpha + grads[1] * other.conj()',
    ),
    "wrong double backward of a helper op": (
        "pyag/formulas.py",
        "return grad * grad_output * -2 * torch.sign(self)",
        "return grad * grad_output * 2 * torch.sign(self)",
    ),
}
# the yaml line each break must be reported at: the formula that is wrong, or that calls the wrong helper
REPORTED = {
    "sign flip": "self: -softsign_backward(grad, self)",
    "wrong input": 'other: "grads[0].defined()',
    "wrong double backward of a helper op": "self: softsign_double_backward(grad, grad_output, self)",
}


# torch.func over some ops in the report of check --gradcheck --library (rule: the generated batching rule, run
# with PyTorch's fallback off; n/a: no forward formula; no rule: PyTorch's loop cannot run a `-> ()` op)
# (a row per sample where the op takes several, named by what the sample passes)
FUNC_ROWS = (
    "softsign | rule | ok | ok | ok | ok | ok | ok | n/a | ok | ok | ok",
    "scale_add (self: 2x3, other: 2x3) | rule | ok | ok | ok | ok | ok | ok | ok | ok | ok | ok",
    "scale_add (self: 2x3, other: 2x3, alpha=1.5) | rule | ok | ok | ok | ok | ok | ok | ok | ok | ok | ok",
    "topk_abs (self: 2x3, k=1, dim=-1) | fallback | ok | ok | ok | ok | ok | ok | ok | ok | ok | ok",
    "mix_ | fallback | no rule | ok | ok | n/a | ok | n/a | n/a | no rule | no rule | no rule",
)


def _check_library(pkg: Path, python: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg), os.environ.get("PYTHONPATH", "")])}
    args = ["--native-functions", "native_functions.yaml", "--derivatives", "derivatives.yaml", "--namespace", "pyag"]
    cmd = [sys.executable, "-m", "vtgen_build", "check", "--gradcheck", "--library", "pyag", "--python", python]
    return subprocess.run(
        [*cmd, *args, "--out", str(pkg / "out")], cwd=pkg, env=env, capture_output=True, text=True, timeout=600
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("release", [None, OTHER_RELEASE], ids=["this-torch", "torch-2.10"])
def test_check_gradcheck_library_verifies_and_fails_at_the_yaml_line(tmp_path: Path, release: str | None) -> None:
    """Each break fails at its yaml line; torch.func over each op is in the report (n/a and "no rule" said, the
    run still passing), and a wrong batching rule planted beside one break fails at its op, alone among the
    torch.func checks (a wrong formula agrees with itself under every transform: gradcheck finds it). With this
    torch and with another release's environment (found as the stable matrix finds it: skipped when there is
    none, a failure when CI requires it)."""
    python = sys.executable if release is None else str(release_python_or_skip(release))
    pkg = _copy(tmp_path / "ok")
    done = _check_library(pkg, python)
    assert done.returncode == 0 and "OK: 13 ops verified" in done.stdout, done.stdout + done.stderr
    for row in FUNC_ROWS:
        assert f"  | {row} |" in done.stdout, (row, done.stdout)
    refused = "  n/a: soft_quantize (self: 2x3, scale: 2x3): jvp, jacfwd, hessian, vmap(jvp): NotImplementedError: "
    assert refused + "forward-mode AD" in done.stdout
    assert "torch.func: 13 ops, 18 samples; 133 ok, 23 n/a, 24 no rule" in done.stdout, done.stdout
    for name, (file, old, new) in BREAKS.items():
        broken = _copy(tmp_path / name.replace(" ", "_"))
        path = broken / file
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
        _generate(broken)
        module = broken / "pyag" / "_autograd.py"
        if name == "wrong input":  # and softsign's batching rule calls cube
            right = "_elementwise_batched(torch.ops.pyag.softsign.default)"
            module.write_text(module.read_text().replace(right, "_elementwise_batched(torch.ops.pyag.cube.default)"))
        done = _check_library(broken, python)
        text = done.stdout + done.stderr
        lines = (broken / "derivatives.yaml").read_text().splitlines()
        line = next(i for i, t in enumerate(lines, 1) if REPORTED[name] in t)
        assert done.returncode != 0, (name, text)
        assert f"derivatives.yaml:{line}: error: gradcheck failed" in text, (name, text)
        func = [f for f in text.splitlines() if "error: torch.func" in f]
        if name == "wrong input":
            assert len(func) == 1 and func[0].startswith("vtgen-build: error: torch.func vmap of softsign (vmap "
                                                         "through its generated batching rule"), text  # fmt: skip
        else:
            assert not func, (name, text)


def _cmake(src: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cmake", *map(str, args)], cwd=src, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_cmake_generates_and_installs_the_module(tmp_path: Path) -> None:
    """``vtgen_generate(... PYTHON_AUTOGRAD mypkg PYTHON_FORMULAS f.py)``: generated by the generator step
    (the formulas module copied beside it), installed by ``cmake --install``; the same text as the CLI's."""
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("cmake or ninja is not on PATH")
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("_autograd.py", "__pycache__", "out"))
    head = (
        "cmake_minimum_required(VERSION 3.20)\nproject(pa LANGUAGES CXX)\nfind_package(vtgen_build CONFIG REQUIRED)\n"
    )
    call = "add_library(lib OBJECT)\nvtgen_generate(lib NATIVE_FUNCTIONS native_functions.yaml "
    call += "DERIVATIVES derivatives.yaml NAMESPACE pyag SHARDS 1 {extra})\n"
    defines = [f"-Dvtgen_build_DIR={ROOT / 'cmake'}", f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}"]
    (src / "CMakeLists.txt").write_text(head + call.format(extra="PYTHON_FORMULAS pyag/formulas.py"))
    done = _cmake(src, "-S", src, "-B", src / "bad", "-G", "Ninja", *defines)
    assert done.returncode != 0 and "PYTHON_FORMULAS applies to PYTHON_AUTOGRAD only" in done.stderr, done.stderr
    (src / "CMakeLists.txt").write_text(
        head + call.format(extra="PYTHON_AUTOGRAD pyag PYTHON_FORMULAS pyag/formulas.py")
    )
    assert _cmake(src, "-S", src, "-B", src / "build", "-G", "Ninja", *defines).returncode == 0
    stamp = "CMakeFiles/lib.dir/vtgen.stamp"  # the generator step alone
    ninja = subprocess.run(["ninja", "-C", str(src / "build"), stamp], capture_output=True, text=True, check=False)
    assert ninja.returncode == 0, ninja.stdout + ninja.stderr
    done = _cmake(src, "--install", src / "build", "--prefix", tmp_path / "prefix")
    assert done.returncode == 0, done.stdout + done.stderr
    installed = tmp_path / "prefix" / "pyag"
    assert (installed / "_autograd.py").read_text() == GOLDEN.read_text()
    assert (installed / "formulas.py").read_text() == (PACKAGE / "pyag" / "formulas.py").read_text()
