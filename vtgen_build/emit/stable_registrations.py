"""Spelling a stable-ABI library: ``NativeKernels.h``, ``RegisterSchema.cpp``, ``Register<Key>.cpp``.

The decisions are ``plan/stable.py``'s; here they become C++ on ``torch/csrc/stable/``: the
declarations (each after the ``// <yaml>:<line>: <role>`` comment ``vtgen_build.linkcheck`` and the
ABI audit read), ``STABLE_TORCH_LIBRARY`` with the schemas, and per dispatch key one
``STABLE_TORCH_LIBRARY_IMPL`` registering each kernel through ``TORCH_BOX``.  A structured group's
functional, in-place and out= kernels (and at ``Meta`` the meta function alone) are generated
around the author's meta function and impls by the classic mode's emitters, in the plan's dialect
(``StablePlan.dialect``, the request's: ``STABLE``).
"""

from __future__ import annotations

from .. import __version__
from ..plan.aoti_shims import DEVICES
from ..plan.stable import StablePlan, StableShim
from .aoti_shims import stable_shims_section
from .registrations import (
    HEADER,
    by_namespace,
    declaration,
    impl_lines,
    namespace_blocks,
    registration_blocks,
    structured_declarations,
    unit_name,
)
from .schema import cpp_string
from .structured import structured_kernels, wrapper_name
from .templates import render, template_text

__all__ = ["HEADER", "SCHEMA_UNIT", "stable_files", "unit_name"]

SCHEMA_UNIT = "RegisterSchema.cpp"


def stable_files(plan: StablePlan) -> dict[str, str]:
    """Every C++ file of a stable-ABI library (the typed Python API is written by the engine)."""
    files = {HEADER: _header(plan), SCHEMA_UNIT: _schema_unit(plan)}
    for key in plan.keys:
        files[unit_name(key)] = _unit(plan, key)
    return files


def _header(plan: StablePlan) -> str:
    pieces = [(d.namespace, declaration(d.location, d.role, d.signature)) for d in plan.declarations]
    for s in plan.structured:
        pieces += structured_declarations(s.group, plan.keys, s.meta_signature(), s.impl_signature)
    values = {**_common(plan), "declarations": namespace_blocks(pieces)}
    return render(HEADER, template_text("StableNativeKernels.h"), values)


def _common(plan: StablePlan) -> dict[str, str]:
    return {"version": __version__, "target": str(plan.target), "target_macro": plan.target.macro}


def _schema_unit(plan: StablePlan) -> str:
    defs = []
    for ns, schema, tags in plan.schemas:
        tag_list = f", {{{', '.join(f'at::Tag::{t}' for t in tags)}}}" if tags else ""
        defs.append((ns, f"m.def({cpp_string(schema)}{tag_list});"))
    blocks = []
    for ns, lines in by_namespace(defs):
        if plan.fake_module:
            lines.insert(0, f"m.set_python_module({cpp_string(plan.fake_module)});")
        body = "\n".join("  " + line for line in lines)
        blocks.append(f"STABLE_TORCH_LIBRARY({ns}, m) {{\n{body}\n}}")
    return render(SCHEMA_UNIT, template_text("StableRegisterSchema.cpp"),
                  {**_common(plan), "registrations": "\n\n".join(blocks)})  # fmt: skip


def _unit(plan: StablePlan, key: str) -> str:
    variants = [found for s in plan.structured for found in structured_kernels(s.group, key, plan.dialect)]
    lines = impl_lines(plan.impls, (fn for fn, _ in variants), key, plan.dialect)
    values = {
        **_common(plan),
        "key": key,
        "kernels": "\n\n".join(text for _, text in variants),
        "registrations": registration_blocks(plan.dialect, key, lines),
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
