"""Assembling the output files from the plan: shards, umbrella header, one header per Node."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .. import __version__
from ..plan.infos import DerivativeInfo
from ..plan.kernel import KernelPlan, Plan
from .kernel import kernel_definition, registration
from .node import node_apply, node_header
from .templates import render, template_text

__all__ = ["EmitOptions", "render_outputs", "shard_of"]


@dataclass(frozen=True)
class EmitOptions:
    shards: int = 10
    manual_headers: tuple[str, ...] = ()  # include spellings, e.g. torch/csrc/autograd/FunctionsManual.h
    view_functions: frozenset[str] = frozenset()  # Nodes of these ops derive from Node
    using_namespaces: tuple[str, ...] = ()  # where the manual helpers live


def shard_of(name: str, shards: int) -> int:
    """A stable shard for ``name``: adding an op changes only the shard it lands in."""
    return int(hashlib.sha1(name.encode()).hexdigest()[:8], 16) % shards


def render_outputs(plan: Plan, options: EmitOptions) -> dict[str, str]:
    """Relative path → content of every generated file."""
    files: dict[str, str] = {}
    base = {"version": __version__, "shards": str(options.shards)}
    manual = "\n".join(f'#include "{h}"' for h in options.manual_headers)
    for info in plan.infos:
        assert info.node is not None
        files[f"nodes/{info.node}.h"] = render(
            "node.h", template_text("node.h"), {**base, "node": info.node,
                                                 "declaration": node_header(info, options.view_functions)},
        )  # fmt: skip
    files["FunctionsBase.h"] = render("FunctionsBase.h", template_text("FunctionsBase.h"), base)
    files["Functions.h"] = render(
        "Functions.h", template_text("Functions.h"), {**base, "node_includes": _includes(i.node for i in plan.infos)}
    )
    for shard in range(options.shards):
        files[f"VariableType_{shard}.cpp"] = _variable_type_shard(plan, shard, options, base, manual)
        files[f"Functions_{shard}.cpp"] = _functions_shard(plan, shard, options, base, manual)
    return files


def _includes(nodes: object) -> str:
    return "\n".join(f'#include "nodes/{n}.h"' for n in sorted(set(nodes)))  # type: ignore[call-overload]


def _variable_type_shard(plan: Plan, shard: int, options: EmitOptions, base: dict[str, str], manual: str) -> str:
    kernels = [k for k in plan.kernels if shard_of(k.function.cpp_name, options.shards) == shard]
    bodies = [kernel_definition(k) for k in kernels if k.kind == "kernel"]
    nodes = {k.node for k in kernels if k.node and k.node != "NotImplemented"}
    return render("VariableType.cpp", template_text("VariableType.cpp"), {
        **base, "shard": str(shard), "kernels": "\n\n".join(bodies), "registrations": _registrations(kernels),
        "node_includes": _includes(nodes), "manual_includes": manual,
        "using_namespaces": "\n".join(f"using namespace {ns};" for ns in options.using_namespaces),
    })  # fmt: skip


def _registrations(kernels: list[KernelPlan]) -> str:
    blocks: dict[tuple[str, str], list[str]] = {}
    for k in kernels:
        blocks.setdefault((k.function.namespace, k.dispatch_key), []).append(registration(k))
    return "\n\n".join(
        f"TORCH_LIBRARY_IMPL({ns}, {key}, m) {{\n" + "\n".join("  " + line for line in lines) + "\n}"
        for (ns, key), lines in sorted(blocks.items())
    )


def _functions_shard(plan: Plan, shard: int, options: EmitOptions, base: dict[str, str], manual: str) -> str:
    infos: list[DerivativeInfo] = [i for i in plan.infos if shard_of(str(i.node), options.shards) == shard]
    return render("Functions.cpp", template_text("Functions.cpp"), {
        **base, "shard": str(shard), "applies": "\n\n".join(node_apply(i) for i in infos),
        "node_includes": _includes(i.node for i in infos), "manual_includes": manual,
        "using_namespaces": "\n".join(f"using namespace {ns};" for ns in options.using_namespaces),
    })  # fmt: skip
