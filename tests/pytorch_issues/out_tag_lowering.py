"""PyTorch 2.13's Inductor and a custom op whose out= overload carries ``torch.Tag.out``: no vtgen_build.

``python out_tag_lowering.py`` defines ``repro::cubic(Tensor self, *, Scalar scale=1)`` and
``cubic.out`` (tagged ``out``) with ``torch.library``, compiles a call of ``cubic`` with the default
backend, static and dynamic shapes, and prints one line each: ``static: OK`` when the result
equals eager, else the error's first line.
Inductor lowers the functional op to its out= overload (``FallbackKernel.create``) and, in 2.13,
passes the keyword-only argument twice (``cubic.out(arg0_1, 0.7, scale=0.7, out=buf0)``) and builds
the output's layout from symbolic sizes under dynamic shapes (an AssertionError).
"""

from __future__ import annotations

import torch


def define() -> None:
    lib = torch.library.Library("repro", "DEF")
    lib.define("cubic(Tensor self, *, Scalar scale=1) -> Tensor")
    lib.define("cubic.out(Tensor self, *, Scalar scale=1, Tensor(a!) out) -> Tensor(a!)", tags=(torch.Tag.out,))

    def cubic(x: torch.Tensor, *, scale: float = 1) -> torch.Tensor:
        return x * x * x * scale

    def cubic_out(x: torch.Tensor, *, scale: float = 1, out: torch.Tensor) -> torch.Tensor:
        out.resize_(x.shape)
        return out.copy_(x * x * x * scale)

    lib.impl("cubic", cubic, "CPU")
    lib.impl("cubic.out", cubic_out, "CPU")
    lib.impl("cubic", lambda x, *, scale=1: torch.empty_like(x), "Meta")
    lib.impl("cubic.out", lambda x, *, scale=1, out: out, "Meta")
    define.lib = lib  # type: ignore[attr-defined]  (keeps the library alive)


def compiled(dynamic: bool) -> str:
    x = torch.randn(4)

    def f(t: torch.Tensor) -> torch.Tensor:
        return torch.ops.repro.cubic(t, scale=0.7)

    torch._dynamo.reset()
    try:
        torch.testing.assert_close(torch.compile(f, fullgraph=True, dynamic=dynamic)(x), f(x))
    except Exception as e:  # dynamo wraps Inductor's error
        return (str(e).strip().splitlines() or [type(e).__name__])[0]
    return "OK"


if __name__ == "__main__":
    define()
    for mode in ("static", "dynamic"):
        print(f"{mode}: {compiled(mode == 'dynamic')}")
