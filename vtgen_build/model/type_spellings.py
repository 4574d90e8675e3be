"""Each schema base type as the generated code spells it: one table a target language.

* C++ (``CPP``): a row per schema base type with its ATen spelling (the classic dialect's, and of the
  C++ API formulas see), its LibTorch stable-ABI spelling (None: the type does not cross that ABI)
  and whether an ATen kernel takes it by value.  Every C++ type table of the package reads this one.
* C (``C_SHIM``): AOTInductor's C shim ABI, a row per type with a C spelling and where the shim
  emitter (``emit/aoti_shims.py``) can carry it: as an optional (by pointer), a list element
  (pointer + length), a result.  The plan's list of what gets a shim (``plan/aoti_shims.py``) is
  derived from it, so the two cannot drift apart.

Python's table is the typed API's (``emit/python_api.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["CPP", "C_SHIM", "CShimType", "CppType", "aten_value_types", "stable_value_types"]


@dataclass(frozen=True)
class CppType:
    """One schema base type in C++."""

    aten: str
    stable: str | None = None  # None: no stable-ABI type (plan/stable_types.py says what to write)
    by_value: bool = True  # an ATen kernel takes it by value (else by reference, or as SymInt says)


CPP: Mapping[str, CppType] = MappingProxyType(
    {
        "Tensor": CppType("at::Tensor", "torch::stable::Tensor", by_value=False),
        "int": CppType("int64_t", "int64_t"),
        "SymInt": CppType("c10::SymInt", by_value=False),  # int64_t unless the kernel is a _symint one
        "SymBool": CppType("c10::SymBool"),
        "float": CppType("double", "double"),
        "bool": CppType("bool", "bool"),
        "str": CppType("c10::string_view", "std::string_view"),
        "Scalar": CppType("at::Scalar", by_value=False),
        "ScalarType": CppType("at::ScalarType", "torch::headeronly::ScalarType"),
        "Layout": CppType("at::Layout", "torch::headeronly::Layout"),
        "Device": CppType("at::Device", "torch::stable::Device"),
        "DeviceIndex": CppType("at::DeviceIndex"),
        "MemoryFormat": CppType("at::MemoryFormat", "torch::headeronly::MemoryFormat"),
        "Generator": CppType("at::Generator"),
        "Dimname": CppType("at::Dimname", by_value=False),
        "Storage": CppType("at::Storage"),
        "Stream": CppType("at::Stream"),
        "QScheme": CppType("at::QScheme"),
        "ConstQuantizerPtr": CppType("at::ConstQuantizerPtr", by_value=False),
        "GraphModule": CppType("at::GraphModule"),
        "DimVector": CppType("at::DimVector"),
    }
)


def aten_value_types() -> dict[str, str]:
    """The schema base types an ATen kernel takes by value, and their C++ spelling."""
    return {name: t.aten for name, t in CPP.items() if t.by_value}


def stable_value_types() -> dict[str, str]:
    """The schema base types a stable-ABI kernel takes by value (all but ``Tensor``), and their spelling."""
    return {name: t.stable for name, t in CPP.items() if t.stable is not None and name != "Tensor"}


@dataclass(frozen=True)
class CShimType:
    """One schema base type in AOTInductor's C shim ABI."""

    c: str
    optional: bool = True  # ``T?``: passed by pointer (nullptr: none)
    element: bool = False  # ``T[]``: passed as a pointer and a length
    result: bool = False  # returned through a pointer


C_SHIM: Mapping[str, CShimType] = MappingProxyType(
    {
        "Tensor": CShimType("AtenTensorHandle", element=True, result=True),
        "int": CShimType("int64_t", element=True, result=True),
        "SymInt": CShimType("int64_t", element=True, result=True),
        "float": CShimType("double", element=True, result=True),
        "Scalar": CShimType("double", result=True),
        "bool": CShimType("int32_t", result=True),
        "str": CShimType("const char*", optional=False),
        "ScalarType": CShimType("int32_t"),
        "Layout": CShimType("int32_t"),
        "MemoryFormat": CShimType("int32_t"),
    }
)
