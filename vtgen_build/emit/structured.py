"""The generated kernels of a structured group for one dispatch key.

Each variant runs the author's meta function, then makes its outputs -- allocates them
(functional), checks ``self`` against them (in-place) or resizes ``out`` (out=) -- and, except
at the Meta key, calls the key's impl.  A TensorIterator group lets the built iterator do the
allocating, checking and resizing.
"""

from __future__ import annotations

from ..model.cpp_api import dispatcher_arguments, dispatcher_returns
from ..model.native import NativeFunction
from ..model.schema import SchemaKind
from ..plan.structured import META_OUTPUTS, StructuredGroup

__all__ = ["structured_kernels", "wrapper_name"]


def wrapper_name(fn: NativeFunction, key: str) -> str:
    return f"{fn.namespace}_{fn.name.unambiguous_name()}_{key}"


def structured_kernels(group: StructuredGroup, key: str) -> list[tuple[NativeFunction, str]]:
    """(variant, C++ definition) of every variant of ``group`` at ``key``."""
    impl = next((d.kernel for d in group.impls if d.key == key), None)
    if impl is None and key != "Meta":
        return []
    return [(fn, _kernel(group, fn, key, impl)) for fn in group.members]


def _kernel(group: StructuredGroup, fn: NativeFunction, key: str, impl: str | None) -> str:
    params = ", ".join(b.decl() for b in dispatcher_arguments(fn))
    outs = _out_names(group, fn)
    body = _iterator_body(group, fn, outs) if group.iterator else _plain_body(group, fn, outs)
    if impl is not None:
        lead = ["iter_"] if group.iterator else []
        args = [*lead, *_impl_inputs(group), *outs]
        body.append(f"{group.out.namespace}::{impl}({', '.join(args)});")
    body.append(_return(fn, outs))
    text = "\n".join("  " + line for line in body)
    return f"{dispatcher_returns(fn).cpp()} {wrapper_name(fn, key)}({params}) {{\n{text}\n}}"


def _out_names(group: StructuredGroup, fn: NativeFunction) -> list[str]:
    """The tensors the variant writes: its out arguments, its mutated inputs, or new locals."""
    if fn.kind is SchemaKind.out:
        return [a.name for a in fn.func.arguments.out]
    if fn.kind is SchemaKind.inplace:
        return [a.name for a in fn.func.arguments.non_out if a.is_write]
    return [f"{a.name}_" for a in group.out.func.arguments.out]


def _meta_call(group: StructuredGroup, first: str) -> str:
    args = ", ".join([first, *(b.name for b in group.inputs())])
    call = f"{group.out.namespace}::{group.meta_name}({args});"
    return f"auto precomputed_ = {call}" if group.precomputed else call


def _plain_body(group: StructuredGroup, fn: NativeFunction, outs: list[str]) -> list[str]:
    lines = [f'{META_OUTPUTS} outputs_({len(outs)}, "{fn.namespace}::{fn.name}");', _meta_call(group, "outputs_")]
    for i, name in enumerate(outs):
        if fn.kind is SchemaKind.functional:
            lines.append(f"at::Tensor {name} = vtgen_allocate(outputs_, {i});")
        elif fn.kind is SchemaKind.inplace:
            lines.append(f"vtgen_check_inplace(outputs_, {i}, {name});")
        else:
            lines.append(f"vtgen_resize_out(outputs_, {i}, {name});")
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
    for b in group.inputs():
        replacing = [f for f in group.precomputed if f.replaces == b.name]
        names += [f"precomputed_.{f.name}" for f in replacing] if replacing else [b.name]
    return names + [f"precomputed_.{f.name}" for f in group.precomputed if f.replaces is None]


def _return(fn: NativeFunction, outs: list[str]) -> str:
    if not fn.func.returns:  # a mutating op in torch.compile's style: `-> ()`
        return "return;"
    if len(outs) == 1:
        return f"return {outs[0]};"
    if fn.kind is SchemaKind.functional:
        return f"return {{{', '.join(outs)}}};"
    return f"return std::forward_as_tuple({', '.join(outs)});"
