"""Structured op groups: one ``structured: True`` out= op and its ``structured_delegate`` variants.

The library author writes two kinds of function for a group, in the op namespace:

* one **meta function**, ``<op>_meta``, that checks the inputs and decides each output's sizes
  and options (dtype, device, layout): ``void softsign_meta(vtgen::MetaOutputs& outputs, const
  at::Tensor& self)`` calls ``outputs.set(0, self.sym_sizes(), self.options())``.  With
  ``structured_inherits: TensorIteratorBase`` it receives an ``at::TensorIteratorConfig&`` instead,
  whose outputs are already added: it adds the inputs and the iterator's settings.  With
  ``precomputed`` it returns ``<op>_precomputed``, a struct of the listed fields;
* one **impl per backend**, named in the out= op's ``dispatch:`` (``CPU: softsign_out``), that
  writes the result into outputs the generated code allocated (or checked, or resized):
  ``void softsign_out(const at::Tensor& self, const at::Tensor& out)``.  A TensorIterator group's
  impl receives the built ``at::TensorIteratorBase&`` first; ``precomputed`` fields replace the
  arguments they were computed from (fields without ``arg ->`` come after the other inputs).

The functional, in-place and out= kernels of every backend, and the Meta kernel of each variant
(the meta function alone), are generated (``vtgen_build/emit/structured.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..base.errors import Location, VtgenError, did_you_mean
from ..model.cpp_api import TENSOR, VOID, BaseC, Binding, ConstRefC, CppSignature, MutRefC, argument_type
from ..model.native import COMPOSITE_KEYS, Dispatch, NativeFunction
from ..model.schema import SchemaKind
from ..model.type_spellings import CPP

__all__ = ["META_OUTPUTS", "PrecomputedField", "StructuredGroup", "plan_structured"]

META_OUTPUTS = "vtgen::MetaOutputs"  # what a plain meta function fills in (declared in NativeKernels.h)
ITERATOR_CONFIG = "at::TensorIteratorConfig"

# C++ types a `precomputed` field may have (schema spelling → C++: ATen's, a list owned).
_FIELD_TYPES = {
    **{name: CPP[name].aten for name in ("int", "bool", "float", "ScalarType", "Tensor")},
    "int[]": f"std::vector<{CPP['int'].aten}>",
}


@dataclass(frozen=True)
class PrecomputedField:
    """One value the meta function computes for the impls: ``replaces`` is the argument it stands for."""

    cpp_type: str
    name: str
    replaces: str | None


@dataclass(frozen=True)
class StructuredGroup:
    out: NativeFunction
    functional: NativeFunction | None
    inplace: NativeFunction | None
    impls: tuple[Dispatch, ...]  # backend key → impl name (the out= op's dispatch:)
    iterator: bool  # structured_inherits: TensorIteratorBase
    precomputed: tuple[PrecomputedField, ...]

    @property
    def meta_name(self) -> str:
        return f"{self.out.name.base}_meta"

    @property
    def precomputed_name(self) -> str:
        return f"{self.out.name.base}_precomputed"

    @property
    def members(self) -> tuple[NativeFunction, ...]:
        return tuple(f for f in (self.functional, self.inplace, self.out) if f is not None)

    def inputs(self) -> tuple[Binding, ...]:
        """The non-out arguments, as the meta function and the generated kernels pass them."""
        return tuple(
            Binding(argument_type(a.type, mutable=False, symint=False, ilistref=True), a.name)
            for a in self.out.func.arguments.non_out
        )

    def meta_signature(self) -> CppSignature:
        first = MutRefC(BaseC(ITERATOR_CONFIG if self.iterator else META_OUTPUTS))
        returns = BaseC(self.precomputed_name) if self.precomputed else VOID
        return CppSignature(
            self.meta_name, returns, (Binding(first, "config" if self.iterator else "outputs"), *self.inputs())
        )

    def impl_arguments(self) -> tuple[Binding, ...]:
        """The impl's inputs: precomputed fields replace the arguments they stand for."""
        result: list[Binding] = []
        for b in self.inputs():
            replacing = [f for f in self.precomputed if f.replaces == b.name]
            result.extend([_field_binding(f) for f in replacing] if replacing else [b])
        result.extend(_field_binding(f) for f in self.precomputed if f.replaces is None)
        return tuple(result)

    def impl_signature(self, impl: str) -> CppSignature:
        lead = (Binding(MutRefC(BaseC("at::TensorIteratorBase")), "iter"),) if self.iterator else ()
        outs = tuple(Binding(ConstRefC(TENSOR), a.name) for a in self.out.func.arguments.out)
        return CppSignature(impl, VOID, (*lead, *self.impl_arguments(), *outs))


def _field_binding(f: PrecomputedField) -> Binding:
    """Numbers and scalar types by value, tensors and lists by const reference."""
    by_value = f.cpp_type in ("int64_t", "bool", "double", "at::ScalarType")
    return Binding(BaseC(f.cpp_type) if by_value else ConstRefC(BaseC(f.cpp_type)), f.name)


def plan_structured(functions: Iterable[NativeFunction]) -> tuple[StructuredGroup, ...]:
    """Every structured group, in yaml order of its out= op; located errors for inconsistent entries."""
    declared = [f for f in functions if not f.generated]
    outs = {(f.namespace, str(f.name)): f for f in declared if f.structured}
    delegates: dict[tuple[str, str], list[NativeFunction]] = {}
    for f in declared:
        if f.structured_delegate is None:
            continue
        key = (f.namespace, str(f.structured_delegate))
        if key not in outs:
            names = [n for ns, n in outs if ns == f.namespace]
            raise VtgenError(
                f"structured_delegate '{f.structured_delegate}' is not a 'structured: True' op"
                f"{did_you_mean(str(f.structured_delegate), names)}",
                f.location,
            )
        delegates.setdefault(key, []).append(f)
    return tuple(_group(out, delegates.get(key, [])) for key, out in outs.items())


def _group(out: NativeFunction, delegates: list[NativeFunction]) -> StructuredGroup:
    if out.kind is not SchemaKind.out:
        raise VtgenError("'structured: True' belongs on the out= variant of an op", out.location)
    if out.func.has_symint():
        raise VtgenError(
            "a structured op takes int, not SymInt (its meta function and impls are int64_t)", out.location
        )
    for d in out.dispatch:
        if d.key == "Meta" or d.key in COMPOSITE_KEYS:
            why = "is generated from its meta function" if d.key == "Meta" else "makes no sense for a structured op"
            raise VtgenError(
                f"a structured op's {d.key} kernel {why}; name only backend impls", d.location or out.location
            )
    if not out.dispatch:
        raise VtgenError("a structured op needs 'dispatch:' naming its impl per backend (CPU: <impl>)", out.location)
    by_kind: dict[SchemaKind, NativeFunction] = {}
    for f in delegates:
        if f.dispatch:
            raise VtgenError(
                "a structured_delegate op gets its kernels from its delegate: remove 'dispatch'", f.location
            )
        if f.func.signature() != out.func.signature() or f.kind not in (SchemaKind.functional, SchemaKind.inplace):
            raise VtgenError(f"structured_delegate '{out.name}' is not the out= variant of this op", f.location)
        if f.kind in by_kind:
            raise VtgenError(f"two {f.kind.value} delegates of '{out.name}'", f.location)
        by_kind[f.kind] = f
    if out.structured_inherits not in (None, "TensorIteratorBase"):
        raise VtgenError(
            f"structured_inherits must be TensorIteratorBase, got '{out.structured_inherits}'", out.location
        )
    return StructuredGroup(
        out,
        by_kind.get(SchemaKind.functional),
        by_kind.get(SchemaKind.inplace),
        out.dispatch,
        out.structured_inherits == "TensorIteratorBase",
        _precomputed(out),
    )


def _precomputed(out: NativeFunction) -> tuple[PrecomputedField, ...]:
    """``precomputed`` entries: ``arg -> type name[, type name...]`` or ``type name``."""
    names = {a.name for a in out.func.arguments.non_out}
    fields: list[PrecomputedField] = []
    for item in out.precomputed:
        replaces, arrow, rest = item.partition("->")
        replaced = replaces.strip() if arrow else None
        if replaced is not None and replaced not in names:
            raise VtgenError(
                f"precomputed: '{replaced}' is not an argument of '{out.name}'{did_you_mean(replaced, names)}",
                out.location,
            )
        for piece in (rest if arrow else item).split(","):
            fields.append(_field(piece.strip(), replaced, out.location))
    return tuple(fields)


def _field(text: str, replaces: str | None, where: Location) -> PrecomputedField:
    ty, _, name = text.rpartition(" ")
    if ty.strip() not in _FIELD_TYPES or not name.isidentifier():
        raise VtgenError(
            f"precomputed: '{text}' must be '<type> <name>' with a type of {', '.join(_FIELD_TYPES)}", where
        )
    return PrecomputedField(_FIELD_TYPES[ty.strip()], name, replaces)
