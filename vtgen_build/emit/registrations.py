"""Spelling the backend registrations: ``NativeKernels.h`` and one ``Register<Key>.cpp`` per key.

The pieces both dialects write alike (a declaration, the namespace blocks, the ``m.impl`` lines and
their per-key blocks, a structured group's declarations) are here, in the dialect the caller passes;
``emit/stable_registrations.py`` assembles a stable-ABI library's files from them.

The header declares every kernel the author defines, each after a comment naming the yaml
line that asks for it (``// native_functions.yaml:12: CPU kernel of vtsample::affine``):
``vtgen_build.linkcheck`` reads those comments to turn a linker's "undefined reference" into
an error at that line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .. import __version__
from ..base.errors import Location
from ..model.cpp_api import CppSignature
from ..model.native import Dispatch, NativeFunction
from ..plan.dialect import Dialect
from ..plan.registrations import KernelImpl, RegistrationPlan
from ..plan.structured import StructuredGroup
from .autocast import AUTOCAST_INCLUDES, autocast_kernels, autocast_registrations
from .lines import at_yaml_line, resolve_line_markers
from .structured import structured_kernels, wrapper_name
from .templates import render, template_text

__all__ = [
    "HEADER",
    "by_namespace",
    "declaration",
    "impl_lines",
    "namespace_blocks",
    "registration_blocks",
    "registration_files",
    "structured_declarations",
    "unit_name",
]

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


def declaration(location: Location, role: str, sig: CppSignature, line_directives: bool = False) -> str:
    """A kernel's declaration after the ``// <yaml>:<line>: <role>`` comment linkcheck reads."""
    declared = at_yaml_line(f"{sig.decl()};", location).strip("\n") if line_directives else f"{sig.decl()};"
    return f"// {location}: {role}\n{declared}"


def structured_declarations(
    group: StructuredGroup,
    keys: tuple[str, ...],
    meta: CppSignature,
    impl: Callable[[str], CppSignature],
    lines: bool = False,
) -> list[tuple[str, str]]:
    """(namespace, text) of a structured group's precomputed record, meta function and impls (one per
    distinct impl name of a registered key, named after its first key); ``meta``/``impl``: their
    signatures in the build's dialect."""
    ns, out = group.out.namespace, group.out
    found: list[tuple[str, str]] = []
    if group.precomputed:
        fields = "\n".join(f"  {f.cpp_type} {f.name};" for f in group.precomputed)
        found.append((ns, f"// What {group.meta_name} computes for the impls of {ns}::{out.name}.\n"
                          f"struct {group.precomputed_name} {{\n{fields}\n}};"))  # fmt: skip
    found.append((ns, declaration(out.location, f"meta function of structured {ns}::{out.name}", meta, lines)))
    impls: dict[str, Dispatch] = {}
    for d in group.impls:
        if d.key in keys:
            impls.setdefault(d.kernel, d)
    for name, d in impls.items():
        role = f"{d.key} impl of structured {ns}::{out.name}"
        found.append((ns, declaration(d.location or out.location, role, impl(name), lines)))
    return found


def by_namespace(pieces: Iterable[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """The texts of each namespace, namespaces sorted, texts in their order."""
    found: dict[str, list[str]] = {}
    for ns, text in pieces:
        found.setdefault(ns, []).append(text)
    return sorted(found.items())


def namespace_blocks(pieces: Iterable[tuple[str, str]]) -> str:
    """``namespace <ns> { ... }`` around each namespace's texts (empty: no text)."""
    return "\n\n".join(
        f"namespace {ns} {{\n\n" + "\n\n".join(texts) + f"\n\n}} // namespace {ns}"
        for ns, texts in by_namespace(pieces)
    )


def _header(plan: RegistrationPlan, lines: bool) -> str:
    pieces = [(d.namespace, declaration(d.location, d.role, d.signature, lines)) for d in plan.declarations]
    for group in plan.structured:
        pieces += structured_declarations(group, plan.keys, group.meta_signature(), group.impl_signature, lines)
    include = "#include <ATen/TensorIterator.h>" if any(g.iterator for g in plan.structured) else ""
    blocks = namespace_blocks(pieces) or "// No kernel named."
    values = {"version": __version__, "iterator_include": include, "declarations": blocks}
    return render(HEADER, template_text(HEADER), values)


def impl_lines(
    impls: Iterable[KernelImpl],
    generated: Iterable[NativeFunction],
    key: str,
    dialect: Dialect,
    line_directives: bool = False,
) -> list[tuple[str, str]]:
    """(namespace, ``m.impl`` line) of ``key``'s unit: the author's kernels of plain ops in yaml order,
    then the ``generated`` variants of structured groups, boxed as ``dialect`` boxes a kernel."""
    lines = []
    for i in impls:
        if i.key == key:
            line = f'm.impl("{i.op}", {dialect.boxing}(({_pointer(i.kernel)}(&{i.namespace}::{i.kernel.name}))));'
            lines.append((i.namespace, at_yaml_line(line, i.location).strip("\n") if line_directives else line))
    for fn in generated:
        line = f'm.impl("{fn.name}", {dialect.boxing}({dialect.generated_pointer}{wrapper_name(fn, key)}));'
        lines.append((fn.namespace, line))
    return lines


def _pointer(sig: CppSignature) -> str:
    """``static_cast`` to the kernel's function-pointer type: picks it among C++ overloads."""
    return f"static_cast<{sig.returns.cpp()} (*)({', '.join(sig.types())})>"


def registration_blocks(dialect: Dialect, key: str, lines: Iterable[tuple[str, str]]) -> str:
    """One ``<impl macro>(<ns>, <key>, m)`` block per namespace, or a comment saying there is none."""
    blocks = [
        f"{dialect.impl_macro}({ns}, {key}, m) {{\n" + "\n".join("  " + x for x in body) + "\n}"
        for ns, body in by_namespace(lines)
    ]
    return "\n\n".join(blocks) or f"// No operator has a {key} kernel."


def _unit(plan: RegistrationPlan, key: str, line_directives: bool) -> str:
    dialect = plan.dialect
    variants = [found for group in plan.structured for found in structured_kernels(group, key, dialect)]
    kernels = [text for _, text in variants]
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
        "registrations": registration_blocks(
            dialect, key, impl_lines(plan.impls, (fn for fn, _ in variants), key, dialect, line_directives)
        ),
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
