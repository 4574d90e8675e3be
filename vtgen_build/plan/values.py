"""The C++ value types of arguments and returns, as formulas and saved members see them.

Formulas are C++ expressions over the op's arguments in the C++ API (SymInt
flavour, tensor options grouped into one ``options``), so the plan needs each
argument's C++ type to decide how a value is saved on a Node.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.native import NativeFunction
from ..model.schema import Argument, BaseType, ListType, OptionalType, Return, Type
from ..model.type_spellings import CPP

__all__ = ["CppValue", "cpp_arguments", "cpp_return_names", "saved_member_type", "value_type"]


@dataclass(frozen=True)
class CppValue:
    """A named C++ value (an argument or a return) and its owning C++ type."""

    name: str
    cpp_type: str
    schema_type: Type | None  # None for the grouped TensorOptions


def value_type(ty: Type, *, ilistref: bool = False) -> str:
    """The C++ API type of a schema type, without const and reference."""
    if isinstance(ty, BaseType):
        spelled = CPP.get(ty.name)
        return spelled.aten if spelled is not None else f"at::{ty.name}"
    if isinstance(ty, OptionalType):
        return _optional_type(ty.elem)
    assert isinstance(ty, ListType)
    return _list_type(ty, ilistref)


def _optional_type(elem: Type) -> str:
    if isinstance(elem, ListType):
        name = elem.elem.base().name if isinstance(elem.elem, BaseType) else ""
        if name == "int":
            return "at::OptionalIntArrayRef"
        if name == "SymInt":
            return "at::OptionalSymIntArrayRef"
        return f"::std::optional<{_list_type(elem, False)}>"
    return f"::std::optional<{value_type(elem)}>"


def _list_type(ty: ListType, ilistref: bool) -> str:
    elem = ty.elem
    if isinstance(elem, OptionalType) and str(elem.elem) == "Tensor":
        return "c10::List<::std::optional<at::Tensor>>"
    name = str(elem)
    if name == "Tensor":
        return "at::ITensorListRef" if ilistref else "at::TensorList"
    if name == "bool" and ty.size is not None:
        return f"::std::array<bool,{ty.size}>"
    fixed = {"int": "at::IntArrayRef", "SymInt": "c10::SymIntArrayRef", "Dimname": "at::DimnameList"}
    return fixed.get(name, f"at::ArrayRef<{value_type(elem)}>")


def cpp_arguments(f: NativeFunction) -> tuple[CppValue, ...]:
    """The C++ API arguments (out arguments first; tensor options grouped as ``options``)."""
    args = f.func.arguments
    ilistref = f.structured or f.structured_delegate is not None
    start = args.tensor_options_start()
    kwargs: list[Argument | None] = list(args.kwarg_only)
    if start is not None:
        kwargs[start : start + 4] = [None]
    values = [_value(a, ilistref) for a in args.out + args.positional]
    values += [_value(a, ilistref) if a else CppValue("options", "at::TensorOptions", None) for a in kwargs]
    return tuple(values)


def _value(a: Argument, ilistref: bool) -> CppValue:
    return CppValue(a.name, value_type(a.type, ilistref=ilistref), a.type)


def cpp_return_names(f: NativeFunction) -> tuple[str, ...]:
    """Names formulas use for outputs: out arguments for out= ops, else ``result``/``resultN``/names."""
    returns = f.func.returns
    arg_names = {a.name for a in f.func.arguments.all}
    names = []
    for i, r in enumerate(returns):
        names.append(_return_name(f, i, r, len(returns), arg_names))
    return tuple(names)


def _return_name(f: NativeFunction, i: int, r: Return, count: int, arg_names: set[str]) -> str:
    if f.func.name.inplace:
        return "self"
    if f.func.arguments.out:
        return f.func.arguments.out[i].name if i < len(f.func.arguments.out) else f"result{i}"
    if r.name is not None:
        return f"{r.name}_return" if r.name in arg_names else r.name
    return "result" if count == 1 else f"result{i}"


def saved_member_type(cpp_type: str, *, is_output: bool) -> tuple[str, ...]:
    """The member declaration types a saved value needs on a Node (a list may add a flag)."""
    if cpp_type in ("at::Tensor", "::std::optional<at::Tensor>") or (cpp_type == "at::Scalar" and is_output):
        return ("SavedVariable",)
    if cpp_type in (
        "at::TensorList",
        "at::ITensorListRef",
        "::std::vector<at::Tensor>",
        "c10::List<::std::optional<at::Tensor>>",
    ):
        return ("std::vector<SavedVariable>", "bool")
    simple = {
        "at::IntArrayRef": "std::vector<int64_t>",
        "c10::SymIntArrayRef": "std::vector<c10::SymInt>",
        "at::OptionalIntArrayRef": "c10::OptionalArray<int64_t>",
        "at::OptionalSymIntArrayRef": "c10::OptionalArray<c10::SymInt>",
        "::std::optional<c10::SymIntArrayRef>": "c10::OptionalArray<c10::SymInt>",
        "::std::optional<at::ArrayRef<double>>": "c10::OptionalArray<double>",
        "c10::string_view": "std::string",
        "::std::optional<c10::string_view>": "std::optional<std::string>",
    }
    if cpp_type == "at::ArrayRef<at::Scalar>":
        return ("std::vector<at::Scalar>", "bool")
    return (simple.get(cpp_type, cpp_type),)
