"""Spelling the backend registrations: ``NativeKernels.h`` and one ``Register<Key>.cpp`` per key.

The header declares every kernel the author defines, each after a comment naming the yaml
line that asks for it (``// native_functions.yaml:12: CPU kernel of vtsample::affine``):
``vtgen_build.linkcheck`` reads those comments to turn a linker's "undefined reference" into
an error at that line.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import __version__
from ..base.errors import Location
from ..model.cpp_api import CppSignature
from ..model.native import Dispatch
from ..plan.registrations import RegistrationPlan
from ..plan.structured import StructuredGroup
from .autocast import AUTOCAST_INCLUDES, autocast_kernels, autocast_registrations
from .lines import at_yaml_line, resolve_line_markers
from .structured import structured_kernels, wrapper_name
from .templates import render, template_text

__all__ = ["HEADER", "registration_files", "unit_name"]

HEADER = "NativeKernels.h"


def unit_name(key: str) -> str:
    return f"Register{key}.cpp"


def registration_files(plan: RegistrationPlan, line_directives: bool = False) -> dict[str, str]:
    """The header and one unit per key; ``line_directives``: each declaration and ``m.impl`` carries
    ``#line`` to the yaml line asking for it, so a compiler error there names that line."""
    files = {HEADER: _header(plan, line_directives)}
    for key in plan.keys:
        files[unit_name(key)] = _unit(plan, key, line_directives)
    return {name: resolve_line_markers(text, name) for name, text in files.items()}


def _decl_line(location: Location, role: str, sig: CppSignature, line_directives: bool = False) -> str:
    declaration = at_yaml_line(f"{sig.decl()};", location).strip("\n") if line_directives else f"{sig.decl()};"
    return f"// {location}: {role}\n{declaration}"


def _structured_decls(group: StructuredGroup, keys: tuple[str, ...], lines: bool) -> list[tuple[str, str]]:
    ns, out = group.out.namespace, group.out
    found: list[tuple[str, str]] = []
    if group.precomputed:
        fields = "\n".join(f"  {f.cpp_type} {f.name};" for f in group.precomputed)
        found.append((ns, f"// What {group.meta_name} computes for the impls of {ns}::{out.name}.\n"
                          f"struct {group.precomputed_name} {{\n{fields}\n}};"))  # fmt: skip
    meta = f"meta function of structured {ns}::{out.name}"
    found.append((ns, _decl_line(out.location, meta, group.meta_signature(), lines)))
    impls: dict[str, Dispatch] = {}
    for d in group.impls:
        if d.key in keys:
            impls.setdefault(d.kernel, d)
    for name, d in impls.items():
        role = f"{d.key} impl of structured {ns}::{out.name}"
        found.append((ns, _decl_line(d.location or out.location, role, group.impl_signature(name), lines)))
    return found


def _header(plan: RegistrationPlan, lines: bool) -> str:
    pieces: list[tuple[str, str]] = [
        (d.namespace, _decl_line(d.location, d.role, d.signature, lines)) for d in plan.declarations
    ]
    for group in plan.structured:
        pieces += _structured_decls(group, plan.keys, lines)
    by_ns: dict[str, list[str]] = {}
    for ns, text in pieces:
        by_ns.setdefault(ns, []).append(text)
    blocks = "\n\n".join(
        f"namespace {ns} {{\n\n" + "\n\n".join(texts) + f"\n\n}} // namespace {ns}"
        for ns, texts in sorted(by_ns.items())
    )
    include = "#include <ATen/TensorIterator.h>" if any(g.iterator for g in plan.structured) else ""
    values = {"version": __version__, "iterator_include": include, "declarations": blocks or "// No kernel named."}
    return render(HEADER, template_text(HEADER), values)


def _impl_lines(plan: RegistrationPlan, key: str, line_directives: bool) -> list[tuple[str, str]]:
    """(namespace, ``m.impl`` line) in yaml order: plain ops, then structured groups."""
    lines = []
    for i in plan.impls:
        if i.key == key:
            line = f'm.impl("{i.op}", TORCH_FN(({_pointer(i.kernel)}(&{i.namespace}::{i.kernel.name}))));'
            lines.append((i.namespace, at_yaml_line(line, i.location).strip("\n") if line_directives else line))
    for group in plan.structured:
        for fn, _ in structured_kernels(group, key):
            lines.append((fn.namespace, f'm.impl("{fn.name}", TORCH_FN({wrapper_name(fn, key)}));'))
    return lines


def _pointer(sig: CppSignature) -> str:
    """``static_cast`` to the kernel's function-pointer type: picks it among C++ overloads."""
    return f"static_cast<{sig.returns.cpp()} (*)({', '.join(sig.types())})>"


def _registrations(key: str, lines: Iterable[tuple[str, str]]) -> str:
    by_ns: dict[str, list[str]] = {}
    for ns, line in lines:
        by_ns.setdefault(ns, []).append(line)
    blocks = [
        f"TORCH_LIBRARY_IMPL({ns}, {key}, m) {{\n" + "\n".join("  " + x for x in body) + "\n}"
        for ns, body in sorted(by_ns.items())
    ]
    return "\n\n".join(blocks) or f"// No operator has a {key} kernel."


def _unit(plan: RegistrationPlan, key: str, line_directives: bool) -> str:
    kernels = [text for group in plan.structured for _, text in structured_kernels(group, key)]
    has_structured = bool(kernels)
    includes = "#include <ATen/native/Resize.h>\n#include <ATen/ops/empty.h>" if has_structured else ""
    if any(g.iterator for g in plan.structured) and has_structured:
        includes += "\n#include <ATen/TensorIterator.h>"
    values = {
        "version": __version__,
        "key": key,
        "structured_includes": includes,
        "structured_helpers": template_text("StructuredHelpers.cpp") if has_structured else "",
        "kernels": "\n\n".join(kernels),
        "registrations": _registrations(key, _impl_lines(plan, key, line_directives)),
        **_autocast_values(plan, key),
    }
    return render("RegisterBackend.cpp", template_text("RegisterBackend.cpp"), values)


def _autocast_values(plan: RegistrationPlan, key: str) -> dict[str, str]:
    """The device ``key``'s Autocast kernels (``emit/autocast.py``): none, and no text, without a policy."""
    kernels = autocast_kernels(plan.autocast, key)
    registrations = autocast_registrations(plan.autocast, key)
    return {
        "autocast_includes": f"\n{AUTOCAST_INCLUDES}" if kernels else "",
        "autocast_kernels": f"\n\n{kernels}" if kernels else "",
        "autocast_registrations": f"\n\n{registrations}" if registrations else "",
    }
