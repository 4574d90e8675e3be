"""``torch.func`` over one op: each transform's answer against the eager loop it stands for.

``transform_checks(fn, args)`` runs, for ``fn`` (tensors in, a tensor or a tuple of tensors out)
at float64 ``args``: ``vmap`` (against a loop over the batch), ``grad`` and ``vjp`` (against
``torch.autograd.grad``), ``jvp`` (against eager forward AD), ``jacrev`` and ``jacfwd`` (against
``torch.autograd.functional.jacobian``), ``hessian`` (against ``torch.autograd.functional.hessian``),
per-sample gradients ``vmap(grad)``, ``vmap(jvp)`` and ``vmap(vjp)`` (against loops of the eager
ones).  Each check is ``(name, verdict, detail)``, the verdict ``"ok"``, ``"FAIL"`` or ``"n/a"``:
n/a only where the op's autograd refuses forward mode because its yaml entry has no forward
formula (the generated Python autograd's ``NotImplementedError`` naming the entry, or a C++
autograd kernel's refusal of forward AD), never for any other error.  ``no_fallback``: the op has
a batching rule, so ``vmap`` runs with PyTorch's fallback loop turned off (a rule that falls back
is no rule: the check fails).

Standard library only at import (torch inside the functions): the module is loaded by path in
Pythons that hold no vtgen_build (``launch.py``, tests' children).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["CHECKS", "NO_RULE", "REFUSED", "transform_checks"]

BATCH = 3
# the generated autograd's refusal of forward mode (emit/python_autograd.py): the only n/a
REFUSED = "is not implemented by the Python autograd"
# a C++ autograd kernel's refusal of forward AD for an op without a forward formula (the other n/a)
REFUSED_CPP = re.compile(r"Trying to use forward AD with \S+ that does not support it")
NO_RULE = "Batching rule not implemented for "  # PyTorch's vmap fallback refusing the op
CHECKS = ("vmap", "grad", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap(grad)", "vmap(jvp)", "vmap(vjp)")


def _outputs(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _scalar(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` summed to one number (every output's sum): what grad and hessian differentiate."""

    def summed(*args: Any) -> Any:
        outs = _outputs(fn(*args))
        total = outs[0].sum()
        for o in outs[1:]:
            total = total + o.sum()
        return total

    return summed


def _same(got: Any, want: Any) -> str:
    import torch
    import torch.utils._pytree as pytree

    got_leaves, want_leaves = pytree.tree_leaves(got), pytree.tree_leaves(want)
    if len(got_leaves) != len(want_leaves):
        raise AssertionError(f"{len(got_leaves)} results, the eager loop has {len(want_leaves)}")
    for g, w in zip(got_leaves, want_leaves, strict=True):
        torch.testing.assert_close(g, w)
    return f"equal to the eager loop ({len(want_leaves)} tensors)"


def _stack(rows: list[Any]) -> tuple[Any, ...]:
    import torch

    return tuple(torch.stack(col) for col in zip(*(_outputs(r) for r in rows), strict=True))


def _eager_grads(fn: Callable[..., Any], args: tuple[Any, ...], cotangents: tuple[Any, ...]) -> tuple[Any, ...]:
    import torch

    inputs = tuple(a.detach().requires_grad_() for a in args)
    outs = _outputs(fn(*inputs))
    return torch.autograd.grad(outs, inputs, cotangents or None, allow_unused=True, materialize_grads=True)


def _eager_jvp(fn: Callable[..., Any], args: tuple[Any, ...], tangents: tuple[Any, ...]) -> tuple[Any, ...]:
    import torch.autograd.forward_ad

    fwad: Any = torch.autograd.forward_ad  # untyped functions: called through Any
    with fwad.dual_level():
        outs = _outputs(fn(*(fwad.make_dual(a, t) for a, t in zip(args, tangents, strict=True))))
        return tuple(fwad.unpack_dual(o).tangent for o in outs)


def _like(values: tuple[Any, ...], batch: int | None = None) -> tuple[Any, ...]:
    import torch

    return tuple(torch.randn(((batch,) if batch else ()) + tuple(v.shape), dtype=v.dtype) for v in values)


def _vmap(fn: Callable[..., Any], no_fallback: bool) -> Callable[..., Any]:
    """``torch.func.vmap(fn)``, run with PyTorch's fallback loop turned off when ``no_fallback``."""
    import torch

    mapped = torch.func.vmap(fn)
    if not no_fallback:
        return mapped

    def ruled(*args: Any) -> Any:
        functorch: Any = torch._C._functorch
        functorch._set_vmap_fallback_enabled(False)
        try:
            return mapped(*args)
        finally:
            functorch._set_vmap_fallback_enabled(True)

    return ruled


def _checks(fn: Callable[..., Any], args: tuple[Any, ...], no_fallback: bool) -> dict[str, Callable[[], str]]:
    import torch
    import torch.func

    tf: Any = torch.func  # untyped functions: called through Any
    functional: Any = torch.autograd.functional
    n = len(args)
    argnums = tuple(range(n))
    outs = _outputs(fn(*args))
    batched, cotangents, tangents = _like(args, BATCH), _like(outs), _like(args)
    batched_cot, batched_tan = _like(outs, BATCH), _like(args, BATCH)
    rows = range(BATCH)

    def pick(values: tuple[Any, ...], i: int) -> tuple[Any, ...]:
        return tuple(v[i] for v in values)

    def vjp_of(*values: Any) -> Any:
        out, pull = tf.vjp(fn, *values[:n])
        return pull(values[n] if not isinstance(out, tuple) else tuple(values[n:]))

    def jvp_of(*values: Any) -> Any:
        return tf.jvp(fn, tuple(values[:n]), tuple(values[n:]))[1]

    grad_of = tf.grad(_scalar(fn), argnums=argnums)
    jacobian = functional.jacobian
    return {
        "vmap": lambda: _same(
            _outputs(_vmap(fn, no_fallback)(*batched)), _stack([fn(*pick(batched, i)) for i in rows])
        ),
        "grad": lambda: _same(grad_of(*args), _eager_grads(_scalar(fn), args, ())),
        "vjp": lambda: _same(_outputs(vjp_of(*args, *cotangents)), _eager_grads(fn, args, cotangents)),
        "jvp": lambda: _same(_outputs(jvp_of(*args, *tangents)), _eager_jvp(fn, args, tangents)),
        "jacrev": lambda: _same(tf.jacrev(fn, argnums=argnums)(*args), jacobian(fn, args)),
        "jacfwd": lambda: _same(tf.jacfwd(fn, argnums=argnums)(*args), jacobian(fn, args)),
        "hessian": lambda: _same(
            tf.hessian(_scalar(fn), argnums=argnums)(*args), functional.hessian(_scalar(fn), args)
        ),
        "vmap(grad)": lambda: _same(
            tf.vmap(grad_of)(*batched), _stack([_eager_grads(_scalar(fn), pick(batched, i), ()) for i in rows])
        ),
        "vmap(jvp)": lambda: _same(
            _outputs(tf.vmap(jvp_of)(*batched, *batched_tan)),
            _stack([_eager_jvp(fn, pick(batched, i), pick(batched_tan, i)) for i in rows]),
        ),
        "vmap(vjp)": lambda: _same(
            _outputs(tf.vmap(vjp_of)(*batched, *batched_cot)),
            _stack([_eager_grads(fn, pick(batched, i), pick(batched_cot, i)) for i in rows]),
        ),
    }


def _refused(exc: Exception) -> bool:
    """Is ``exc`` the op's autograd refusing forward mode (no forward formula in its yaml entry)?"""
    return isinstance(exc, RuntimeError) and (REFUSED in str(exc) or bool(REFUSED_CPP.search(str(exc))))


def transform_checks(
    fn: Callable[..., Any], args: tuple[Any, ...], no_fallback: bool = False
) -> list[tuple[str, str, str]]:
    """(check, "ok"/"FAIL"/"n/a"/"no rule", detail) of every transform of ``CHECKS`` over ``fn`` at ``args``."""
    import torch

    torch.manual_seed(0)
    args = tuple(a.detach() for a in args)
    found = []
    try:
        checks = _checks(fn, args, no_fallback)
    except Exception as exc:  # the op fails on its own sample: every check fails with it
        return [(name, "FAIL", f"{type(exc).__name__}: {exc}".splitlines()[0][:400]) for name in CHECKS]
    for name, check in checks.items():
        try:
            found.append((name, "ok", check()))
        except Exception as exc:  # every failure is the check's answer
            # with the fallback turned off for vmap, its refusal is the rule's failure (it fell back)
            no_rule = isinstance(exc, RuntimeError) and str(exc).startswith(NO_RULE)
            no_rule = no_rule and not (no_fallback and name == "vmap")
            verdict = "n/a" if _refused(exc) else "no rule" if no_rule else "FAIL"
            found.append((name, verdict, f"{type(exc).__name__}: {exc}".splitlines()[0][:400]))
    return found
