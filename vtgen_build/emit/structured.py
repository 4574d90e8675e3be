"""The generated kernels of a structured group for one dispatch key, in either dialect.

Each variant runs the author's meta function, then makes its outputs -- allocates them
(functional), checks ``self`` against them (in-place) or resizes ``out`` (out=) -- and, except
at the Meta key, calls the key's impl.  A TensorIterator group (classic only) lets the built
iterator do the allocating, checking and resizing.  What differs between a build against ATen
and a stable-ABI library (the variant's signature, the meta function's output record, how a
mutating variant returns several outputs) is the dialect's (``plan/dialect.py``).
"""

from __future__ import annotations

from ..model.native import NativeFunction
from ..model.schema import SchemaKind
from ..plan.dialect import Dialect
from ..plan.structured import StructuredGroup

__all__ = ["structured_kernels", "wrapper_name"]


def wrapper_name(fn: NativeFunction, key: str) -> str:
    return f"{fn.namespace}_{fn.name.unambiguous_name()}_{key}"


def structured_kernels(group: StructuredGroup, key: str, dialect: Dialect) -> list[tuple[NativeFunction, str]]:
    """(variant, C++ definition) of every variant of ``group`` at ``key`` (none: no impl there)."""
    impl = next((d.kernel for d in group.impls if d.key == key), None)
    if impl is None and key != "Meta":
        return []
    return [(fn, _kernel(group, fn, key, impl, dialect)) for fn in group.members]


def _kernel(group: StructuredGroup, fn: NativeFunction, key: str, impl: str | None, dialect: Dialect) -> str:
    sig = dialect.variant_signature(fn, wrapper_name(fn, key))
    outs = _out_names(group, fn)
    body = _iterator_body(group, fn, outs) if group.iterator else _plain_body(group, fn, outs, dialect)
    if impl is not None:
        lead = ["iter_"] if group.iterator else []
        args = [*lead, *_impl_inputs(group), *outs]
        body.append(f"{group.out.namespace}::{impl}({', '.join(args)});")
    body.append(_return(fn, outs, dialect))
    params = ", ".join(b.decl() for b in sig.params)
    text = "\n".join("  " + line for line in body)
    return f"{sig.returns.cpp()} {sig.name}({params}) {{\n{text}\n}}"


def _out_names(group: StructuredGroup, fn: NativeFunction) -> list[str]:
    """The tensors the variant writes: its out arguments, its mutated inputs, or new locals."""
    if fn.kind is SchemaKind.out:
        return [a.name for a in fn.func.arguments.out]
    if fn.kind is SchemaKind.inplace:
        return [a.name for a in fn.func.arguments.non_out if a.is_write]
    return [f"{a.name}_" for a in group.out.func.arguments.out]


def _input_names(group: StructuredGroup) -> list[str]:
    """The non-out arguments, as the meta function and the impls are passed them."""
    return [a.name for a in group.out.func.arguments.non_out]


def _meta_call(group: StructuredGroup, first: str) -> str:
    args = ", ".join([first, *_input_names(group)])
    call = f"{group.out.namespace}::{group.meta_name}({args});"
    return f"auto precomputed_ = {call}" if group.precomputed else call


def _plain_body(group: StructuredGroup, fn: NativeFunction, outs: list[str], dialect: Dialect) -> list[str]:
    spell = dialect.meta_outputs
    lines = [f'{spell.record} outputs_({len(outs)}, "{fn.namespace}::{fn.name}");', _meta_call(group, "outputs_")]
    for i, name in enumerate(outs):
        if fn.kind is SchemaKind.functional:
            lines.append(spell.allocate.format(i=i, name=name))
        elif fn.kind is SchemaKind.inplace:
            lines.append(spell.check_inplace.format(i=i, name=name))
        else:
            lines.append(spell.resize_out.format(i=i, name=name))
    return lines


def _iterator_body(group: StructuredGroup, fn: NativeFunction, outs: list[str]) -> list[str]:
    lines = ["at::TensorIteratorConfig config_;"]
    if fn.kind is SchemaKind.functional:
        lines += ["config_.add_owned_output(at::Tensor());" for _ in outs]
    else:
        lines += [f"config_.add_output({name});" for name in outs]
    lines += [_meta_call(group, "config_"), "at::TensorIterator iter_ = config_.build();"]
    if fn.kind is SchemaKind.functional:
        lines += [f"at::Tensor {name} = iter_.output({i});" for i, name in enumerate(outs)]
    return lines


def _impl_inputs(group: StructuredGroup) -> list[str]:
    names: list[str] = []
    for name in _input_names(group):
        replacing = [f for f in group.precomputed if f.replaces == name]
        names += [f"precomputed_.{f.name}" for f in replacing] if replacing else [name]
    return names + [f"precomputed_.{f.name}" for f in group.precomputed if f.replaces is None]


def _return(fn: NativeFunction, outs: list[str], dialect: Dialect) -> str:
    if not fn.func.returns:  # a mutating op in torch.compile's style: `-> ()`
        return "return;"
    if len(outs) == 1:
        return f"return {outs[0]};"
    if fn.kind is SchemaKind.functional:
        return f"return {{{', '.join(outs)}}};"
    return f"return {dialect.written_tuple.format(outs=', '.join(outs))};"
