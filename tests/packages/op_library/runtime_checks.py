"""Runtime checks of a linked op library, run in a fresh torch process by tests/test_op_library.py.

``python runtime_checks.py LIBRARY`` runs every check and prints RUNTIME-OK;
``python runtime_checks.py LIBRARY mutating-gradcheck`` prints whether the gradients of the
``-> ()`` mutating ops (cube_, mix_) check out: GRADCHECK-OK, or GRADCHECK-FAILED with the error;
``python runtime_checks.py LIBRARY inductor`` runs opcheck and the default torch.compile backend
(Inductor) on cubic (structured, a keyword-only Scalar) and its out= variant, and prints
INDUCTOR-OK.  (blend stays out: its TensorIterator meta function does not take symbolic shapes.)
"""

from __future__ import annotations

import sys

import torch


def _raises(fn: object, needle: str) -> None:
    try:
        fn()  # type: ignore[operator]
    except RuntimeError as exc:
        assert needle in str(exc), exc
    else:
        raise SystemExit(f"no error containing {needle!r}")


def _cubed(t: torch.Tensor) -> torch.Tensor:
    b = t.clone()
    torch.ops.vtsample.cube_(b)  # returns nothing: b now carries the op's history
    return b


def _mixed(s: torch.Tensor, o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    s2, o2 = s.clone(), o.clone()
    torch.ops.vtsample.mix_(s2, o2, 0.5)
    return s2, o2


def mutating_gradcheck() -> str:
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    y = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    try:
        # forward AD: b = x.clone() already has a tangent, which cube_'s forward formula updates
        torch.autograd.gradcheck(_cubed, (x,), check_forward_ad=True)
        torch.autograd.gradcheck(_mixed, (x, y))
        torch.autograd.gradgradcheck(_cubed, (x,))
    except RuntimeError as exc:
        return f"GRADCHECK-FAILED: {exc}"
    return "GRADCHECK-OK"


def mutating_checks(ops: object) -> None:
    """``-> ()`` ops: history rebased on each written tensor, version bumps, PyTorch's errors, opcheck."""
    result = mutating_gradcheck()
    assert result == "GRADCHECK-OK", result
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    c = torch.randn(3)
    a, b, version = c.clone(), c.clone(), c._version
    torch.ops.vtsample.cube_(c)
    assert c._version == version + 1 and torch.allclose(c, a**3)
    torch.ops.vtsample.mix_(a, b, 2.0)
    assert a._version == 1 and b._version == 1
    _raises(lambda: torch.ops.vtsample.cube_(x), "a leaf Variable that requires grad is being used in an in-place")
    saved = x.clone()
    y = torch.ops.vtsample.softsign(saved)  # saves its input
    torch.ops.vtsample.cube_(saved)
    _raises(lambda: y.sum().backward(), "modified by an inplace operation")
    u = x.clone()
    torch.ops.vtsample.cube_(u)
    assert u.grad_fn is not None and u.grad_fn.name() == "CubeBackward0"
    for op, args in (
        (torch.ops.vtsample.cube_.default, (x.clone(),)),
        (torch.ops.vtsample.mix_.default, (x.clone(), x.clone() * 2, 0.5)),
    ):
        results = torch.library.opcheck(op, args)
        assert all(r == "SUCCESS" for r in results.values()), (op, results)


def inductor_checks(ops: object) -> None:
    """opcheck's four tests on cubic and cubic.out; Inductor (static and dynamic shapes) gives
    eager's values and gradients."""
    vt = torch.ops.vtsample
    x, y = torch.randn(3, 4, dtype=torch.float64, requires_grad=True), torch.randn(4, dtype=torch.float64)
    for op, args, kwargs in (
        (vt.cubic.default, (x,), {"scale": 0.7}),
        (vt.cubic.out, (x.detach(),), {"scale": 0.7, "out": torch.empty(0, dtype=torch.float64)}),
    ):
        results = torch.library.opcheck(op, args, kwargs)
        assert all(r == "SUCCESS" for r in results.values()), (op, results)

    def model(t: torch.Tensor) -> torch.Tensor:
        return vt.cubic(t, scale=0.7) * y + vt.cubic(t)

    expected = model(x)
    (expected_grad,) = torch.autograd.grad(expected.sum(), x)
    for dynamic in (False, True):
        torch._dynamo.reset()
        got = torch.compile(model, fullgraph=True, dynamic=dynamic)(x)
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(torch.autograd.grad(got.sum(), x)[0], expected_grad)


def main(library: str, mode: str = "all") -> None:
    torch.ops.load_library(library)
    if mode == "mutating-gradcheck":
        print(mutating_gradcheck())
        return
    if mode == "inductor":
        inductor_checks(torch.ops.vtsample)
        print("INDUCTOR-OK")
        return
    ops = torch.ops.vtsample
    mutating_checks(ops)
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(ops.softsign, (x,))
    # in-place and out=: the ADInplaceOrView kernels bump the version counter
    c = torch.randn(3)
    version = c._version
    ops.softsign_(c)
    assert c._version == version + 1
    out = torch.empty(3)
    version = out._version
    ops.softsign.out(c, out=out)
    assert out._version == version + 1
    # a saved input modified in place after the op: backward refuses
    a = x.clone()
    y = ops.softsign(a)
    ops.softsign_(a)
    _raises(lambda: y.sum().backward(), "modified by an inplace operation")
    # the view op: a view of its base; the gradient flows through it
    base = torch.randn(3, 4, dtype=torch.float64)
    view = ops.narrow_last(base, 2)
    assert view._is_view() and view._base is base
    assert torch.autograd.gradcheck(lambda t: ops.narrow_last(t, 2), (x,))

    def through_view(t: torch.Tensor) -> torch.Tensor:
        b = t.clone()
        ops.narrow_last(b, 2).mul_(2)  # an in-place op on the view rebases the base's history
        return b

    assert torch.autograd.gradcheck(through_view, (x,))
    with torch.autograd._force_original_view_tracking(True):  # views replayed by our ViewFunc
        assert torch.autograd.gradcheck(through_view, (x,))
    # a Tensor[] view: every element is a view, and an in-place op on one is refused
    assert all(p._is_view() and p._base is base for p in ops.chunks(base, 2))
    parts = ops.chunks(x.clone(), 2)
    _raises(lambda: parts[0].mul_(2), "view")
    # blend: structured on a TensorIterator (broadcasting, dtype promotion) with a precomputed scale
    a, b = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float32)
    torch.testing.assert_close(ops.blend(a, b, 2), (a + b) / 4)
    out = torch.empty(0, dtype=torch.float64)
    assert ops.blend.out(a, b, 1, out=out) is out and out.shape == (3, 4)
    torch.testing.assert_close(out, (a + b) / 2)
    c = a.clone()
    ops.blend_(c, b, 1)
    torch.testing.assert_close(c, (a + b) / 2)
    _raises(lambda: ops.blend_(b.clone(), a, 1), "doesn't match the broadcast shape")
    _raises(lambda: ops.blend(a, b, -1), "power must be non-negative")
    with torch._subclasses.fake_tensor.FakeTensorMode():  # the generated Meta kernel: the iterator alone
        fake = ops.blend(torch.empty(2, 1, 5), torch.empty(3, 1), 0)
    assert fake.shape == (2, 3, 5) and fake.dtype == torch.float32
    print("RUNTIME-OK")


if __name__ == "__main__":
    main(*sys.argv[1:])
