"""Run by each release's own python (tests/test_stable_matrix.py): the installed vtstable wheel, checked.

    PYTHONPATH=<the wheel installed with pip --target> <env>/bin/python stable_matrix_child.py [PREFIX...]

(with PREFIXes: only the checks whose names start with one of them, e.g. ``opcheck:``).

Prints one JSON object: the torch version and, per check, ``{"ok": bool, "detail": str}``.  The
checks, in order (each independent; a failing one does not stop the others):

* ``opcheck:<op>``: torch.library.opcheck's four tests (schema, autograd registration, fake
  tensor, AOT dispatch) of every op and variant on a sample;
* ``compile:dynamic=False`` / ``compile:dynamic=True``: one function calling every op and variant,
  torch.compile(fullgraph=True) with the default backend (Inductor), equal to eager;
* ``export``: torch.export.export of a small module calling the functional ops, run and compared;
* ``eager:softsign.out resizes out``: the generated out= kernel resizes a wrong-sized ``out``;
* ``aoti:every op through its C shim``: an AOTInductor package of every op but the out= one (in
  ``$VTGEN_AOTI_DIR`` when set): its wrapper calls each op's generated C shim and never the proxy
  executor, and it gives eager's values loaded in a fresh process (``--load-aoti PATH...``: only
  that); ``aoti-planted:...``, run only when named: with softsign's shim not given to Inductor, the
  check above names it;
* ``gradcheck:<op>``, ``gradgradcheck:<op>``, ``forward AD:<op>``: torch.autograd.gradcheck (float64),
  gradgradcheck, and gradcheck of forward mode where the entry has forward formulas, of every
  differentiable op and variant, through the package's generated ``vtstable._autograd`` (the Python
  autograd of derivatives.yaml); without that module the opcheck samples do not require grad and
  these checks are reported as skipped;
* ``vmap-rule:<op>``: the generated batching rule of each ``vmap: elementwise`` op, vmap with
  PyTorch's fallback turned off (a missing rule raises) equal to the loop;
  (torch.func's other checks per op and release are ``check --gradcheck --library``'s: the test runs it
  in each release beside this child.)
* ``autocast:<policy> (<op>)``, ``autocast:keys``: under ``torch.autocast("cpu", dtype=torch.bfloat16)``
  each policy's dtypes, forward and backward, and an AutocastCPU kernel exactly for the ops with a
  policy (the Python kernels of the same module: run with it only).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable

import torch
import vtstable

ops = torch.ops.vtstable
HAS_AUTOGRAD = importlib.util.find_spec("vtstable._autograd") is not None


def _x(*shape: int, grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64, requires_grad=grad)


def samples() -> list[tuple[str, object, tuple[object, ...], dict[str, object]]]:
    """(name, op overload, args, kwargs) of every op and variant; inputs require grad once autograd exists."""
    g = HAS_AUTOGRAD
    return [
        ("softsign", ops.softsign.default, (_x(3, 4, grad=g),), {}),
        ("softsign_", ops.softsign_.default, (_x(3, 4),), {}),
        # `out` of the right size: resizing a mutated argument is eager-only (functionalization forbids it;
        # torch 2.14's opcheck rejects an out= sample that needs a resize)
        ("softsign.out", ops.softsign.out, (_x(3, 4),), {"out": torch.empty(3, 4, dtype=torch.float64)}),
        ("softsign_backward", ops.softsign_backward.default, (_x(5), _x(5)), {}),
        ("sincos", ops.sincos.default, (_x(2, 3, grad=g),), {}),
        ("affine", ops.affine.default, (_x(4, grad=g), _x(4, grad=g), _x(4, grad=g)), {}),
        ("affine(bias=None)", ops.affine.default, (_x(4, grad=g), _x(4, grad=g), None), {}),
        ("clamp_abs_", ops.clamp_abs_.default, (_x(6), 0.5), {}),
    ]


def every_op(x: torch.Tensor, w: torch.Tensor) -> list[torch.Tensor]:
    """Every op and variant once (in-place ones on clones): what the compiled function must reproduce."""
    a = x.clone()
    ops.softsign_(a)
    out = torch.empty_like(x)
    ops.softsign.out(x, out=out)
    b = x.clone()
    ops.clamp_abs_(b, 0.5)
    s, c = ops.sincos(x)
    return [
        ops.softsign(x), a, out, b, s, c,
        ops.affine(x, w, None), ops.affine(x, w, x), ops.softsign_backward(w, x),
    ]  # fmt: skip


class Small(torch.nn.Module):
    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        s, c = ops.sincos(ops.softsign(x))
        return ops.affine(s, w, c) + ops.softsign_backward(c, x)


def check_opcheck(op: object, args: tuple[object, ...], kwargs: dict[str, object]) -> str:
    result = torch.library.opcheck(op, args, kwargs)
    bad = {k: v for k, v in result.items() if v != "SUCCESS"}
    if bad:
        raise AssertionError(bad)
    return ", ".join(sorted(result))


def check_compile(dynamic: bool) -> str:
    torch._dynamo.reset()
    x, w = _x(4, 5), _x(4, 5)
    compiled = torch.compile(every_op, fullgraph=True, dynamic=dynamic)
    for got, want in zip(compiled(x, w), every_op(x, w), strict=True):
        torch.testing.assert_close(got, want)
    return "Inductor output equals eager for 9 results"


def check_export() -> str:
    x, w = _x(3, 2), _x(3, 2)
    program = torch.export.export(Small(), (x, w))
    torch.testing.assert_close(program.module()(x, w), Small()(x, w))
    called = sorted({str(n.target) for n in program.graph.nodes if "vtstable" in str(n.target)})
    return "exported and ran: " + ", ".join(called)


def check_out_resize() -> str:
    """Eager only: an out= of the wrong size is resized to the result (MetaOutputs.resize_out)."""
    x, out = _x(3, 4), torch.empty(0, dtype=torch.float64)
    ops.softsign.out(x, out=out)
    torch.testing.assert_close(out, x / (1 + x.abs()))
    return f"resized to {tuple(out.shape)}"


def check_gradcheck(op: object, args: tuple[object, ...], kind: str) -> str:
    if kind == "gradcheck":
        torch.autograd.gradcheck(op, args)
    elif kind == "gradgradcheck":
        torch.autograd.gradgradcheck(op, args)
    else:
        torch.autograd.gradcheck(op, args, check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False)
    return "ok"


def _softsign_inplace(x: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    ops.softsign_(y)
    return y


def differentiable() -> list[tuple[str, object, tuple[object, ...], bool]]:
    """(name, function, float64 inputs requiring grad, has forward formulas) of every differentiable op
    and variant."""
    x, w, b = _x(3, 4, grad=True), _x(4, grad=True), _x(4, grad=True)
    return [
        ("softsign", ops.softsign, (x,), True),
        ("softsign_", _softsign_inplace, (x,), True),
        ("softsign_backward", ops.softsign_backward, (_x(3, 4, grad=True), x), True),
        ("sincos", ops.sincos, (_x(2, 3, grad=True),), True),
        ("affine", ops.affine, (_x(4, grad=True), w, b), True),
        ("affine(bias=None)", lambda i, v: ops.affine(i, v, None), (_x(4, grad=True), w), True),
    ]


def check_vmap_rule(fn: Callable[..., object], args: tuple[torch.Tensor, ...], dims: tuple[int | None, ...]) -> str:
    rows = [fn(*(a.select(d, i) if d is not None else a for a, d in zip(args, dims, strict=True))) for i in range(5)]
    torch._C._functorch._set_vmap_fallback_enabled(False)
    try:
        got = torch.vmap(fn, in_dims=dims)(*args)
    finally:
        torch._C._functorch._set_vmap_fallback_enabled(True)
    want = tuple(torch.stack(c) for c in zip(*rows, strict=True)) if isinstance(rows[0], tuple) else torch.stack(rows)
    torch.testing.assert_close(got, want)
    return "equal to the loop, no fallback"


def vmap_rules() -> list[tuple[str, Callable[[], str]]]:
    a, c = _x(3, 5), _x(3)
    cases: list[tuple[str, Callable[..., object], tuple[torch.Tensor, ...], tuple[int | None, ...]]] = [
        ("softsign", ops.softsign, (a,), (1,)),
        ("softsign_backward", ops.softsign_backward, (a, c), (1, None)),
        ("sincos", ops.sincos, (a,), (1,)),
        ("affine", ops.affine, (a, c, a), (1, None, 1)),
        ("affine(bias=None)", lambda i, w: ops.affine(i, w), (a, c), (1, None)),
    ]
    return [(f"vmap-rule:{n}", lambda f=f, x=x, d=d: check_vmap_rule(f, x, d)) for n, f, x, d in cases]


def _grad_dtypes(*outputs: torch.Tensor) -> list[list[torch.dtype]]:
    """The dtype of the gradient reaching each output (what the op's backward gets), filled by backward."""
    seen: list[list[torch.dtype]] = [[] for _ in outputs]
    for found, t in zip(seen, outputs, strict=True):
        t.register_hook(lambda g, found=found: found.append(g.dtype))
    return seen


def check_autocast_fp32() -> str:
    """sincos, `autocast: fp32`: its kernel takes float32/float64 only; bfloat16 in runs in float32."""
    x = torch.randn(6, dtype=torch.bfloat16, requires_grad=True)
    try:
        ops.sincos(x.detach())
        raise AssertionError("the kernel took bfloat16 outside autocast")
    except RuntimeError as exc:
        assert "expected a float32 or float64" in str(exc), exc
    with torch.autocast("cpu", dtype=torch.bfloat16):
        s, c = ops.sincos(x)
    assert (s.dtype, c.dtype) == (torch.float32, torch.float32), (s.dtype, c.dtype)
    torch.testing.assert_close(s, x.detach().float().sin())
    seen = _grad_dtypes(s, c)
    (s.sum() + c.sum()).backward()
    assert seen == [[torch.float32], [torch.float32]] and x.grad is not None and x.grad.dtype == torch.bfloat16
    with torch.autocast("cpu", dtype=torch.bfloat16):  # under vmap: the batching rule leaves autocast its say
        s, _ = torch.vmap(ops.sincos)(x.detach())
    assert s.dtype == torch.float32, s.dtype
    return "forward float32 (under vmap too), backward float32, the bfloat16 input's gradient bfloat16"


def check_autocast_promote() -> str:
    """affine, `autocast: promote`: its kernel wants one dtype; bfloat16 and float32 in run in float32."""
    i, b = (torch.randn(4, dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
    w = torch.randn(4, dtype=torch.float32, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = ops.affine(i, w, bias=b)
        wide = ops.affine(w.detach(), w.detach())  # nothing narrower than float32 comes out of float32 in
    assert (y.dtype, wide.dtype) == (torch.float32, torch.float32), (y.dtype, wide.dtype)
    torch.testing.assert_close(y, i.detach().float() * w.detach() + b.detach().float())
    seen = _grad_dtypes(y)
    y.sum().backward()
    assert seen == [[torch.float32]], seen
    assert [t.grad.dtype for t in (i, w, b) if t.grad is not None] == [torch.bfloat16, torch.float32, torch.bfloat16]
    return "forward float32, backward float32, each gradient in its input's dtype"


def check_autocast_keys() -> str:
    """An AutocastCPU kernel for each op with a policy, none for the others (their inputs pass as they are)."""
    names = ("softsign", "softsign_", "softsign.out", "softsign_backward", "sincos", "affine", "clamp_abs_")
    found = [n for n in names if "AutocastCPU" in torch._C._dispatch_dump(f"vtstable::{n}")]
    assert found == ["sincos", "affine"], found
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert ops.softsign(torch.randn(3)).dtype == torch.float32
    return "AutocastCPU: " + ", ".join(found)


# -- AOTInductor: every op through its generated C shim (vtstable.ops.install_aoti_c_shims, at import) --
AOTI_SHIMS = tuple(f"aoti_torch_cpu_{op}" for op in ("softsign", "softsign_", "softsign_backward", "sincos", "affine",
                                                      "clamp_abs_"))  # fmt: skip
PROXY_CALL = "aoti_torch_proxy_executor_call_function("


class AllOps(torch.nn.Module):
    """Every op but the out= one (functionalized before Inductor lowers it), each called once; the
    in-place ones on clones, affine with and without its bias."""

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        s, c = ops.sincos(ops.softsign(x))
        a, b = x.clone(), x.clone()
        ops.softsign_(a)
        ops.clamp_abs_(b, 0.5)
        return ops.affine(s, w, c) + ops.affine(c, w, None) + ops.softsign_backward(c, x) + a + b


def aoti_package(path: str) -> str:
    """AllOps compiled and packaged by AOTInductor into ``path`` (its inputs and eager outputs saved
    beside it, ``path.io``): the generated wrapper's C++ source."""
    import zipfile

    x, w = _x(3, 4), _x(3, 4)
    torch.save(((x, w), AllOps()(x, w)), path + ".io")
    torch._inductor.aoti_compile_and_package(torch.export.export(AllOps(), (x, w)), package_path=path)
    with zipfile.ZipFile(path) as package:
        (wrapper,) = [n for n in package.namelist() if n.endswith(".wrapper.cpp")]
        return package.read(wrapper).decode()


def shims_not_called(source: str) -> list[str]:
    """The shims a wrapper's source does not call (a declaration is not a call)."""
    return [s for s in AOTI_SHIMS if f"AOTI_TORCH_ERROR_CODE_CHECK({s}(" not in source]


def load_aoti(path: str) -> None:
    """aoti_load_package(path) in this process: the outputs saved beside it."""
    import torch._inductor.codecache  # torch 2.10: aoti_load_package uses it without importing it

    runner = torch._inductor.aoti_load_package(path)
    args, expected = torch.load(path + ".io", weights_only=True)
    with torch.no_grad():
        torch.testing.assert_close(runner(*args), expected)


def check_aoti(path: str) -> str:
    assert torch._inductor.config.aot_inductor.custom_ops_to_c_shims, "import vtstable installed no C shim"
    source = aoti_package(path)
    assert not shims_not_called(source), f"not called: {shims_not_called(source)}"
    assert PROXY_CALL not in source, f"{source.count(PROXY_CALL)} proxy-executor calls"
    import subprocess

    done = subprocess.run([sys.executable, __file__, "--load-aoti", path], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "LOADED" in done.stdout, done.stdout + done.stderr[-3000:]
    return f"{len(AOTI_SHIMS)} shims called, no proxy-executor call, eager's values in a fresh process"


def check_aoti_missing_shim(path: str) -> str:
    """The check above can fail: softsign's shim left out of custom_ops_to_c_shims, the wrapper calls
    softsign through the proxy executor (one call), shims_not_called names it, and the values hold."""
    import torch._inductor.config as config

    shims = dict(config.aot_inductor.custom_ops_to_c_shims)
    del shims[ops.softsign.default]
    with config.patch({"aot_inductor.custom_ops_to_c_shims": shims}):
        source = aoti_package(path)
    assert shims_not_called(source) == ["aoti_torch_cpu_softsign"], shims_not_called(source)
    assert source.count(PROXY_CALL) == 1, f"{source.count(PROXY_CALL)} proxy-executor calls (softsign's expected)"
    load_aoti(path)
    return "softsign through the proxy executor, named; eager's values"


def run(checks: list[tuple[str, Callable[[], str]]]) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for name, check in checks:
        try:
            results[name] = {"ok": True, "detail": check()}
        except Exception as exc:  # every failure is a result, reported with its cause
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            results[name] = {"ok": False, "detail": last[:2000]}
    return results


def load_packages(paths: list[str]) -> dict[str, dict[str, object]]:
    """``--load-aoti PATH...``: each package loaded in this process, its values checked."""

    def loaded(path: str) -> str:
        load_aoti(path)
        return "eager's values"

    return run([(path, lambda path=path: loaded(path)) for path in paths])


def main() -> int:
    torch.manual_seed(0)
    if sys.argv[1:2] == ["--load-aoti"]:  # a fresh process loading AOTInductor packages
        results = load_packages(sys.argv[2:])
        print("LOADED" if all(r["ok"] for r in results.values()) else "FAILED")
        print(json.dumps({"torch": torch.__version__, "results": results}))
        return 0
    aoti_dir = os.environ.get("VTGEN_AOTI_DIR") or tempfile.mkdtemp(prefix="vtstable-aoti-")
    checks: list[tuple[str, Callable[[], str]]] = []
    for name, op, args, kwargs in samples():
        checks.append((f"opcheck:{name}", lambda op=op, args=args, kwargs=kwargs: check_opcheck(op, args, kwargs)))
    checks += [(f"compile:dynamic={d}", lambda d=d: check_compile(d)) for d in (False, True)]
    checks.append(("export", check_export))
    checks.append(("eager:softsign.out resizes out", check_out_resize))
    if HAS_AUTOGRAD:  # the rules are registered by the generated module
        checks += vmap_rules()

    checks.append(("aoti:every op through its C shim", lambda: check_aoti(os.path.join(aoti_dir, "all_ops.pt2"))))
    if HAS_AUTOGRAD:
        for name, fn, args, forward in differentiable():
            for kind in ("gradcheck", "gradgradcheck", *(("forward AD",) if forward else ())):
                checks.append((f"{kind}:{name}", lambda fn=fn, args=args, kind=kind: check_gradcheck(fn, args, kind)))
        # the Autocast kernels live in vtstable._autograd too
        checks += [
            ("autocast:fp32 (sincos)", check_autocast_fp32),
            ("autocast:promote (affine)", check_autocast_promote),
        ]
        checks.append(("autocast:keys", check_autocast_keys))
    wanted = tuple(sys.argv[1:])
    if wanted:
        # asked for by name only: a planted fault, to show the AOTInductor check above can fail
        missing = os.path.join(aoti_dir, "one_missing.pt2")
        checks.append(("aoti-planted:a missing shim is detected", lambda: check_aoti_missing_shim(missing)))
        checks = [(name, check) for name, check in checks if name.startswith(wanted)]
    results = run(checks)
    report = {
        "torch": torch.__version__,
        "library": vtstable.library_path(),
        "gradcheck": "run" if HAS_AUTOGRAD else "skipped: no vtstable._autograd (the Python autograd) installed",
        "results": results,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
