"""Spelling ``RegisterSchema.cpp``: one ``TORCH_LIBRARY(<ns>, m)`` block of ``m.def`` per namespace."""

from __future__ import annotations

from collections.abc import Iterable

from .. import __version__
from ..plan.schemas import SchemaDef
from .templates import render, template_text

__all__ = ["boxed_impl_blocks", "cpp_string", "register_schema"]


def cpp_string(text: str) -> str:
    """``text`` as a C++ string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def boxed_impl_blocks(key: str, impls: Iterable[tuple[str, str, str]]) -> list[str]:
    """One ``TORCH_LIBRARY_IMPL(ns, key, m)`` block per namespace (sorted) registering each boxed kernel
    of ``impls`` (``(namespace, operator, kernel function)``, in their order)."""
    by_ns: dict[str, list[str]] = {}
    for ns, op, kernel in impls:
        line = f"m.impl({cpp_string(op)}, torch::CppFunction::makeFromBoxedFunction<&{kernel}>());"
        by_ns.setdefault(ns, []).append(line)
    return [
        f"TORCH_LIBRARY_IMPL({ns}, {key}, m) {{\n" + "\n".join("  " + x for x in lines) + "\n}"
        for ns, lines in sorted(by_ns.items())
    ]


def _definition(d: SchemaDef) -> str:
    tags = ", ".join(f"at::Tag::{t}" for t in d.tags)
    line = f"m.def({cpp_string(d.schema)}, {{{tags}}});"
    if d.unregistered_tags:
        line += f"  // not a PyTorch tag: {', '.join(d.unregistered_tags)}"
    return line


def _block(namespace: str, defs: list[SchemaDef], fake_module: str | None) -> str:
    lines = [_definition(d) for d in defs]
    if fake_module:
        # PyTorch's "no fake kernel" error for these ops then says which module to import.
        lines.insert(0, f"m.set_python_module({cpp_string(fake_module)});")
    body = "\n".join("  " + line for line in lines)
    return f"TORCH_LIBRARY({namespace}, m) {{\n{body}\n}}"


def register_schema(defs: Iterable[SchemaDef], fake_module: str | None = None) -> str:
    """The file's text: the definitions grouped by namespace (namespaces sorted, yaml order within)."""
    by_namespace: dict[str, list[SchemaDef]] = {}
    for d in defs:
        by_namespace.setdefault(d.namespace, []).append(d)
    blocks = "\n\n".join(_block(ns, by_namespace[ns], fake_module) for ns in sorted(by_namespace))
    registrations = blocks or "// No operator outside aten: nothing to register."
    return render("RegisterSchema.cpp", template_text("RegisterSchema.cpp"),
                  {"version": __version__, "registrations": registrations})  # fmt: skip
