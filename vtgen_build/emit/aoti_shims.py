"""Spelling the AOTInductor C shims of an op library: ``AOTIShims.h``, ``AOTIShims.cpp`` and the
declarations Inductor is given (``custom_ops_to_c_shims``).

The ABI is AOTInductor's, as its generated wrapper calls a shim: every parameter a C type
(``AtenTensorHandle`` for a tensor; ``int64_t`` for ``int``/``SymInt``; ``double`` for ``float`` and
``Scalar``; ``int32_t`` for ``bool`` and the enums; ``const char*`` for ``str``), an optional value
by pointer (``nullptr``: none), a list as a pointer and a length (``<name>_len_``), then one pointer
per result (``ret0``, ...; an operator returning nothing gets one, always ``nullptr``); the function
returns an ``AOTITorchError`` and turns a C++ exception into an error code.  Each shim runs the
operator's kernel for its device below autograd (a typed dispatcher handle looked up once,
redispatched to the device's key), as AOTInductor's own shims run aten's backend kernels.

A stable-ABI library's shims have the same C signatures and are defined in its ``Register<Key>.cpp``
(``stable_shims_section``), on the stable ABI only: each calls the kernel the stable registration
boxes (the author's, or a structured op's generated variant) directly, unboxed.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import __version__
from ..base.names import CPP_KEYWORDS
from ..model.cpp_api import ConstRefC, CType, MutRefC, OptionalC, TupleC
from ..model.native import NativeFunction
from ..model.schema import Argument, ListType, OptionalType, Return, Type
from ..model.type_spellings import C_SHIM, CPP
from ..plan.aoti_shims import AotiShim, AotiShimPlan, SkippedShim
from ..plan.stable import StableShim
from ..plan.stable_types import stable_argument_type, stable_return_type
from .dispatch import kernel_type
from .schema import cpp_string
from .templates import render, template_text

__all__ = [
    "HEADER",
    "STABLE_SECTION",
    "UNIT",
    "aoti_shims_header",
    "aoti_shims_unit",
    "declarations_by_operator",
    "shim_declaration",
    "stable_shims_section",
]


def _c10(name: str) -> str:
    """The C++ type a shim converts a C value to: ATen's, spelled by its c10 name (``c10::ScalarType``)."""
    return CPP[name].aten.replace("at::", "c10::")


HEADER = "AOTIShims.h"
UNIT = "AOTIShims.cpp"
STABLE_SECTION = "StableAOTIShims.cpp"  # the stable mode's: a section of each Register<Key>.cpp

_C_TYPES = {name: t.c for name, t in C_SHIM.items()}  # each schema type's C spelling
_ENUMS = {name: _c10(name) for name in ("ScalarType", "Layout", "MemoryFormat")}
_OPTIONAL_VALUES = {name: _c10(name) for name in ("SymInt", "bool", "Scalar", *_ENUMS)}
_AOTI = "torch::aot_inductor::"
NO_RESULT = "AtenTensorHandle* ret0"  # the result pointer of an operator returning nothing (always nullptr)


def _name(a: Argument) -> str:
    return a.name + "_" if a.name in CPP_KEYWORDS else a.name


def _params(a: Argument) -> list[str]:
    """The C parameters of one schema argument."""
    ty, name = a.type, _name(a)
    if isinstance(ty, OptionalType):
        if isinstance(ty.elem, ListType):
            return [f"const int64_t** {name}", f"int64_t {name}_len_"]
        return [f"{_C_TYPES[str(ty.elem)]}* {name}"]
    if isinstance(ty, ListType):
        return [f"const {_C_TYPES[str(ty.elem)]}* {name}", f"int64_t {name}_len_"]
    return [f"{_C_TYPES[str(ty)]} {name}"]


def _base_value(ty: Type, name: str) -> str:
    text = str(ty)
    if text == "Tensor":
        return f"*{_AOTI}tensor_handle_to_tensor_pointer({name})"
    if text == "SymInt":
        return f"c10::SymInt({name})"
    if text == "Scalar":
        return f"c10::Scalar({name})"
    if text == "bool":
        return f"{name} != 0"
    if text == "str":
        return f"c10::string_view({name})"
    if text in _ENUMS:
        return f"static_cast<{_ENUMS[text]}>({name})"
    return name


def _value(a: Argument) -> str:
    """The C++ expression passing the argument to the operator's kernel."""
    ty, name = a.type, _name(a)
    if isinstance(ty, OptionalType):
        if isinstance(ty.elem, ListType):
            some = f"at::OptionalIntArrayRef(c10::IntArrayRef(*{name}, {name}_len_))"
            return f"{name} ? {some} : at::OptionalIntArrayRef()"
        elem = str(ty.elem)
        if elem == "Tensor":
            return f"optional_tensor({name})"
        return f"optional_value<{_OPTIONAL_VALUES.get(elem, _C_TYPES[elem])}>({name})"
    if isinstance(ty, ListType):
        elem = str(ty.elem)
        if elem == "Tensor":
            return f"tensor_list({name}, {name}_len_)"
        if elem == "SymInt":
            return f"c10::fromIntArrayRefSlow(c10::IntArrayRef({name}, {name}_len_))"
        return f"c10::ArrayRef<{_C_TYPES[elem]}>({name}, {name}_len_)"
    return _base_value(ty, name)


def _result(r: Return, value: str) -> str:
    name = str(r.type)
    if name == "Tensor":
        return f"{_AOTI}new_tensor_handle(std::move({value}))"
    if name == "SymInt":
        return f"{value}.expect_int()"
    if name == "Scalar":
        return f"{value}.toDouble()"
    return value


def _signature(shim: AotiShim) -> str:
    f = shim.function
    params = [p for a in f.func.arguments.all for p in _params(a)]
    returns = [f"{_C_TYPES[str(r.type)]}* ret{i}" for i, r in enumerate(f.func.returns)]
    # An operator returning nothing still gets one result pointer: AOTInductor's wrapper passes a
    # `nullptr` for its one `None` output (every release from 2.10 on); the shim ignores it.
    return f"AOTITorchError {shim.name}({', '.join(params + (returns or [NO_RESULT]))})"


def shim_declaration(shim: AotiShim) -> str:
    """The declaration Inductor pastes into its wrapper (``custom_ops_to_c_shims``)."""
    return _signature(shim)


def _body(shim: AotiShim) -> str:
    f: NativeFunction = shim.function
    keyset = f"c10::DispatchKeySet(c10::DispatchKey::{shim.key})"
    args = ", ".join([keyset, *(_value(a) for a in f.func.arguments.all)])
    name, overload = cpp_string(f"{f.namespace}::{f.name.name}"), cpp_string(f.name.overload)
    lookup = f"c10::Dispatcher::singleton().findSchemaOrThrow({name}, {overload})"
    call = f"op.redispatch({args})"
    returns = f.func.returns
    if not returns:
        stores = [f"    {call};"]
    elif len(returns) == 1:
        stores = [f"    auto result = {call};", f"    *ret0 = {_result(returns[0], 'result')};"]
    else:
        stores = [f"    auto result = {call};"]
        stores += [f"    *ret{i} = {_result(r, f'std::get<{i}>(result)')};" for i, r in enumerate(returns)]
    return "\n".join(
        [
            f"// {f.location}: {shim.operator} on {shim.device} (the {shim.key} kernel)",
            f"VTGEN_AOTI_SHIM_EXPORT {_signature(shim)} {{",
            "  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({",
            f"    static const auto op = {lookup}",
            f"        .typed<{kernel_type(f)}>();",
            *stores,
            "  });",
            "}",
        ]
    )


def _listing(plan: AotiShimPlan) -> str:
    return _skipped(plan.skipped)


def _skipped(skipped: tuple[SkippedShim, ...]) -> str:
    if not skipped:
        return "// Every operator has a shim."
    lines = [f"// {s.location}: {s.operator}: {s.reason}" for s in skipped]
    return "\n".join(["// Operators without a shim (their calls go through the proxy executor):", *lines])


def aoti_shims_header(plan: AotiShimPlan) -> str:
    declarations = "\n".join(f"VTGEN_AOTI_SHIM_EXPORT {_signature(s)};" for s in plan.shims)
    values = {"version": __version__, "declarations": declarations or "// (no operator has a shim)"}
    return render(HEADER, template_text(HEADER), values)


def aoti_shims_unit(plan: AotiShimPlan) -> str:
    values = {
        "version": __version__,
        "shims": "\n\n".join(_body(s) for s in plan.shims),
        "skipped": _listing(plan),
    }
    return render(UNIT, template_text(UNIT), values)


def declarations_by_operator(shims: Iterable[AotiShim]) -> dict[str, list[str]]:
    """Each operator's shim declarations (one per device), for ``custom_ops_to_c_shims``."""
    found: dict[str, list[str]] = {}
    for s in shims:
        found.setdefault(s.operator, []).append(shim_declaration(s))
    return found


# -- the stable mode: the same C signatures, bodies on the stable ABI --------------------------------
# The C side of each argument is the C table (C_SHIM, through _params); the kernel's side is the
# stable dialect's (stable_argument_type, from the C++ table): no table of its own.
def _stable_elem(ty: CType) -> CType:
    return ty.elem if isinstance(ty, (ConstRefC, MutRefC)) else ty


def _stable_argument(a: Argument, kernel: CType) -> str:
    """The expression giving the stable kernel its argument (of type ``kernel``) from the C parameters."""
    ty, name, want = a.type, _name(a), _stable_elem(kernel)
    if isinstance(ty, OptionalType):
        inner = want.elem if isinstance(want, OptionalC) else want
        if str(ty.elem) == "Tensor":
            return f"vtgen_borrow_optional({name})"
        if isinstance(ty.elem, ListType):
            some = f"{inner.cpp()}(*{name}, static_cast<size_t>({name}_len_))"
            return f"{name} ? std::make_optional({some}) : std::nullopt"
        return f"{name} ? std::make_optional(static_cast<{inner.cpp()}>(*{name})) : std::nullopt"
    if isinstance(ty, ListType):
        if str(ty.elem) == "Tensor":
            return f"vtgen_borrow_list({name}, {name}_len_)"
        return f"{want.cpp()}({name}, static_cast<size_t>({name}_len_))"
    if str(ty) == "Tensor":
        return f"vtgen_borrow({name})"
    return f"static_cast<{want.cpp()}>({name})"


def _stable_result(r: Return, value: str, i: int) -> str:
    if str(r.type) == "Tensor":
        return f"vtgen_give({value}, ret{i});"
    return f"*ret{i} = static_cast<{_C_TYPES[str(r.type)]}>({value});"


def _stable_body(call: StableShim, callee: str) -> str:
    shim, f = call.shim, call.shim.function
    what = f"{f.namespace}::{f.name}"
    lines = []
    for i, a in enumerate(f.func.arguments.all):
        kernel = stable_argument_type(a.type, a.is_write, f.location, f"{what}: argument '{a.name}'")
        lines.append(f"auto vtgen_arg{i} = {_stable_argument(a, kernel)};")
    invoke = f"{callee}({', '.join(f'vtgen_arg{i}' for i in range(len(f.func.arguments.all)))})"
    returns = f.func.returns
    if not returns:
        lines.append(f"{invoke};")
    else:
        lines.append(f"auto result = {invoke};")
        many = isinstance(stable_return_type(returns, f.location, what), TupleC)
        lines += [_stable_result(r, f"std::get<{i}>(result)" if many else "result", i) for i, r in enumerate(returns)]
    lines.append("return AOTI_TORCH_SUCCESS;")
    op = cpp_string(shim.operator)
    runs = f"the {call.key} kernel {call.kernel}" if call.kernel else f"structured, the {call.key} variant"
    return "\n".join(
        [
            f"// {f.location}: {shim.operator} on {shim.device} ({runs})",
            f"VTGEN_AOTI_SHIM_EXPORT {_signature(shim)} {{",
            "  try {",
            *(f"    {line}" for line in lines),
            "  } catch (const std::exception& e) {",
            f"    return vtgen_shim_failed({op}, e.what());",
            "  } catch (...) {",
            f'    return vtgen_shim_failed({op}, "an exception not derived from std::exception");',
            "  }",
            "}",
        ]
    )


def stable_shims_section(
    calls: Iterable[tuple[StableShim, str]], skipped: tuple[SkippedShim, ...], key: str, device: bool
) -> str:
    """The shims defined in ``Register<key>.cpp`` (each with the C++ name of the kernel it calls), and,
    in a ``device`` key's unit, the operators without one; empty when there is neither."""
    bodies = [_stable_body(call, callee) for call, callee in calls]
    if not bodies and not device:
        return ""
    values = {
        "key": key,
        "skipped": _skipped(skipped),
        "shims": "\n\n".join(bodies) or f"// (no operator has a shim running a {key} kernel)",
    }
    return "\n" + render(STABLE_SECTION, template_text(STABLE_SECTION), values)
