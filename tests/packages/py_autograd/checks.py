"""Runtime checks of pyag's generated Python autograd, run in a torch process by the tests.

Usage: python checks.py PACKAGE_DIR [GROUP ...]; prints one JSON object per line:
``{"op": ..., "check": ..., "ok": true/false, "detail": "..."}``.  GROUP: grad (gradcheck and
gradgradcheck, float64, every op and variant), forward (forward-AD gradcheck, or the refusal naming
the yaml entry), mutating (history, versions, leaf and in-place
errors), errors (not_implemented, forward AD), opcheck, compile (Inductor forward + backward
equal to eager), func (torch.func transforms against eager loops; the transforms module's path in
VTGEN_TRANSFORMS), vmap (the generated batching rules); none given: all.
"""

import json
import os
import sys
import traceback

sys.path.insert(0, sys.argv[1])

import pyag  # noqa: F401
import torch
from torch.autograd import gradcheck, gradgradcheck

ops = torch.ops.pyag
TRANSFORMS = os.environ.get("VTGEN_TRANSFORMS", "")  # vtgen_build/gradcheck_child/transforms.py
D = {"dtype": torch.float64, "requires_grad": True}


def report(op, check, ok, detail=""):
    print(json.dumps({"op": op, "check": check, "ok": bool(ok), "detail": detail[:400]}), flush=True)


def attempt(op, check, fn):
    try:
        report(op, check, fn())
    except Exception as exc:  # a failed check is a result, not a crash
        report(op, check, False, f"{type(exc).__name__}: {exc}".splitlines()[0] + " | " + traceback.format_exc(-1))


def _inplace(op, *rest, **kw):
    def run(a, *args):
        c = a.clone()
        op(c, *args, *rest, **kw)
        return c

    return run


def _mix(a, b):
    c, e = a.clone(), b.clone()
    ops.mix_(c, e, 0.7)
    return c, e


def cases():
    torch.manual_seed(0)
    x, y = torch.randn(4, 3, **D), torch.randn(4, 3, **D)
    w, b, s = torch.randn(5, 3, **D), torch.randn(5, **D), torch.randn(1, 3, **D)
    return {
        "softsign": (ops.softsign, (x,)),
        "softsign_backward": (ops.softsign_backward, (y, x)),
        "softsign_": (_inplace(ops.softsign_), (x,)),
        "scale_add": (lambda a, c: ops.scale_add(a, c, alpha=2.5), (x, y)),
        "scale_add_": (_inplace(ops.scale_add_, alpha=-1.5), (x, y)),
        "topk_abs": (lambda a: ops.topk_abs(a, 2, 1)[0], (x,)),
        "stack_mean": (lambda a, c: ops.stack_mean([a, c], 1), (x, y)),
        "affine": (ops.affine, (x, w, b)),
        "affine(bias=None)": (ops.affine, (x, w)),
        "tile_to": (lambda a: ops.tile_to(a, [4, 3]), (s,)),
        "soft_quantize": (lambda a: ops.soft_quantize(a, torch.tensor(0.5, dtype=torch.float64), 8), (x,)),
        "mix_": (_mix, (x, y)),
        "cube": (ops.cube, (x,)),
        "cube_": (_inplace(ops.cube_), (x,)),
    }


def grad():
    for name, (fn, args) in cases().items():
        attempt(name, "gradcheck", lambda fn=fn, args=args: gradcheck(fn, args))
        if name != "soft_quantize":  # round(): its derivative is zero almost everywhere
            attempt(name, "gradgradcheck", lambda fn=fn, args=args: gradgradcheck(fn, args))


FORWARD = (
    "cube",
    "cube_",
    "softsign",
    "softsign_",
    "scale_add",
    "scale_add_",
    "topk_abs",
    "affine",
    "affine(bias=None)",
    "tile_to",
)


def forward_ad():
    """Forward AD of the ops whose entries have forward formulas; the others refuse, naming the yaml."""
    for name, (fn, args) in cases().items():
        if name in FORWARD:
            check = {"check_forward_ad": True, "check_backward_ad": False, "check_undefined_grad": False}
            attempt(name, "forward AD gradcheck", lambda fn=fn, args=args, check=check: gradcheck(fn, args, **check))
            continue
        import torch.autograd.forward_ad as fwAD

        with fwAD.dual_level():
            duals = [fwAD.make_dual(a.detach(), torch.ones_like(a)) for a in args]
            try:
                fn(*duals)
                report(name, "forward AD refused", False, "no error")
            except NotImplementedError as exc:
                report(name, "forward AD refused", "derivatives.yaml:" in str(exc), str(exc))


def mutating():
    leaf = torch.randn(3, requires_grad=True)
    try:
        ops.softsign_(leaf)
        report("softsign_", "leaf refused", False, "no error")
    except RuntimeError as exc:
        report("softsign_", "leaf refused", "leaf Variable that requires grad" in str(exc), str(exc))
    a = torch.randn(3, requires_grad=True)
    c = a.clone()
    z = c * c
    ops.softsign_(c)
    try:
        z.sum().backward()
        report("softsign_", "modified by an inplace operation", False, "no error")
    except RuntimeError as exc:
        report("softsign_", "modified by an inplace operation", "modified by an inplace operation" in str(exc))
    c = a.clone()
    before = c._version
    ops.scale_add_(c, torch.ones(3), alpha=2.0)
    rebased = c.grad_fn is not None and c.grad_fn.name().startswith("ScaleAddBackward")
    report("scale_add_", "version bumped, history rebased", c._version > before and rebased, str(c.grad_fn))
    c = torch.randn(3)
    before = c._version
    with torch.no_grad():
        ops.softsign_(c)
    report("softsign_", "version bumped without grad", c._version > before)


def errors():
    x = torch.randn(3, requires_grad=True)
    scale = torch.tensor(0.5, requires_grad=True)
    try:
        ops.soft_quantize(x, scale).sum().backward()
        report("soft_quantize", "not_implemented raises", False, "no error")
    except NotImplementedError as exc:
        report("soft_quantize", "not_implemented raises", "derivatives.yaml:" in str(exc), str(exc))
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        dual = fwAD.make_dual(torch.randn(3), torch.ones(3))
        try:
            out = ops.softsign(dual)
            report("softsign", "forward AD", fwAD.unpack_dual(out).tangent is not None, "tangent")
        except NotImplementedError as exc:
            report("softsign", "forward AD refused", "derivatives.yaml:" in str(exc), str(exc))


def opcheck():
    x = torch.randn(4, 3, **D)
    y = torch.randn(4, 3, **D)
    samples = {
        "softsign": (ops.softsign.default, (x,), {}),
        "scale_add": (ops.scale_add.default, (x, y), {"alpha": 2.0}),
        "topk_abs": (ops.topk_abs.default, (x, 2, 1), {}),
        "affine": (ops.affine.default, (x, torch.randn(5, 3, **D), torch.randn(5, **D)), {}),
        "tile_to": (ops.tile_to.default, (torch.randn(1, 3, **D), [4, 3]), {}),
        "softsign_": (ops.softsign_.default, (x.detach().clone(),), {}),
    }
    for name, (op, args, kwargs) in samples.items():
        test = ("test_autograd_registration",)

        def run(op=op, args=args, kwargs=kwargs, test=test):
            result = torch.library.opcheck(op, args, kwargs, test_utils=test)
            return all(v == "SUCCESS" for v in result.values())

        attempt(name, "opcheck autograd registration", run)


def compiled():
    torch.manual_seed(1)
    x, y = torch.randn(8, 3, **D), torch.randn(8, 3, **D)

    def f(a, c):
        return ops.softsign(ops.scale_add(a, c, alpha=0.5)).sum() + ops.topk_abs(a, 2, 1)[0].sum()

    def run():
        eager = torch.autograd.grad(f(x, y), (x, y))
        comp = torch.compile(f, backend="inductor", fullgraph=True)
        got = torch.autograd.grad(comp(x, y), (x, y))
        same = all(torch.allclose(g, e) for g, e in zip(got, eager, strict=True))
        return same and torch.allclose(comp(x, y), f(x, y))

    attempt("softsign+scale_add+topk_abs", "torch.compile inductor forward+backward", run)


def transforms():
    """torch.func over every op (vtgen_build/gradcheck_child/transforms.py, loaded by path)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("transforms", TRANSFORMS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, (fn, args) in cases().items():
        for check, verdict, detail in module.transform_checks(fn, args):
            found = {
                "op": name,
                "check": f"func {check}",
                "ok": verdict != "FAIL",
                "verdict": verdict,
                "detail": detail,
            }
            print(json.dumps(found), flush=True)


def vmap_rules():
    """The generated batching rules (``vmap: elementwise``): vmap over dim 1 with an unbatched second
    argument equals the loop with PyTorch's fallback turned off (an op without a rule then raises:
    topk_abs shows it); the fallback's BatchedFallback warning goes to stderr (the test reads it)."""
    torch.manual_seed(2)
    a, c = torch.randn(3, 5), torch.randn(3)
    b, d = torch.randn(3, 4, 5), torch.randn(4)  # a sample of rank 2 beside an unbatched tensor of rank 1
    ruled = {
        "softsign": (ops.softsign, (a,), (1,)),
        "softsign_backward": (ops.softsign_backward, (a, c), (1, None)),
        "scale_add": (lambda p, q: ops.scale_add(p, q, alpha=2.5), (a, c), (1, None)),
        "cube": (ops.cube, (a,), (1,)),
        "scale_add(ranks 2, 1)": (lambda p, q: ops.scale_add(p, q, alpha=2.5), (b, d), (2, None)),
        "topk_abs": (lambda p: ops.topk_abs(p, 2, 0)[0], (a,), (1,)),  # no rule
    }
    for name, (fn, args, dims) in ruled.items():
        rows = [
            fn(*(x.select(d, i) if d is not None else x for x, d in zip(args, dims, strict=True))) for i in range(5)
        ]
        report(name, "vmap equal to the loop", torch.allclose(torch.vmap(fn, in_dims=dims)(*args), torch.stack(rows)))
        torch._C._functorch._set_vmap_fallback_enabled(False)
        try:
            attempt(
                name,
                "vmap without the fallback",
                lambda fn=fn, dims=dims, args=args: torch.vmap(fn, in_dims=dims)(*args) is not None,
            )
        finally:
            torch._C._functorch._set_vmap_fallback_enabled(True)


def vmap_rule_paths():
    """The rule's call straight to the kernel (nothing outside vmap sees it) is taken only where that holds:
    an input requiring grad keeps its history through vmap; a conjugate or negative-bit input is conjugated or
    negated (the kernel, entered past functorch, would read its data as it lies); a dual tensor keeps its
    tangent; a dispatch mode sees the op; nested in grad or in vmap (at level 2) the op is differentiated or
    batched by the outer transform."""
    torch.manual_seed(3)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)

    def history():
        got = torch.autograd.grad(torch.vmap(ops.softsign)(x).sum(), x)[0]
        return torch.allclose(got, torch.autograd.grad(ops.softsign(x).sum(), x)[0])

    z = torch.randn(4, 3, dtype=torch.complex128).conj()
    attempt("softsign", "vmap of an input requiring grad keeps its history", history)
    attempt(
        "softsign",
        "vmap of a conjugate input",
        lambda: torch.allclose(torch.vmap(ops.softsign)(z), ops.softsign(z.resolve_conj())),
    )
    n = torch._neg_view(torch.randn(4, 3, dtype=torch.complex128))
    attempt(
        "softsign",
        "vmap of a negative-bit input",
        lambda: torch.allclose(torch.vmap(ops.softsign)(n), ops.softsign(n.resolve_neg())),
    )
    y = x.detach()

    def per_sample():
        got = torch.func.vmap(torch.func.grad(lambda t: ops.softsign(t).sum()))(y)
        loop = [torch.autograd.grad(ops.softsign(r.requires_grad_()).sum(), r)[0] for r in y.clone()]
        return torch.allclose(got, torch.stack(loop))

    def outer_grad():  # vmap at level 2, its input a grad wrapper
        got = torch.func.grad(lambda t: torch.func.vmap(ops.softsign)(t).sum())(y)
        return torch.allclose(got, torch.autograd.grad(ops.softsign(x).sum(), x)[0])

    def dual():  # forward AD outside vmap: the tangent goes through the op's Autograd kernel
        import torch.autograd.forward_ad as fwad

        t = torch.randn_like(y)
        with fwad.dual_level():
            out = fwad.unpack_dual(torch.vmap(ops.softsign)(fwad.make_dual(y, t))).tangent
        return out is not None and torch.allclose(out, t / (1 + y.abs()) ** 2)

    def mode():  # a dispatch mode outside vmap sees the op
        from torch.utils._python_dispatch import TorchDispatchMode

        seen = []

        class Seen(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.append(str(func))
                return func(*args, **(kwargs or {}))

        with Seen():
            out = torch.vmap(ops.softsign)(y)
        return "pyag.softsign.default" in seen and torch.allclose(out, ops.softsign(y))

    attempt("softsign", "vmap of a dual tensor", dual)
    attempt("softsign", "vmap under a dispatch mode", mode)
    attempt("softsign", "grad inside vmap", per_sample)
    attempt("softsign", "vmap inside grad", outer_grad)
    # the inner vmap at level 2 unwraps the outer's batched tensor
    attempt(
        "softsign", "vmap inside vmap", lambda: torch.allclose(torch.vmap(torch.vmap(ops.softsign))(y), ops.softsign(y))
    )


GROUPS = {
    "grad": grad,
    "forward": forward_ad,
    "mutating": mutating,
    "errors": errors,
    "opcheck": opcheck,
    "compile": compiled,
    "func": transforms,
    "vmap": vmap_rules,
    "vmap_paths": vmap_rule_paths,
}

if __name__ == "__main__":
    for group in sys.argv[2:] or list(GROUPS):
        GROUPS[group]()
