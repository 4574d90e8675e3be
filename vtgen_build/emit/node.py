"""Spelling one backward Node: its struct (a header of its own) and its ``apply``."""

from __future__ import annotations

from ..plan.formulas import SavedValue, uses_ident
from ..plan.infos import Backward, DerivativeInfo
from ..plan.values import saved_member_type
from .lines import at_yaml_line

__all__ = ["node_apply", "node_header"]

_LIST_TYPES = (
    "at::TensorList",
    "at::ITensorListRef",
    "c10::List<::std::optional<at::Tensor>>",
    "::std::vector<at::Tensor>",
)


def _members(info: DerivativeInfo) -> list[SavedValue]:
    return sorted(info.saved_inputs, key=lambda v: v.name) + sorted(info.saved_outputs, key=lambda v: v.name)


def _is_saved_variable(v: SavedValue) -> bool:
    return saved_member_type(v.cpp_type, is_output=v.is_output)[0] in ("SavedVariable", "std::vector<SavedVariable>")


def _declarations(v: SavedValue) -> list[str]:
    types = saved_member_type(v.cpp_type, is_output=v.is_output)
    name = v.name + "_" if _is_saved_variable(v) else v.name
    first = f"{types[0]} {name}{' = 0' if types[0] == 'int64_t' else ''};"
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
    members = _members(info)
    release = [line for v in members for line in _release(v)]
    lines = [
        f"struct TORCH_API {info.node} : public {base} {{",
        f"  using {base}::{base};",
        "  variable_list apply(variable_list&& grads) override;",
        f'  std::string name() const override {{ return "{info.node}"; }}',
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
    lines += ["  " + d for v in members for d in _declarations(v)]
    lines += [f"  size_t {a.name}_size_;" for a in info.args_with_derivatives if a.cpp_type in _LIST_TYPES]
    lines.append("};")
    return "\n".join(lines)


def _unpack_member(v: SavedValue) -> str | None:
    types = saved_member_type(v.cpp_type, is_output=v.is_output)
    owner = "getptr()" if v.is_output else "nullptr"
    if types[0] == "SavedVariable":
        return f"auto {v.name} = {v.name}_.unpack({'getptr()' if v.is_output else ''});"
    if types[0] == "std::vector<SavedVariable>":
        helper = "unpack_opt_list" if "optional" in v.cpp_type else "unpack_list"
        return f"auto {v.name} = {helper}({v.name}_, {owner});"
    return None


def node_apply(info: DerivativeInfo, *, line_directives: bool = False) -> str:
    """``<Node>::apply``: evaluate each formula only for the inputs that need a gradient.

    ``line_directives``: each formula is reported at its derivatives.yaml line (check builds).
    """
    assert info.node is not None
    lines = ["vtgen_detail::IndexRanges gen;"]
    for a in info.args_with_derivatives:
        size = f"{a.name}_size_" if a.cpp_type in _LIST_TYPES else "1"
        lines.append(f"auto {a.name}_ix = gen.range({size});")
    lines.append("variable_list grad_inputs(gen.size());")
    members = _members(info)
    if any(_release(v) for v in members):
        lines.insert(0, "std::lock_guard<std::mutex> lock(mutex_);")
    lines += [
        f"TORCH_CHECK(!{v.name}_released_, ERR_BACKWARD_TWICE);"
        for v in members
        if len(saved_member_type(v.cpp_type, is_output=v.is_output)) > 1
    ]
    lines += [u for v in members if (u := _unpack_member(v)) is not None]
    lines += _grad_aliases(info)
    if any(_wants_any_grad_defined(info, b) for b in info.backward):
        lines.append("bool any_grad_defined = vtgen_detail::any_variable_defined(grads);")
    for b in info.backward:
        lines += _formula(info, b, _formula_text(b, line_directives))
    lines.append("return grad_inputs;")
    body = "\n".join("  " + x for x in "\n".join(lines).split("\n"))
    return f"variable_list {info.node}::apply(variable_list&& grads) {{\n{body}\n}}"


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


def _formula(info: DerivativeInfo, b: Backward, formula: str) -> list[str]:
    checks = " || ".join(f"task_should_compute_output({{ {n}_ix }})" for n in b.var_names)
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
        masks = ", ".join(f"task_should_compute_output({{ {n}_ix }})" for n in b.var_names)
        lines.append(f"  auto grad_input_mask = std::array<bool, {len(b.var_names)}>{{ {masks} }};")
    lines.append(f"  auto grad_result = {formula};")
    for i, n in enumerate(b.var_names):
        lines += [
            f"  if (task_should_compute_output({{ {n}_ix }})) {{",
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
