"""In-place ``_foreach_`` kernels: one Node of the per-tensor op for each list element."""

from __future__ import annotations

import re

from ..plan.formulas import SavedValue, ident_re
from ..plan.kernel import NOT_IMPLEMENTED_NODE, KernelPlan

__all__ = ["foreach_history", "foreach_nodes", "foreach_saved_outputs"]


def _elements(k: KernelPlan) -> dict[str, str]:
    """Per-tensor op argument name → the expression of element ``i`` in this kernel."""
    assert k.info is not None
    ref_args = k.info.func.func.arguments.non_out
    own_args = k.function.func.arguments.non_out
    return {r.name: (a.name + "[i]" if a.type.is_list() else a.name) for a, r in zip(own_args, ref_args, strict=False)}


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
    first_list = next(a.name for a in k.function.func.arguments.non_out if a.type.is_list())
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
        f"std::vector<c10::intrusive_ptr<{node}>> grad_fns({first_list}.size());",
        "if (_any_requires_grad) {",
        f"  for (const auto& i : c10::irange({first_list}.size())) {{",
        f"    const auto ith_requires_grad = compute_requires_grad({edges});",
        f"    check_inplace({first_list}[i], ith_requires_grad);",
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


def foreach_history(k: KernelPlan) -> list[str]:
    """Attach each updated element to its Node."""
    first_list = next(a.name for a in k.function.func.arguments.non_out if a.type.is_list())
    return [
        f"for (const auto& i : c10::irange({first_list}.size())) {{",
        "  if (grad_fns[i]) {",
        f"    rebase_history({first_list}[i], grad_fns[i]);",
        "  }",
        "}",
    ]


def foreach_saved_outputs(k: KernelPlan) -> list[str]:
    """Save what the formulas read of the result (after its tangent is attached)."""
    if k.info is None or k.node in (None, NOT_IMPLEMENTED_NODE) or not k.info.saved_outputs:
        return []
    first_list = next(a.name for a in k.function.func.arguments.non_out if a.type.is_list())
    saves = [
        f"    grad_fns[i]->{v.name}_ = SavedVariable({first_list}[i], true, {first_list}[i].is_view());"
        for v in sorted(k.info.saved_outputs, key=lambda v: v.name)
    ]
    return [f"for (const auto& i : c10::irange({first_list}.size())) {{", "  if (grad_fns[i]) {", *saves, "  }", "}"]
