"""Assembling the output files from the plan: shards, their Node headers, the umbrella header.

Rendering is split in two so that unchanged ops need not be rendered again: each
kernel and each Node is first rendered on its own into a fragment (its text and
the shard it lands in), then files are assembled from fragments.  An
incremental run keeps the fragments of unchanged ops and reassembles only the
shards a changed op lands in; the bytes are the same as a clean run's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from .. import __version__
from ..plan.infos import DerivativeInfo
from ..plan.inplace_or_view import InplaceOrViewPlan
from ..plan.kernel import NOT_IMPLEMENTED_NODE, KernelPlan, Plan
from ..plan.library import LibraryPlan
from ..plan.policy import DEFAULT_RELEASE
from .aoti_shims import HEADER as AOTI_SHIMS_HEADER
from .aoti_shims import UNIT as AOTI_SHIMS_UNIT
from .aoti_shims import aoti_shims_header, aoti_shims_unit
from .functionalize import UNIT as FUNCTIONALIZE_UNIT
from .functionalize import register_functionalize
from .inplace_or_view import inplace_or_view_definition, inplace_or_view_registration
from .kernel import kernel_definition, registration
from .lines import resolve_line_markers
from .node import node_apply, node_header
from .output_index import node_header_name
from .registrations import registration_files
from .schema import register_schema
from .templates import render, template_text

__all__ = [
    "EmitOptions",
    "KernelFragment",
    "NodeFragment",
    "assemble_functions",
    "assemble_inplace_or_view",
    "assemble_node_header",
    "assemble_outputs",
    "assemble_variable_type",
    "family",
    "inplace_or_view_fragments",
    "kernel_fragments",
    "library_files",
    "node_fragments",
    "render_outputs",
    "shard_of",
]


@dataclass(frozen=True)
class EmitOptions:
    shards: int = 10
    manual_headers: tuple[str, ...] = ()  # include spellings, e.g. torch/csrc/autograd/FunctionsManual.h
    view_functions: frozenset[str] = frozenset()  # Nodes of these ops derive from Node
    using_namespaces: tuple[str, ...] = ()  # where the manual helpers live
    line_directives: bool = False  # formulas carry `#line` of their yaml (absolute paths): --line-directives
    release: str = DEFAULT_RELEASE  # the PyTorch release whose semantics the code follows
    register_backends: tuple[str, ...] = ()  # --register-backends: dispatch keys whose kernels we register
    fake_module: str | None = None  # --fake-module: the Python module registering the ops' fake kernels
    namespace: str = "aten"  # --namespace: the namespace of the yaml's unqualified entries (aten: not an op library)


@dataclass(frozen=True)
class KernelFragment:
    """One kernel (or fallback) as it appears in its VariableType shard."""

    shard: int
    body: str | None  # the C++ definition; None for a fallback (registration only)
    namespace: str
    dispatch_key: str
    registration: str
    node: str | None  # the Node it creates (its shard's header is included)


@dataclass(frozen=True)
class NodeFragment:
    """One backward Node: its declaration (in ``Functions_<shard>.h``) and its ``apply`` (in ``.cpp``)."""

    node: str
    shard: int
    header: str  # the Node's struct declaration, for Functions_<shard>.h
    apply: str


def shard_of(name: str, shards: int) -> int:
    """A stable shard for ``name``: adding an op changes only the shard it lands in."""
    return int(hashlib.sha1(name.encode()).hexdigest()[:8], 16) % shards


def family(name: str) -> str:
    """The op family of an operator base name: ``sin``, ``sin_`` and ``_foreach_sin`` are all ``sin``.

    Kernels are sharded by their op's family and Nodes by the family of the op their formulas
    are written for, so a formula edit (which can change every variant that borrows it) touches
    one VariableType and one Functions shard, and each VariableType shard includes only the
    ``Functions_<k>.h`` of its own shard.
    """
    base = name.removeprefix("_foreach_")
    return base[:-1] if base.endswith("_") and not base.endswith("__") else base


def render_outputs(plan: Plan, library: LibraryPlan, options: EmitOptions) -> dict[str, str]:
    """Relative path → content of every generated file."""
    files = assemble_outputs(kernel_fragments(plan.kernels, options), node_fragments(plan.infos, options), options)
    return {**files, **library_files(library, options)}


def _base(options: EmitOptions) -> dict[str, str]:
    return {"version": __version__, "shards": str(options.shards)}


def _redispatch_include(kernels: Iterable[KernelFragment]) -> str:
    """``at::redispatch::`` is how aten ops are called (emit/dispatch.py); other namespaces' calls go
    through typed handles, so a shard without an aten kernel does without that header's parse."""
    return "#include <ATen/RedispatchFunctions.h>" if any(k.namespace == "aten" for k in kernels) else ""


def kernel_fragments(kernels: Iterable[KernelPlan], options: EmitOptions) -> list[KernelFragment]:
    return [
        KernelFragment(
            shard_of(family(k.function.name.base), options.shards),
            (
                kernel_definition(k, line_directives=options.line_directives, release=options.release)
                if k.kind == "kernel"
                else None
            ),
            k.function.namespace,
            k.dispatch_key,
            registration(k),
            k.node if k.node and k.node != NOT_IMPLEMENTED_NODE else None,
        )
        for k in kernels
    ]


def node_fragments(infos: Iterable[DerivativeInfo], options: EmitOptions) -> list[NodeFragment]:
    return [
        NodeFragment(
            str(info.node),
            shard_of(family(info.func.name.base), options.shards),
            node_header(info, options.view_functions),
            node_apply(info, line_directives=options.line_directives),
        )
        for info in infos
    ]


def assemble_outputs(kernels: list[KernelFragment], nodes: list[NodeFragment], options: EmitOptions) -> dict[str, str]:
    """Every file, from the fragments of every kernel and Node (in plan order)."""
    base = _base(options)
    files = {"FunctionsBase.h": render("FunctionsBase.h", template_text("FunctionsBase.h"), base)}
    includes = _shard_includes(range(options.shards))
    files["Functions.h"] = render("Functions.h", template_text("Functions.h"), {**base, "shard_includes": includes})
    node_shards = {n.node: n.shard for n in nodes}
    for shard in range(options.shards):
        in_shard = [n for n in nodes if n.shard == shard]
        files[node_header_name(shard)] = assemble_node_header(shard, in_shard, options)
        files[f"Functions_{shard}.cpp"] = assemble_functions(shard, in_shard, options)
        files[f"VariableType_{shard}.cpp"] = assemble_variable_type(
            shard, [k for k in kernels if k.shard == shard], options, node_shards
        )
    return files


def _shard_includes(shards: Iterable[int]) -> str:
    return "\n".join(f'#include "{node_header_name(k)}"' for k in sorted(set(shards)))


def assemble_node_header(shard: int, nodes: list[NodeFragment], options: EmitOptions) -> str:
    """``Functions_<shard>.h``: the struct of every Node whose ``apply`` is in ``Functions_<shard>.cpp``.

    Kernels and Nodes of one op family share a shard, so a shard's kernels include (almost
    always) only their own shard's header: a saved-value change recompiles that shard alone.
    """
    declarations = "\n\n".join(n.header for n in nodes)
    return render("FunctionsShard.h", template_text("FunctionsShard.h"),
                  {**_base(options), "shard": str(shard), "declarations": declarations})  # fmt: skip


def _common(options: EmitOptions) -> dict[str, str]:
    return {
        **_base(options),
        "manual_includes": "\n".join(f'#include "{h}"' for h in options.manual_headers),
        "using_namespaces": "\n".join(f"using namespace {ns};" for ns in options.using_namespaces),
    }


def assemble_variable_type(
    shard: int, kernels: list[KernelFragment], options: EmitOptions, node_shards: dict[str, int]
) -> str:
    """``VariableType_<shard>.cpp`` from the fragments of the kernels in it (in plan order)."""
    text = render(
        "VariableType.cpp",
        template_text("VariableType.cpp"),
        {
            **_common(options),
            "shard": str(shard),
            "kernels": "\n\n".join(k.body for k in kernels if k.body is not None),
            "registrations": _registrations(kernels),
            "redispatch_include": _redispatch_include(kernels),
            "node_includes": _shard_includes(node_shards[k.node] for k in kernels if k.node),
        },
    )
    return resolve_line_markers(text, f"VariableType_{shard}.cpp")


def _registrations(kernels: list[KernelFragment]) -> str:
    blocks: dict[tuple[str, str], list[str]] = {}
    for k in kernels:
        blocks.setdefault((k.namespace, k.dispatch_key), []).append(k.registration)
    return "\n\n".join(
        f"TORCH_LIBRARY_IMPL({ns}, {key}, m) {{\n" + "\n".join("  " + line for line in lines) + "\n}"
        for (ns, key), lines in sorted(blocks.items())
    )


def assemble_functions(shard: int, nodes: list[NodeFragment], options: EmitOptions) -> str:
    """``Functions_<shard>.cpp`` from the fragments of the Nodes in it (in plan order)."""
    text = render(
        "Functions.cpp",
        template_text("Functions.cpp"),
        {
            **_common(options),
            "shard": str(shard),
            "applies": "\n\n".join(n.apply for n in nodes),
            "node_includes": _shard_includes([shard]),
        },
    )
    return resolve_line_markers(text, f"Functions_{shard}.cpp")


# -- what an op library registers besides Autograd kernels -------------------------------------
def library_files(library: LibraryPlan, options: EmitOptions) -> dict[str, str]:
    """``RegisterSchema.cpp``, the ``ADInplaceOrViewType_<k>.cpp`` shards and, with backend
    registrations, ``NativeKernels.h`` and ``Register<Key>.cpp``; with backend registrations of an op
    library (``--namespace`` other than ``aten``, CMake's rule too), also ``RegisterFunctionalize.cpp``
    and the AOTInductor C shims (``AOTIShims.h``, ``AOTIShims.cpp``).  A yaml of aten's operators gets
    neither: there would be nothing in them.  All of it is written from the library's plan
    (``plan.library``), which decides it.

    They follow from native_functions.yaml (a view op's differentiability aside, which an edit of
    its derivatives.yaml entry re-plans with a clean run), so an incremental run keeps them.
    """
    files = {"RegisterSchema.cpp": register_schema(library.schemas, options.fake_module)}
    if library.registrations is not None:
        files.update(registration_files(library.registrations, options.line_directives))
    if library.aoti_shims is not None:
        files[FUNCTIONALIZE_UNIT] = register_functionalize(library.functionalized)
        files[AOTI_SHIMS_HEADER] = aoti_shims_header(library.aoti_shims)
        files[AOTI_SHIMS_UNIT] = aoti_shims_unit(library.aoti_shims)
    fragments = inplace_or_view_fragments(library.inplace_or_view, options)
    for shard in range(options.shards):
        in_shard = [f for f in fragments if f.shard == shard]
        files[f"ADInplaceOrViewType_{shard}.cpp"] = assemble_inplace_or_view(shard, in_shard, options)
    return files


def inplace_or_view_fragments(plans: Iterable[InplaceOrViewPlan], options: EmitOptions) -> list[KernelFragment]:
    """One ADInplaceOrView kernel per plan, in the shard of its op family (as its Autograd kernel)."""
    return [
        KernelFragment(
            shard_of(family(p.function.name.base), options.shards),
            inplace_or_view_definition(p),
            p.function.namespace,
            "ADInplaceOrView",
            inplace_or_view_registration(p),
            None,
        )
        for p in plans
    ]


def assemble_inplace_or_view(shard: int, kernels: list[KernelFragment], options: EmitOptions) -> str:
    """``ADInplaceOrViewType_<shard>.cpp`` from its kernels (in plan order)."""
    values = {
        **_base(options),
        "shard": str(shard),
        "kernels": "\n\n".join(k.body for k in kernels if k.body is not None),
        "registrations": _registrations(kernels),
        "redispatch_include": _redispatch_include(kernels),
    }
    return render("ADInplaceOrViewType.cpp", template_text("ADInplaceOrViewType.cpp"), values)
