"""In-place ``_foreach_`` kernels: one Node of the per-tensor op for each list element."""

from __future__ import annotations

import re

from ..model.schema import Argument
from ..plan.formulas import SavedValue, ident_re
from ..plan.kernel import NOT_IMPLEMENTED_NODE, KernelPlan

__all__ = [
    "bound_arguments",
    "element",
    "first_list",
    "foreach_fire_hooks",
    "foreach_history",
    "foreach_nodes",
    "foreach_saved_outputs",
]


def first_list(k: KernelPlan) -> str:
    """The kernel's first list argument: its length is the number of elements."""
    return next(a.name for a in k.function.func.arguments.non_out if a.type.is_list())


def bound_arguments(k: KernelPlan) -> dict[str, Argument]:
    """Name in the formulas → this kernel's argument it stands for (in place, the formulas are the
    per-tensor op's; out of place they are adapted to this op, and the names are its own)."""
    assert k.info is not None
    ref_args = k.info.func.func.arguments.non_out
    return dict(zip((r.name for r in ref_args), k.function.func.arguments.non_out, strict=False))


def element(a: Argument) -> str:
    """Element ``i`` of a list argument; any other argument as it is."""
    return f"{a.name}[i]" if a.type.is_list() else a.name


def _elements(k: KernelPlan) -> dict[str, str]:
    """Per-tensor op argument name → the expression of element ``i`` in this kernel."""
    return {name: element(a) for name, a in bound_arguments(k).items()}


def _element_expr(text: str, elements: dict[str, str]) -> str:
    pattern = re.compile("|".join(ident_re(re.escape(n)) for n in sorted(elements, key=len, reverse=True)))

    def swap(m: re.Match[str]) -> str:
        whole = m.group(0)
        for name, expr in elements.items():
            found = re.fullmatch(ident_re(re.escape(name)), whole)
            if found:
                return f"{found.group(1)}{expr}{found.group(2)}"
        return whole

    return pattern.sub(swap, text) if elements else text


def _save(v: SavedValue, elements: dict[str, str]) -> list[str]:
    expr = _element_expr(v.expr, elements)
    if v.cpp_type in ("at::Tensor", "::std::optional<at::Tensor>"):
        if v.expr == "self":  # the old value of an element updated in place
            return [
                "if (!original_selfs[i].has_value()) original_selfs[i] = self[i].clone();",
                f"grad_fn->{v.name}_ = SavedVariable(original_selfs[i].value(), false);",
            ]
        return [f"grad_fn->{v.name}_ = SavedVariable({expr}, false);"]
    if v.cpp_type in ("at::IntArrayRef", "c10::SymIntArrayRef"):
        return [f"grad_fn->{v.name} = {expr}.vec();"]
    return [f"grad_fn->{v.name} = {expr};"]


def _guarded(k: KernelPlan, v: SavedValue, elements: dict[str, str]) -> list[str]:
    lines = _save(v, elements)
    guard = k.save_guard(v.name)
    return lines if guard is None else [f"if ({guard}) {{", *("  " + x for x in lines), "}"]


def foreach_nodes(k: KernelPlan) -> list[str]:
    """Create and fill the per-element Nodes (before the call)."""
    node = k.node or NOT_IMPLEMENTED_NODE
    first = first_list(k)
    if k.info is None or node == NOT_IMPLEMENTED_NODE:
        inputs, saved = [v.name + "[i]" if v.type.is_list() else v.name for v in k.args_with_derivatives], []
        make = f'c10::make_intrusive<NotImplemented>("{k.function.cpp_name}")'
    else:
        elements = _elements(k)
        inputs = [elements[a.name] for a in k.info.args_with_derivatives]
        saved = [line for v in sorted(k.info.saved_inputs, key=lambda v: v.name) for line in _guarded(k, v, elements)]
        make = f"c10::make_intrusive<{node}>()"
    edges = ", ".join(inputs)
    lines = [  # original_selfs is declared by foreach_forward_setup
        f"std::vector<c10::intrusive_ptr<{node}>> grad_fns({first}.size());",
        "if (_any_requires_grad) {",
        f"  for (const auto& i : c10::irange({first}.size())) {{",
        f"    const auto ith_requires_grad = compute_requires_grad({edges});",
        f"    check_inplace({first}[i], ith_requires_grad);",
        "    if (!ith_requires_grad) {",
        "      continue;",
        "    }",
        f"    auto grad_fn = {make};",
        f"    grad_fn->set_next_edges(collect_next_edges( {edges} ));",
        *("    " + line for line in saved),
        "    grad_fns[i] = grad_fn;",
        "  }",
        "}",
    ]
    return lines


def foreach_history(k: KernelPlan, *, capture: bool = False) -> list[str]:
    """Attach each updated element to its Node (``capture``: keep the Node attached, for the hooks)."""
    first = first_list(k)
    keep = ["c10::SmallVector<c10::intrusive_ptr<Node>, 8> _rebased_fns(grad_fns.size());"] if capture else []
    return [
        *keep,
        f"for (const auto& i : c10::irange({first}.size())) {{",
        "  if (grad_fns[i]) {",
        f"    {'_rebased_fns[i] = ' if capture else ''}rebase_history({first}[i], grad_fns[i]);",
        "  }",
        "}",
    ]


def foreach_fire_hooks(k: KernelPlan) -> list[str]:
    """Node-creation hooks see each element's attached Node once it is complete (2.14 and later)."""
    return [
        "for (const auto& i : c10::irange(grad_fns.size())) {",
        "  if (_rebased_fns[i]) {",
        "    fire_node_creation_hooks(_rebased_fns[i]);",
        "  }",
        "}",
    ]


def foreach_saved_outputs(k: KernelPlan) -> list[str]:
    """Save what the formulas read of the result (after its tangent is attached)."""
    if k.info is None or k.node in (None, NOT_IMPLEMENTED_NODE) or not k.info.saved_outputs:
        return []
    first = first_list(k)
    saves = [
        f"    grad_fns[i]->{v.name}_ = SavedVariable({first}[i], true, {first}[i].is_view());"
        for v in sorted(k.info.saved_outputs, key=lambda v: v.name)
    ]
    return [f"for (const auto& i : c10::irange({first}.size())) {{", "  if (grad_fns[i]) {", *saves, "  }", "}"]
