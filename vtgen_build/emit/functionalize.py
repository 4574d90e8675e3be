"""Spelling ``RegisterFunctionalize.cpp``: one Functionalize kernel per planned out= operator."""

from __future__ import annotations

from collections.abc import Iterable

from .. import __version__
from ..plan.functionalize import FunctionalizedOut
from .schema import boxed_impl_blocks, cpp_string
from .templates import render, template_text

__all__ = ["UNIT", "register_functionalize"]

UNIT = "RegisterFunctionalize.cpp"


def _kernel(f: FunctionalizedOut) -> str:
    functional = f"{cpp_string(f'{f.namespace}::{f.functional}')}, {cpp_string(f.overload)}"
    return (
        f"void {f.kernel}(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {{\n"
        f"  static const c10::OperatorHandle functional =\n"
        f"      c10::Dispatcher::singleton().findSchemaOrThrow({functional});\n"
        f"  functionalize_out(op, functional, stack);\n"
        f"}}"
    )


def _registrations(planned: tuple[FunctionalizedOut, ...]) -> str:
    blocks = boxed_impl_blocks("Functionalize", ((f.namespace, f.out, f.kernel) for f in planned))
    return "\n\n".join(blocks) or "// No out= operator with a functional sibling."


def register_functionalize(planned: Iterable[FunctionalizedOut]) -> str:
    planned = tuple(planned)
    values = {
        "version": __version__,
        "kernels": "\n\n".join(_kernel(f) for f in planned),
        "registrations": _registrations(planned),
    }
    return render(UNIT, template_text(UNIT), values)
