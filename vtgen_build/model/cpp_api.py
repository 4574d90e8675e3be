"""Schema → C++: the dispatcher API, the public ``at::`` API and Tensor methods.

Pure functions over the schema model.  C++ types are a small sum type
(:class:`CType`); only :meth:`CType.cpp` spells them.  The spellings match the
ones PyTorch's generated headers use (``const at::Tensor &``,
``::std::optional<int64_t>``, ``c10::SymIntArrayRef``, ...), so kernels we emit
have the same signatures as the kernels they replace.

Three views of one schema:

* **dispatcher** — what a VariableType kernel receives: every argument in
  schema order, SymInt kept symbolic, no defaults, no TensorOptions grouping.
* **at:: functions** — :func:`cpp_signatures` gives the overload set of one
  op: the faithful one (out arguments last, ``_outf`` for out= ops, no
  defaults) and the grouped one (out arguments first as ``_out``;
  dtype/layout/device/pin_memory collapsed into ``at::TensorOptions``;
  defaults), each as a plain int and (for ops with SymInts) a ``_symint`` form.
* **Tensor methods** — the grouped/faithful signatures without ``self``,
  declared ``const``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .native import NativeFunction
from .schema import Argument, BaseType, FunctionSchema, ListType, OptionalType, Return, Type
from .type_spellings import CPP

__all__ = [
    "ArrayC",
    "ArrayRefC",
    "BaseC",
    "Binding",
    "CType",
    "ConstRefC",
    "CppSignature",
    "ListC",
    "MutRefC",
    "OptionalC",
    "TupleC",
    "VectorC",
    "argument_type",
    "cpp_signatures",
    "default_expr",
    "dispatcher_arguments",
    "dispatcher_returns",
    "dispatcher_signature",
    "has_method",
    "method_signatures",
    "native_signature",
    "redispatch_signatures",
    "return_type",
    "returns_type",
]


# -- C++ types ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CType:
    """A C++ type; ``cpp()`` is its spelling."""

    def cpp(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class BaseC(CType):
    name: str  # qualified: ``at::Tensor``, ``int64_t``

    def cpp(self) -> str:
        return self.name


@dataclass(frozen=True)
class ConstRefC(CType):
    elem: CType

    def cpp(self) -> str:
        return f"const {self.elem.cpp()} &"


@dataclass(frozen=True)
class MutRefC(CType):
    elem: CType

    def cpp(self) -> str:
        return f"{self.elem.cpp()} &"


@dataclass(frozen=True)
class OptionalC(CType):
    elem: CType

    def cpp(self) -> str:
        return f"::std::optional<{self.elem.cpp()}>"


@dataclass(frozen=True)
class ArrayRefC(CType):
    elem: CType

    def cpp(self) -> str:
        return f"at::ArrayRef<{self.elem.cpp()}>"


@dataclass(frozen=True)
class ListC(CType):
    elem: CType

    def cpp(self) -> str:
        return f"c10::List<{self.elem.cpp()}>"


@dataclass(frozen=True)
class VectorC(CType):
    elem: CType

    def cpp(self) -> str:
        return f"::std::vector<{self.elem.cpp()}>"


@dataclass(frozen=True)
class ArrayC(CType):
    elem: CType
    size: int

    def cpp(self) -> str:
        return f"::std::array<{self.elem.cpp()},{self.size}>"


@dataclass(frozen=True)
class TupleC(CType):
    elems: tuple[CType, ...]

    def cpp(self) -> str:
        return f"::std::tuple<{','.join(e.cpp() for e in self.elems)}>"


TENSOR = BaseC("at::Tensor")
SCALAR = BaseC("at::Scalar")
VOID = BaseC("void")
TENSOR_OPTIONS = BaseC("at::TensorOptions")


def _value_type(ty: Type, symint: bool) -> CType | None:
    """The by-value C++ type of ``ty``, or None when it is passed by reference or as a view."""
    if isinstance(ty, BaseType):
        if ty.name == "SymInt":
            return BaseC("c10::SymInt" if symint else "int64_t")
        spelled = CPP.get(ty.name)
        return BaseC(spelled.aten) if spelled is not None and spelled.by_value else None
    if isinstance(ty, OptionalType):
        elem = _value_type(ty.elem, symint)
        return None if elem is None else OptionalC(elem)
    if isinstance(ty, ListType) and str(ty.elem) == "bool":
        if ty.size is None:
            raise ValueError("a bool[] needs a size")
        return ArrayC(BaseC("bool"), ty.size)
    return None


def argument_type(
    ty: Type, *, mutable: bool, symint: bool, const_mutable: bool = False, ilistref: bool = False
) -> CType:
    """The parameter type of an argument of schema type ``ty``.

    ``mutable`` is true for ``Tensor(a!)``; ``const_mutable`` gives such
    tensors as ``const at::Tensor &`` (``use_const_ref_for_mutable_tensors``);
    ``ilistref`` gives ``Tensor[]`` as ``const at::ITensorListRef &`` (ops of a
    structured group).
    """
    value = _value_type(ty, symint)
    if value is not None:
        return value
    if isinstance(ty, BaseType):
        if ty.name == "Tensor":
            return MutRefC(TENSOR) if mutable and not const_mutable else ConstRefC(TENSOR)
        if ty.name == "Scalar":
            return ConstRefC(SCALAR)
        raise ValueError(f"no C++ type for '{ty}'")
    if isinstance(ty, OptionalType):
        return _optional_argument_type(ty, mutable, symint, const_mutable)
    if isinstance(ty, ListType):
        return _list_argument_type(ty, mutable, symint, ilistref)
    raise ValueError(f"no C++ type for '{ty}'")


def _optional_argument_type(ty: OptionalType, mutable: bool, symint: bool, const_mutable: bool) -> CType:
    elem = str(ty.elem)
    if elem == "Tensor":
        return MutRefC(TENSOR) if mutable and not const_mutable else ConstRefC(OptionalC(TENSOR))
    if elem == "Scalar":
        return ConstRefC(OptionalC(SCALAR))
    if isinstance(ty.elem, ListType) and str(ty.elem.elem) in ("int", "SymInt"):
        sym = symint and str(ty.elem.elem) == "SymInt"
        return BaseC("at::OptionalSymIntArrayRef" if sym else "at::OptionalIntArrayRef")
    return OptionalC(argument_type(ty.elem, mutable=mutable, symint=symint))


def _list_argument_type(ty: ListType, mutable: bool, symint: bool, ilistref: bool) -> CType:
    elem = str(ty.elem)
    if elem == "int" or (elem == "SymInt" and not symint):
        return BaseC("at::IntArrayRef")
    if elem == "SymInt":
        return BaseC("c10::SymIntArrayRef")
    if elem == "Tensor":
        return ConstRefC(BaseC("at::ITensorListRef")) if ilistref else BaseC("at::TensorList")
    if elem == "Tensor?":
        return ConstRefC(ListC(OptionalC(TENSOR)))
    if elem == "Scalar":
        return ArrayRefC(SCALAR)
    return ArrayRefC(argument_type(ty.elem, mutable=mutable, symint=symint))


def return_type(ret: Return) -> CType:
    """One return; SymInts are always returned symbolic."""
    value = _value_type(ret.type, symint=True)
    if value is not None:
        return value
    ty = ret.type
    if isinstance(ty, BaseType) and ty.name == "Tensor":
        return MutRefC(TENSOR) if ret.is_write else TENSOR
    if isinstance(ty, BaseType) and ty.name == "Scalar":
        return SCALAR
    if isinstance(ty, ListType) and ty.size is None and not ret.is_write:
        return VectorC(return_type(Return(None, ty.elem)))
    if isinstance(ty, OptionalType) and str(ty.elem) == "Tensor":
        return OptionalC(return_type(Return(None, ty.elem, ret.annotation)))
    raise ValueError(f"no C++ return type for '{ret}'")


def returns_type(returns: tuple[Return, ...]) -> CType:
    if not returns:
        return VOID
    if len(returns) == 1:
        return return_type(returns[0])
    return TupleC(tuple(return_type(r) for r in returns))


# -- signatures -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Binding:
    """One C++ parameter: its type, name and default expression (None: no default)."""

    type: CType
    name: str
    default: str | None = None

    def decl(self, *, with_default: bool = True) -> str:
        default = f"={self.default}" if with_default and self.default is not None else ""
        return f"{self.type.cpp()} {self.name}{default}"


@dataclass(frozen=True)
class CppSignature:
    """A C++ function (or method when ``method``) signature."""

    name: str
    returns: CType
    params: tuple[Binding, ...]
    method: bool = False

    def decl(self, *, prefix: str = "") -> str:
        """``ret name(params)`` (``const`` for a method), with defaults."""
        params = ", ".join(b.decl() for b in _trailing_defaults(self.params))
        const = " const" if self.method else ""
        return f"{prefix}{self.returns.cpp()} {self.name}({params}){const}"

    def types(self) -> tuple[str, ...]:
        """The parameter types: two overloads with equal ``types()`` collide."""
        return tuple(b.type.cpp() for b in self.params)


def _trailing_defaults(params: tuple[Binding, ...]) -> tuple[Binding, ...]:
    """C++ allows defaults only on a trailing run; earlier ones are dropped."""
    result = list(params)
    seen_required = False
    for i in range(len(result) - 1, -1, -1):
        if result[i].default is None:
            seen_required = True
        elif seen_required:
            result[i] = replace(result[i], default=None)
    return tuple(result)


_DEFAULTS = {
    "False": "false",
    "True": "true",
    "None": "::std::nullopt",
    "Mean": "at::Reduction::Mean",
    "[]": "{}",
    "contiguous_format": "c10::MemoryFormat::Contiguous",
    "long": "at::kLong",
}


def default_expr(default: str, ty: Type, *, symint: bool) -> str:
    """The C++ expression for a schema default of type ``ty``."""
    if default == "None" and str(ty) == "Tensor?":
        return "{}"
    if isinstance(ty, BaseType) and ty.name == "str" and default[:1] == default[-1:] == "'" and len(default) >= 2:
        return _single_quoted_to_cpp(default[1:-1])
    if isinstance(ty, OptionalType):
        return "::std::nullopt" if default == "None" else default_expr(default, ty.elem, symint=symint)
    if isinstance(ty, ListType):
        if default.startswith("[") and default.endswith("]"):
            return "{" + default[1:-1] + "}"
        if symint and default.isdigit() and str(ty.elem) == "SymInt":
            return f"c10::SymInt({default})"
    return _DEFAULTS.get(default, default)


def _single_quoted_to_cpp(body: str) -> str:
    """A schema ``'...'`` string as a C++ ``"..."`` literal."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append("'" if nxt == "'" else body[i : i + 2])
            i += 2
            continue
        out.append('\\"' if ch == '"' else ch)
        i += 1
    return '"' + "".join(out) + '"'


def _binding(fn: NativeFunction, arg: Argument, *, symint: bool, defaults: bool) -> Binding:
    default = None
    if defaults and arg.default is not None and arg.name not in fn.cpp_no_default_args:
        default = default_expr(arg.default, arg.type, symint=symint)
    return Binding(_fn_argument_type(fn, arg, symint=symint), arg.name, default)


def _fn_argument_type(fn: NativeFunction, arg: Argument, *, symint: bool) -> CType:
    structured_group = fn.structured or fn.structured_delegate is not None
    return argument_type(
        arg.type,
        mutable=arg.is_write,
        symint=symint,
        const_mutable=fn.use_const_ref_for_mutable_tensors,
        ilistref=structured_group,
    )


def _options_binding(fn: NativeFunction) -> Binding:
    group = fn.func.arguments.kwarg_only
    start = fn.func.arguments.tensor_options_start()
    assert start is not None
    window = group[start : start + 4]
    default: str | None = None
    if all(a.default == "None" for a in window):
        default = "{}"
    elif window[0].default == "long":
        default = "at::kLong"
    return Binding(TENSOR_OPTIONS, "options", default)


def _cpp_name(func: FunctionSchema, *, symint: bool, faithful: bool) -> str:
    name = func.name.name + ("_symint" if symint else "")
    if func.arguments.out:
        name += "_outf" if faithful else "_out"
    return name


def _signature(fn: NativeFunction, *, symint: bool, faithful: bool, method: bool) -> CppSignature:
    args = fn.func.arguments
    ordered = args.non_out + args.out if faithful else args.out + args.non_out
    start = args.tensor_options_start()
    grouped = (
        frozenset(a.name for a in args.kwarg_only[start : start + 4])
        if start is not None and not faithful
        else frozenset()
    )
    params: list[Binding] = []
    for arg in ordered:
        if method and arg is args.self_arg:
            continue
        if arg.name in grouped:
            if arg.name == "dtype":
                params.append(_options_binding(fn))
            continue
        params.append(_binding(fn, arg, symint=symint, defaults=not faithful))
    name = _cpp_name(fn.func, symint=symint, faithful=faithful)
    return CppSignature(name, returns_type(fn.func.returns), tuple(params), method)


def _symint_choices(func: FunctionSchema) -> tuple[bool, ...]:
    return (False, True) if func.has_symint() else (False,)


def _unique(signatures: list[CppSignature]) -> tuple[CppSignature, ...]:
    seen: set[tuple[str, tuple[str, ...]]] = set()
    result = []
    for sig in signatures:
        key = (sig.name, sig.types())
        if key not in seen:
            seen.add(key)
            result.append(sig)
    return tuple(result)


def cpp_signatures(fn: NativeFunction) -> tuple[CppSignature, ...]:
    """The ``at::`` overloads of ``fn``: grouped then faithful, each plain and ``_symint``."""
    sigs = [_signature(fn, symint=s, faithful=f, method=False) for f in (False, True) for s in _symint_choices(fn.func)]
    return _unique(sigs)


def has_method(fn: NativeFunction) -> bool:
    return "method" in fn.variants and fn.func.arguments.self_arg is not None


def method_signatures(fn: NativeFunction) -> tuple[CppSignature, ...]:
    """The Tensor methods of ``fn`` (empty unless it has a method variant)."""
    if not has_method(fn):
        return ()
    sigs = [_signature(fn, symint=s, faithful=f, method=True) for f in (False, True) for s in _symint_choices(fn.func)]
    return _unique(sigs)


def redispatch_signatures(fn: NativeFunction) -> tuple[CppSignature, ...]:
    """The ``at::redispatch::`` overloads: the ``at::`` ones with a leading DispatchKeySet."""
    ks = Binding(BaseC("c10::DispatchKeySet"), "dispatchKeySet")
    return tuple(replace(s, params=(ks, *s.params)) for s in cpp_signatures(fn))


def dispatcher_arguments(fn: NativeFunction) -> tuple[Binding, ...]:
    """A kernel's parameters: schema order, symbolic, ungrouped, no defaults."""
    return tuple(Binding(_fn_argument_type(fn, a, symint=True), a.name) for a in fn.func.arguments.all)


def dispatcher_returns(fn: NativeFunction) -> CType:
    """A kernel's return type; ``use_const_ref_for_mutable_tensors`` returns ``const Tensor &``."""
    result = returns_type(fn.func.returns)
    if fn.use_const_ref_for_mutable_tensors and result == MutRefC(TENSOR):
        return ConstRefC(TENSOR)
    return result


def native_signature(fn: NativeFunction, kernel: str) -> CppSignature:
    """The native C++ signature of ``fn``'s kernel named ``kernel``: schema order, out arguments last,
    ``SymInt`` as ``c10::SymInt`` only when the kernel name ends in ``_symint``, else ``int64_t``."""
    symint = kernel.endswith("_symint")
    params = tuple(
        Binding(
            argument_type(
                a.type, mutable=a.is_write, symint=symint, const_mutable=fn.use_const_ref_for_mutable_tensors
            ),
            a.name,
        )
        for a in fn.func.arguments.all
    )
    return CppSignature(kernel, dispatcher_returns(fn), params)


def dispatcher_signature(fn: NativeFunction, name: str) -> CppSignature:
    """A kernel of ``fn`` named ``name`` as the dispatcher calls it (``dispatcher_arguments``)."""
    return CppSignature(name, dispatcher_returns(fn), dispatcher_arguments(fn))
