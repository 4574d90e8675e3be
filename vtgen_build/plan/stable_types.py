"""The stable-ABI dialect's kernel types: each schema type's ``torch::stable`` C++ parameter and return
type (read from the one C++ table, ``model/type_spellings.py``), or a located error naming the type and
the spelling that works (``Scalar`` -> ``float``/``int``, ``SymInt`` -> ``int``, ...)."""

from __future__ import annotations

from ..base.errors import Location, VtgenError
from ..model.cpp_api import VOID, BaseC, Binding, ConstRefC, CppSignature, CType, MutRefC, OptionalC, TupleC
from ..model.native import NativeFunction
from ..model.schema import BaseType, ListType, OptionalType, Return, Type
from ..model.type_spellings import CPP, stable_value_types

__all__ = ["TENSOR", "stable_argument_type", "stable_return_type", "stable_signature"]

_BY_VALUE = stable_value_types()  # schema base types a stable kernel takes by value

TENSOR = BaseC(CPP["Tensor"].stable or "")
INT_LIST = BaseC("torch::headeronly::IntHeaderOnlyArrayRef")
FLOAT_LIST = BaseC("torch::headeronly::HeaderOnlyArrayRef<double>")

# Schema types the stable ABI cannot carry, and the spelling that works.
_UNSUPPORTED = {
    "Scalar": "a StableIValue carries no Scalar: write `float` (or `int`) and convert in the kernel",
    "SymInt": "a stable kernel gets no symbolic ints: write `int` (torch.compile then specializes on it)",
    "SymBool": "a stable kernel gets no symbolic bools: write `bool`",
    "Generator": "vtgen_build's stable mode passes no Generator (torch::stable::Generator needs 2.13): "
    "take a seed as `int`",
    "Dimname": "named dimensions do not cross the stable ABI: write `int` dims",
    "DeviceIndex": "write the index as `int`",
    "Storage": "storages do not cross the stable ABI: pass a `Tensor`",
    "Stream": "streams do not cross the stable ABI (torch/csrc/stable/accelerator.h gives the current one)",
    "QScheme": "quantized types do not cross the stable ABI",
    "ConstQuantizerPtr": "quantized types do not cross the stable ABI",
    "DimVector": "write `int[]`",
    "GraphModule": "graph modules do not cross the stable ABI",
}


# -- kernel types -------------------------------------------------------------------------------
def _unsupported(ty: Type, where: Location, what: str) -> VtgenError:
    base = ty.base().name
    why = _UNSUPPORTED.get(base, "it has no stable-ABI C++ type")
    return VtgenError(f"{what}: '{ty}' cannot be a stable-ABI kernel argument ({why})", where)


def stable_argument_type(ty: Type, mutable: bool, where: Location, what: str) -> CType:
    """The parameter type of a stable kernel for schema type ``ty``, or an error at ``where``."""
    if isinstance(ty, BaseType):
        if ty.name == "Tensor":
            return MutRefC(TENSOR) if mutable else ConstRefC(TENSOR)
        if ty.name in _BY_VALUE:
            return BaseC(_BY_VALUE[ty.name])
    elif isinstance(ty, OptionalType):
        if isinstance(ty.elem, ListType) or (isinstance(ty.elem, BaseType) and ty.elem.name in ("Tensor", *_BY_VALUE)):
            elem = stable_argument_type(ty.elem, False, where, what)
            inner = elem.elem if isinstance(elem, ConstRefC) else elem
            return ConstRefC(OptionalC(inner)) if isinstance(elem, ConstRefC) else OptionalC(inner)
    elif isinstance(ty, ListType) and ty.size is None:
        spelled = str(ty.elem)
        if spelled == "int":
            return INT_LIST
        if spelled == "float":
            return FLOAT_LIST
        if spelled in ("Tensor", "Tensor?"):
            inner = OptionalC(TENSOR) if spelled == "Tensor?" else TENSOR
            return ConstRefC(BaseC(f"std::vector<{inner.cpp()}>"))
    raise _unsupported(ty, where, what)


def stable_return_type(returns: tuple[Return, ...], where: Location, what: str) -> CType:
    """``void``, one value or a ``std::tuple``; returns are owned values (a mutated tensor too)."""

    def one(r: Return) -> CType:
        if isinstance(r.type, BaseType) and r.type.name == "Tensor":
            return TENSOR
        if isinstance(r.type, BaseType) and r.type.name in ("int", "float", "bool"):
            return BaseC(_BY_VALUE[r.type.name])
        if isinstance(r.type, ListType) and str(r.type.elem) == "Tensor" and r.type.size is None:
            return BaseC("std::vector<torch::stable::Tensor>")
        raise _unsupported(r.type, where, f"{what} returns")

    if not returns:
        return VOID
    if len(returns) == 1:
        return one(returns[0])
    return TupleC(tuple(one(r) for r in returns))


def _no_written_return(fn: NativeFunction, what: str) -> None:
    """A mutating op returns nothing here: ``-> Tensor(a!)`` (PyTorch's out= and in-place convention) passes
    the eager checks but fails opcheck's test_aot_dispatch_dynamic, torch.compile functionalizing only a
    mutating custom op that returns nothing (the classic mode's Functionalize kernel has no stable form)."""
    written = [str(r) for r in fn.func.returns if r.annotation is not None and r.annotation.is_write]
    if written:
        raise VtgenError(
            f"{what}: returns '{', '.join(written)}': a stable-ABI op cannot return a tensor it writes "
            "(torch.compile and opcheck's test_aot_dispatch_dynamic functionalize a mutating custom op only when "
            "it returns nothing); write '-> ()': callers still get the result in the argument",
            fn.location,
        )


def stable_signature(fn: NativeFunction, name: str) -> CppSignature:
    """A plain op's kernel: its schema's arguments in order, its returns."""
    what = f"{fn.namespace}::{fn.name}"
    _no_written_return(fn, what)
    params = tuple(
        Binding(stable_argument_type(a.type, a.is_write, fn.location, f"{what}: argument '{a.name}'"), a.name)
        for a in fn.func.arguments.all
    )
    return CppSignature(name, stable_return_type(fn.func.returns, fn.location, what), params)
