"""Forward-mode AD of ``_foreach_`` kernels: the per-tensor JVP, element by element.

Before the call, a kernel checks its tensor lists have one length, notes per element whether
any input carries a tangent and, in place, keeps the old value of elements whose formula
reads it.  After the call, it evaluates the formula for each such element and attaches the
result to element ``i`` of the output (or of ``self``, updated in place).
"""

from __future__ import annotations

from dataclasses import replace

from ..model.schema import Argument, SchemaKind
from ..plan.infos import Forward
from ..plan.kernel import KernelPlan
from .foreach import bound_arguments, element, first_list
from .forward import formula_text, forward_flag, tangent_binding

__all__ = ["foreach_forward", "foreach_forward_formulas", "foreach_forward_setup"]


def _is_inplace(k: KernelPlan) -> bool:
    return k.function.kind is SchemaKind.inplace


def foreach_forward(k: KernelPlan) -> Forward | None:
    """The one formula this ``_foreach_`` kernel applies per element; None: it refuses forward AD."""
    if not k.function.name.base.startswith("_foreach_"):
        return None
    if k.info is None or k.function.kind is SchemaKind.out or len(k.info.forward) != 1:
        return None
    fw = k.info.forward[0]
    expected = ("self",) if _is_inplace(k) else ("result",)
    return fw if fw.var_names == expected else None


def _tangent_inputs(k: KernelPlan, fw: Forward) -> list[tuple[str, Argument]]:
    bound = bound_arguments(k)
    names = dict.fromkeys(n for n in fw.required_tangents if n in bound and bound[n].type.is_tensor_like())
    return [(n, bound[n]) for n in names]


def foreach_forward_setup(k: KernelPlan) -> list[str]:
    """Before the call: list lengths, which elements carry a tangent, the old values kept."""
    first = first_list(k)
    fw = foreach_forward(k)
    lines: list[str] = []
    if fw is not None:
        lists = [a.name for a in k.function.func.arguments.non_out if a.type.is_list() and a.type.is_tensor_like()]
        for other in lists[1:]:
            lines.append(
                f'TORCH_CHECK({first}.size() == {other}.size(), "Tensor lists must have the same number of '
                f'tensors, got ", {first}.size(), " and ", {other}.size());'
            )
        tests = " || ".join(f"isFwGradDefined({element(a)})" for _, a in _tangent_inputs(k, fw)) or "true"
        flag = forward_flag(fw)
        lines += [
            f"std::vector<bool> {flag}({first}.size());",
            f"for (const auto& i : c10::irange({first}.size())) {{",
            f"  {flag}[i] = {tests};",
            "}",
        ]
    if _is_inplace(k):
        lines.append(f"std::vector<::std::optional<at::Tensor>> original_selfs({first}.size());")
        if fw is not None and fw.required_original_self:
            lines += [
                f"for (const auto& i : c10::irange({first}.size())) {{",
                f"  if ({forward_flag(fw)}[i]) original_selfs[i] = {first}[i].clone();",
                "}",
            ]
    return lines


def _bindings(k: KernelPlan, fw: Forward) -> list[str]:
    lines: list[str] = []
    for name, arg in _tangent_inputs(k, fw):
        own = _is_inplace(k) and name == "self"
        zeros = "zeros_symint" if own else "_efficientzerotensor_symint"
        lines += tangent_binding(name, zeros, not own, element(arg))
    bound = bound_arguments(k)
    lines += [f"auto {n}_p = primal_of({element(bound[n])});" for n in dict.fromkeys(fw.required_primals)]
    if fw.required_original_self:
        lines += tangent_binding("original_self", "_efficientzerotensor_symint", False, "original_selfs[i]")
        lines.append("auto original_self_p = primal_of(original_selfs[i]);")
    elif _is_inplace(k) and fw.reuses_outplace:
        lines.append("self_t = GradMode::is_enabled() ? self_t.clone() : self_t;")
    return lines


def foreach_forward_formulas(k: KernelPlan, line_directives: bool = False) -> list[str]:
    """After the call: each element's tangent, attached to that element of the output."""
    fw = foreach_forward(k)
    if fw is None:
        return []
    first = first_list(k)
    target = first if _is_inplace(k) else "result"
    holder = f"{fw.var_names[0]}_new_fw_grad_opts"
    inplace = "true" if _is_inplace(k) else "false"
    return [
        f"std::vector<::std::optional<at::Tensor>> {holder}({first}.size(), ::std::nullopt);",
        f"for (const auto& i : c10::irange({holder}.size())) {{",
        f"  if ({forward_flag(fw)}[i]) {{",
        *("    " + line for line in _bindings(k, fw)),
        f"    {holder}[i] = {formula_text(replace(fw, derived=None), line_directives)};",  # element names: no lambda
        "  }",
        "}",
        f"for (const auto& i : c10::irange({holder}.size())) {{",
        f"  if ({holder}[i].has_value() && {holder}[i].value().defined() && {target}[i].defined()) {{",
        f"    {target}[i]._set_fw_grad({holder}[i].value(), /* level */ 0, /* is_inplace_op */ {inplace});",
        "  }",
        "}",
    ]
