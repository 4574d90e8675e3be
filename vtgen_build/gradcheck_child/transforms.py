"""``torch.func`` over one op: each transform's answer against the eager loop it stands for.

``transform_checks(fn, args)`` runs, for ``fn`` (tensors in, a tensor or a tuple of tensors out)
at float64 ``args``: ``vmap`` (against a loop over the batch), ``grad`` and ``vjp`` (against
``torch.autograd.grad``), ``jvp`` (against eager forward AD), ``jacrev`` and ``jacfwd`` (against
``torch.autograd.functional.jacobian``), ``hessian`` (against ``torch.autograd.functional.hessian``),
per-sample gradients ``vmap(grad)``, ``vmap(jvp)`` and ``vmap(vjp)`` (against loops of the eager
ones).  Each check is ``(name, verdict, detail)``, the verdict ``"ok"``, ``"FAIL"`` or ``"n/a"``:
n/a only where the op's generated autograd refuses forward mode because its yaml entry has no
forward formula (its own ``NotImplementedError``, naming the entry), never for any other error.

Standard library only at import (torch inside the functions): the module is loaded by path in
Pythons that hold no vtgen_build (``launch.py``, tests' children).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["CHECKS", "NO_RULE", "REFUSED", "transform_checks"]

BATCH = 3
# the generated autograd's refusal of forward mode (emit/python_autograd.py): the only n/a
REFUSED = "is not implemented by the Python autograd"
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


def _checks(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, Callable[[], str]]:
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
        "vmap": lambda: _same(_outputs(tf.vmap(fn)(*batched)), _stack([fn(*pick(batched, i)) for i in rows])),
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


def transform_checks(fn: Callable[..., Any], args: tuple[Any, ...]) -> list[tuple[str, str, str]]:
    """(check, "ok"/"FAIL"/"n/a"/"no rule", detail) of every transform of ``CHECKS`` over ``fn`` at ``args``."""
    import torch

    torch.manual_seed(0)
    args = tuple(a.detach() for a in args)
    found = []
    for name, check in _checks(fn, args).items():
        try:
            found.append((name, "ok", check()))
        except NotImplementedError as exc:
            refused = REFUSED in str(exc)
            found.append((name, "n/a" if refused else "FAIL", f"{type(exc).__name__}: {exc}".splitlines()[0][:400]))
        except Exception as exc:  # every other failure is the check's answer
            verdict = "no rule" if isinstance(exc, RuntimeError) and str(exc).startswith(NO_RULE) else "FAIL"
            found.append((name, verdict, f"{type(exc).__name__}: {exc}".splitlines()[0][:400]))
    return found
