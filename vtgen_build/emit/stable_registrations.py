"""Spelling a stable-ABI library: ``NativeKernels.h``, ``RegisterSchema.cpp``, ``Register<Key>.cpp``.

The decisions are ``plan/stable.py``'s; here they become C++ on ``torch/csrc/stable/``: the
declarations (each after the ``// <yaml>:<line>: <role>`` comment ``vtgen_build.linkcheck`` and the
ABI audit read), ``STABLE_TORCH_LIBRARY`` with the schemas, and per dispatch key one
``STABLE_TORCH_LIBRARY_IMPL`` registering each kernel through ``TORCH_BOX``.  A structured group's
functional, in-place and out= kernels (and at ``Meta`` the meta function alone) are generated
around the author's meta function and impls, as in the classic mode, on stable types.
"""

from __future__ import annotations

from .. import __version__
from ..base.errors import Location
from ..model.cpp_api import CppSignature
from ..model.native import NativeFunction
from ..model.schema import SchemaKind
from ..plan.aoti_shims import DEVICES
from ..plan.stable import STABLE_META_OUTPUTS, StablePlan, StableShim, StableStructured
from .aoti_shims import stable_shims_section
from .schema import cpp_string
from .templates import render, template_text

__all__ = ["HEADER", "SCHEMA_UNIT", "stable_files", "unit_name"]

HEADER = "NativeKernels.h"
SCHEMA_UNIT = "RegisterSchema.cpp"


def unit_name(key: str) -> str:
    return f"Register{key}.cpp"


def stable_files(plan: StablePlan) -> dict[str, str]:
    """Every C++ file of a stable-ABI library (the typed Python API is written by the engine)."""
    files = {HEADER: _header(plan), SCHEMA_UNIT: _schema_unit(plan)}
    for key in plan.keys:
        files[unit_name(key)] = _unit(plan, key)
    return files


def _decl(location: Location, role: str, sig: CppSignature) -> str:
    return f"// {location}: {role}\n{sig.decl()};"


def _header(plan: StablePlan) -> str:
    pieces = [(d.namespace, _decl(d.location, d.role, d.signature)) for d in plan.declarations]
    for s in plan.structured:
        out = s.group.out
        pieces.append((s.namespace, _decl(out.location, f"meta function of structured {s.namespace}::{out.name}",
                                          s.meta_signature())))  # fmt: skip
        impls = {d.kernel: d for d in s.group.impls if d.key in plan.keys}
        for name, d in impls.items():
            role = f"{d.key} impl of structured {s.namespace}::{out.name}"
            pieces.append((s.namespace, _decl(d.location or out.location, role, s.impl_signature(name))))
    by_ns: dict[str, list[str]] = {}
    for ns, text in pieces:
        by_ns.setdefault(ns, []).append(text)
    blocks = "\n\n".join(
        f"namespace {ns} {{\n\n" + "\n\n".join(texts) + f"\n\n}} // namespace {ns}"
        for ns, texts in sorted(by_ns.items())
    )
    return render(HEADER, template_text("StableNativeKernels.h"), {**_common(plan), "declarations": blocks})


def _common(plan: StablePlan) -> dict[str, str]:
    return {"version": __version__, "target": str(plan.target), "target_macro": plan.target.macro}


def _schema_unit(plan: StablePlan) -> str:
    by_ns: dict[str, list[str]] = {}
    for ns, schema, tags in plan.schemas:
        tag_list = f", {{{', '.join(f'at::Tag::{t}' for t in tags)}}}" if tags else ""
        by_ns.setdefault(ns, []).append(f"m.def({cpp_string(schema)}{tag_list});")
    blocks = []
    for ns, lines in sorted(by_ns.items()):
        if plan.fake_module:
            lines.insert(0, f"m.set_python_module({cpp_string(plan.fake_module)});")
        body = "\n".join("  " + line for line in lines)
        blocks.append(f"STABLE_TORCH_LIBRARY({ns}, m) {{\n{body}\n}}")
    return render(SCHEMA_UNIT, template_text("StableRegisterSchema.cpp"),
                  {**_common(plan), "registrations": "\n\n".join(blocks)})  # fmt: skip


def _boxed(namespace: str, sig: CppSignature) -> str:
    """``TORCH_BOX`` of the kernel, its overload picked by a ``static_cast`` to its pointer type."""
    pointer = f"static_cast<{sig.returns.cpp()} (*)({', '.join(sig.types())})>(&{namespace}::{sig.name})"
    return f"TORCH_BOX(({pointer}))"


def _unit(plan: StablePlan, key: str) -> str:
    lines = [(i.namespace, f'm.impl("{i.op}", {_boxed(i.namespace, i.kernel)});') for i in plan.impls if i.key == key]
    kernels: list[str] = []
    for s in plan.structured:
        for fn, text in structured_stable_kernels(s, key):
            kernels.append(text)
            lines.append((fn.namespace, f'm.impl("{fn.name}", TORCH_BOX(&{wrapper_name(fn, key)}));'))
    by_ns: dict[str, list[str]] = {}
    for ns, line in lines:
        by_ns.setdefault(ns, []).append(line)
    blocks = [
        f"STABLE_TORCH_LIBRARY_IMPL({ns}, {key}, m) {{\n" + "\n".join("  " + x for x in body) + "\n}"
        for ns, body in sorted(by_ns.items())
    ]
    values = {
        **_common(plan),
        "key": key,
        "kernels": "\n\n".join(kernels),
        "registrations": "\n\n".join(blocks) or f"// No operator has a {key} kernel.",
        "aoti_shims": _shims(plan, key),
    }
    return render("StableRegisterBackend.cpp", template_text("StableRegisterBackend.cpp"), values)


def _shims(plan: StablePlan, key: str) -> str:
    """The AOTInductor C shims running this unit's kernels (``plan.shim_calls``)."""
    calls = [(c, _callee(c)) for c in plan.shim_calls if c.key == key]
    return stable_shims_section(calls, plan.aoti_shims.skipped, key, key in DEVICES)


def _callee(call: StableShim) -> str:
    f = call.shim.function
    return f"{f.namespace}::{call.kernel}" if call.kernel is not None else wrapper_name(f, call.key)


# -- structured groups ----------------------------------------------------------------------------
def wrapper_name(fn: NativeFunction, key: str) -> str:
    return f"{fn.namespace}_{fn.name.unambiguous_name()}_{key}"


def structured_stable_kernels(s: StableStructured, key: str) -> list[tuple[NativeFunction, str]]:
    """(variant, C++ definition) of every variant of the group at ``key`` (none: no impl there)."""
    impl = next((d.kernel for d in s.group.impls if d.key == key), None)
    if impl is None and key != "Meta":
        return []
    return [(fn, _kernel(s, fn, key, impl)) for fn in s.group.members]


def _kernel(s: StableStructured, fn: NativeFunction, key: str, impl: str | None) -> str:
    sig = s.variant_signature(fn, wrapper_name(fn, key))
    outs = _out_names(s, fn)
    inputs = [b.name for b in s.inputs]
    body = [
        f'{STABLE_META_OUTPUTS} outputs_({len(outs)}, "{fn.namespace}::{fn.name}");',
        f"{s.namespace}::{s.group.meta_name}({', '.join(['outputs_', *inputs])});",
    ]
    for i, name in enumerate(outs):
        if fn.kind is SchemaKind.functional:
            body.append(f"torch::stable::Tensor {name} = outputs_.allocate({i});")
        elif fn.kind is SchemaKind.inplace:
            body.append(f"outputs_.check_inplace({i}, {name});")
        else:
            body.append(f"outputs_.resize_out({i}, {name});")
    if impl is not None:
        body.append(f"{s.namespace}::{impl}({', '.join([*inputs, *outs])});")
    body.append(_return(fn, outs))
    params = ", ".join(b.decl() for b in sig.params)
    text = "\n".join("  " + line for line in body)
    return f"{sig.returns.cpp()} {sig.name}({params}) {{\n{text}\n}}"


def _out_names(s: StableStructured, fn: NativeFunction) -> list[str]:
    if fn.kind is SchemaKind.out:
        return [a.name for a in fn.func.arguments.out]
    if fn.kind is SchemaKind.inplace:
        return [a.name for a in fn.func.arguments.non_out if a.is_write]
    return [f"{a.name}_" for a in s.group.out.func.arguments.out]


def _return(fn: NativeFunction, outs: list[str]) -> str:
    if not fn.func.returns:
        return "return;"
    if len(outs) == 1:
        return f"return {outs[0]};"
    return f"return {{{', '.join(outs)}}};"
