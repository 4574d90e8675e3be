"""Spelling one backward Node: its struct (a header of its own) and its definitions.

``apply`` unpacks the saved values and calls the Node's functional form
(``<Node>_apply_functional``: the formulas, reading only its arguments), which compiled
autograd traces through ``apply_with_saved`` (see :mod:`.compiled_autograd`).
"""

from __future__ import annotations

from ..plan.formulas import SavedValue, uses_ident
from ..plan.infos import Backward, DerivativeInfo
from ..plan.values import saved_member_type
from .compiled_autograd import (
    LIST_TYPES,
    apply_with_saved,
    compiled_args,
    functional_args,
    functional_ivalue,
    member_name,
    members,
    needs_input_grad,
    released_checks,
    unpacks,
)
from .lines import at_yaml_line

__all__ = ["node_apply", "node_header"]


def _declarations(v: SavedValue) -> list[str]:
    types = saved_member_type(v.cpp_type, is_output=v.is_output)
    first = f"{types[0]} {member_name(v)}{' = 0' if types[0] == 'int64_t' else ''};"
    return [first] + ([f"bool {v.name}_released_ = false;"] if len(types) > 1 else [])


def _release(v: SavedValue) -> list[str]:
    types = saved_member_type(v.cpp_type, is_output=v.is_output)
    if types[0] == "SavedVariable":
        return [f"{v.name}_.reset_data();"]
    if types[0] == "std::vector<SavedVariable>":
        return [f"{v.name}_.clear();", f"{v.name}_released_ = true;"]
    if types[0] == "std::vector<at::Scalar>":
        return [f"{v.name}.clear();", f"{v.name}_released_ = true;"]
    return []


def _base_class(info: DerivativeInfo, view_names: frozenset[str]) -> str:
    return "Node" if info.name in view_names else "TraceableFunction"


def node_header(info: DerivativeInfo, view_names: frozenset[str]) -> str:
    """The struct declaration of ``info.node``."""
    assert info.node is not None
    base = _base_class(info, view_names)
    saved = members(info)
    release = [line for v in saved for line in _release(v)]
    lines = [
        f"struct TORCH_API {info.node} : public {base} {{",
        f"  using {base}::{base};",
        "  variable_list apply(variable_list&& grads) override;",
        f'  std::string name() const override {{ return "{info.node}"; }}',
        "  void compiled_args(CompiledNodeArgs& args) const override;",
        "  variable_list apply_with_saved(const variable_list& inputs, SwapSavedVariables& saved) override;",
        "  void release_variables() override {",
    ]
    if release:
        lines += ["    std::lock_guard<std::mutex> lock(mutex_);", *("    " + r for r in release)]
    lines.append("  }")
    if info.uses("retain_variables"):
        lines += [
            "  bool retain_variables = true;",
            "  void will_release_variables() override { retain_variables = false; }",
        ]
    lines += ["  " + d for v in saved for d in _declarations(v)]
    lines += [f"  size_t {a.name}_size_;" for a in info.args_with_derivatives if a.cpp_type in LIST_TYPES]
    lines.append("};")
    return "\n".join(lines)


def node_apply(info: DerivativeInfo, *, line_directives: bool = False) -> str:
    """Every definition of ``info.node``: its functional form, ``apply`` and compiled-autograd support.

    ``line_directives``: each formula is reported at its derivatives.yaml line (check builds).
    """
    return "\n\n".join(
        [
            _functional(info, line_directives),
            functional_ivalue(info),
            _apply(info),
            compiled_args(info),
            apply_with_saved(info),
        ]
    )


def _apply(info: DerivativeInfo) -> str:
    """``<Node>::apply``: unpack what was saved and ask which inputs need a gradient."""
    lines = []
    if any(_release(v) for v in members(info)):
        lines.append("std::lock_guard<std::mutex> lock(mutex_);")
    lines += [*released_checks(info), *unpacks(info), *needs_input_grad(info)]
    call = ", ".join(["std::move(grads)", "needs_input_grad", *(a.name for a in functional_args(info))])
    lines.append(f"return {info.node}_apply_functional({call});")
    body = "\n".join("  " + x for x in lines)
    return f"variable_list {info.node}::apply(variable_list&& grads) {{\n{body}\n}}"


def _functional(info: DerivativeInfo, line_directives: bool) -> str:
    """``<Node>_apply_functional``: evaluate each formula only for the inputs that need a gradient."""
    assert info.node is not None
    lines = ["vtgen_detail::IndexRanges gen;"]
    for a in info.args_with_derivatives:
        size = f"{a.name}_size_" if a.cpp_type in LIST_TYPES else "1"
        lines.append(f"auto {a.name}_ix = gen.range({size});")
    lines.append("variable_list grad_inputs(gen.size());")
    lines += _grad_aliases(info)
    if any(_wants_any_grad_defined(info, b) for b in info.backward):
        lines.append("bool any_grad_defined = vtgen_detail::any_variable_defined(grads);")
    for b in info.backward:
        lines += _formula(info, b, _formula_text(b, line_directives))
    lines.append("return grad_inputs;")
    body = "\n".join("  " + x for x in "\n".join(lines).split("\n"))
    n = len(info.args_with_derivatives)
    params = "".join(f", {a.cpp_type} {a.name}" for a in functional_args(info))
    return (
        f"static variable_list {info.node}_apply_functional("
        f"variable_list&& grads, std::array<bool, {n}> needs_input_grad{params}) {{\n{body}\n}}"
    )


def _grad_aliases(info: DerivativeInfo) -> list[str]:
    if info.uses("grad"):
        return ["const auto& grad = grads[0];"]
    return [
        f"const auto& {name} = grads[{info.available_named_gradients.index(name)}];"
        for name in sorted(info.used_named_gradients)
    ]


def _wants_any_grad_defined(info: DerivativeInfo, b: Backward) -> bool:
    if len(b.var_names) != 1 or "not_implemented" in b.formula or info.name.startswith("_foreach_"):
        return False
    arg = next((a for a in info.args_with_derivatives if a.name == b.var_names[0]), None)
    return arg is not None and arg.cpp_type in ("at::Tensor", "::std::optional<at::Tensor>")


def _formula_text(b: Backward, line_directives: bool) -> str:
    if not line_directives:
        return b.formula
    # the yaml spells it `  a, b: formula`; node_apply indents the body by two more spaces
    column = 2 + len(", ".join(b.var_names)) + 2 + 1
    return at_yaml_line(b.formula, b.location, column - 2)


def _wanted(info: DerivativeInfo, name: str) -> str:
    """Whether the engine wants the gradient of input ``name`` (its slot in ``needs_input_grad``)."""
    index = [a.name for a in info.args_with_derivatives].index(name)
    return f"needs_input_grad[{index}]"


def _formula(info: DerivativeInfo, b: Backward, formula: str) -> list[str]:
    checks = " || ".join(_wanted(info, n) for n in b.var_names)
    if info.name.startswith("_foreach_"):
        return _foreach_formula(b, checks, formula)
    if len(b.var_names) == 1:
        expr = f"any_grad_defined ? ({formula}) : Tensor()" if _wants_any_grad_defined(info, b) else formula
        return [
            f"if ({checks}) {{",
            f"  auto grad_result = {expr};",
            f"  vtgen_detail::copy_range(grad_inputs, {b.var_names[0]}_ix, grad_result);",
            "}",
        ]
    lines = [f"if ({checks}) {{"]
    if uses_ident(b.formula, "grad_input_mask"):
        masks = ", ".join(_wanted(info, n) for n in b.var_names)
        lines.append(f"  auto grad_input_mask = std::array<bool, {len(b.var_names)}>{{ {masks} }};")
    lines.append(f"  auto grad_result = {formula};")
    for i, n in enumerate(b.var_names):
        lines += [
            f"  if ({_wanted(info, n)}) {{",
            f"    vtgen_detail::copy_range(grad_inputs, {n}_ix, std::get<{i}>(grad_result));",
            "  }",
        ]
    return [*lines, "}"]


def _foreach_formula(b: Backward, checks: str, formula: str) -> list[str]:
    target = b.var_names[0]
    return [
        f"if ({checks}) {{",
        "  std::vector<Tensor> grad_result;",
        "  grad_result.reserve(grads.size());",
        "  for (const auto & i : c10::irange(grads.size())) {",
        f"    grad_result.emplace_back(grads[i].defined() ? Tensor({formula}) : Tensor());",
        "  }",
        f"  vtgen_detail::copy_range(grad_inputs, {target}_ix, grad_result);",
        "}",
    ]
