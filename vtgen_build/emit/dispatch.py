"""Spelling calls into the dispatcher: ``at::redispatch::`` for aten, a typed handle for other namespaces.

An op library's operators have no generated C++ API in libtorch (``<ns>::redispatch::op``
would be a symbol nobody defines), so generated code reaches them through the
dispatcher: a handle looked up once (a function-local static) and typed with the
kernel signature, which the dispatcher checks against the schema when it is made.
"""

from __future__ import annotations

from ..model.cpp_api import dispatcher_arguments, dispatcher_returns
from ..model.native import NativeFunction

__all__ = ["handle_declaration", "kernel_type", "redispatch_call", "redispatch_name"]

HANDLE = "_op"


def kernel_type(f: NativeFunction) -> str:
    """The C++ function type of ``f``'s kernels (without the DispatchKeySet): ``at::Tensor (const at::Tensor &)``."""
    return f"{dispatcher_returns(f).cpp()} ({', '.join(b.type.cpp() for b in dispatcher_arguments(f))})"


def handle_declaration(f: NativeFunction, var: str = HANDLE) -> str:
    """``static const auto <var> = <f's typed dispatcher handle>;``."""
    name, overload = f"{f.namespace}::{f.name.name}", f.name.overload
    lookup = f'c10::Dispatcher::singleton().findSchemaOrThrow("{name}", "{overload}")'
    return f"static const auto {var} = {lookup}.typed<{kernel_type(f)}>();"


def redispatch_name(f: NativeFunction) -> str:
    """The ``at::redispatch::`` function taking the dispatcher's arguments: ``_symint``, ``_outf``."""
    func = f.func
    name = func.name.name + ("_symint" if func.has_symint() else "")
    return name + "_outf" if func.arguments.out else name


def redispatch_call(f: NativeFunction, keyset: str, args: str, var: str = HANDLE) -> str:
    """Call ``f`` below ``keyset``; outside aten ``var`` names the handle of :func:`handle_declaration`."""
    if f.namespace == "aten":
        return f"at::redispatch::{redispatch_name(f)}({keyset}, {args})"
    return f"{var}.redispatch({keyset}, {args})"
