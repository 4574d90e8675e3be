"""Spelling forward-mode AD (JVP) in a kernel: tangent flags before the call, formulas after.

Only forward formulas whose outputs are plain Tensors are spelled here; the
kernel emitter falls back to a "not supported" check for the rest.
"""

from __future__ import annotations

from ..model.schema import SchemaKind
from ..plan.infos import Derived, Forward
from ..plan.kernel import KernelPlan
from .lines import at_yaml_line

__all__ = [
    "formula_text",
    "forward_flag",
    "forward_flags",
    "forward_formulas",
    "keep_original_self",
    "needs_original_self",
    "supports_forward",
    "tangent_binding",
]


def _formulas(k: KernelPlan) -> tuple[Forward, ...]:
    return k.info.forward if k.info is not None else ()


def supports_forward(k: KernelPlan) -> bool:
    """Forward formulas exist and every output they set is a Tensor."""
    forward = _formulas(k)
    if not forward or k.function.name.base.startswith("_foreach_") or k.function.kind is SchemaKind.out:
        return False
    return all(str(t) == "Tensor" or _is_tensor_list(fw) for fw in forward for t in fw.var_types)


def _is_tensor_list(fw: Forward) -> bool:
    """One output, a ``Tensor[]`` (``split``, ``unbind``): one tangent per element."""
    return len(fw.var_types) == 1 and str(fw.var_types[0]) == "Tensor[]"


def needs_original_self(k: KernelPlan) -> bool:
    return supports_forward(k) and any(fw.required_original_self for fw in _formulas(k))


def _inputs(k: KernelPlan, names: tuple[str, ...]) -> list[str]:
    """The named inputs that carry tangents (differentiable tensors), once each, in order."""
    differentiable = {v.name for v in k.differentiable_inputs}
    return [n for i, n in enumerate(names) if n in differentiable and n not in names[:i]]


def forward_flag(fw: Forward) -> str:
    return "_any_has_forward_grad_" + "_".join(fw.var_names)


def _tangent_test(k: KernelPlan, name: str) -> str:
    arg = k.function.func.arguments.get(name)
    is_list = arg is not None and arg.type.is_list()
    return f"isFwGradDefinedTensorList({name})" if is_list else f"isFwGradDefined({name})"


def forward_flags(k: KernelPlan) -> list[str]:
    """Before the call: which formulas have a tangent to propagate."""
    lines = []
    condition = k.info.output_differentiability_condition if k.info else None
    for fw in _formulas(k):
        tests = " || ".join(_tangent_test(k, n) for n in _inputs(k, fw.required_tangents)) or "true"
        if condition:
            tests = f"({condition}) && ({tests})"
        lines.append(f"[[maybe_unused]] auto {forward_flag(fw)} = ({tests});")
    return lines


def keep_original_self(k: KernelPlan) -> list[str]:
    """In-place ops whose JVP reads the input's old value copy it before the call."""
    if not needs_original_self(k):
        return []
    flags = " || ".join(forward_flag(fw) for fw in _formulas(k) if fw.required_original_self)
    return [f"if ({flags}) {{", "  if (!original_self.has_value()) original_self = self.clone();", "}"]


def tangent_binding(
    name: str, zeros: str, wrapped: bool, source: str | None = None, maybe_unused: bool = False
) -> list[str]:
    """``name_t``: the tangent of ``source`` (default: ``name``), zeros when it has none.

    ``maybe_unused``: a formula rewritten to read ``original_self_t`` may not read ``name_t``.
    """
    source = source or name
    mark = "[[maybe_unused]] " if maybe_unused else ""
    lines = [
        f"auto {name}_t_raw = tangent_of({source});",
        f"auto {name}_tensor = value_of({source});",
        f"{mark}auto {name}_t = ({name}_t_raw.defined() || !{name}_tensor.defined())",
        f"  ? {name}_t_raw : at::{zeros}({name}_tensor.sym_sizes(), {name}_tensor.options());",
    ]
    return [*lines, f"keep_wrapped_number({name}_tensor, {name}_t);"] if wrapped else lines


def _bindings(k: KernelPlan, fw: Forward) -> list[str]:
    inplace = k.function.kind is SchemaKind.inplace
    lines: list[str] = []
    rewritten = inplace and fw.required_original_self  # self_t and self_p may then go unread
    for name in _inputs(k, fw.required_tangents):
        own = inplace and name == "self"
        zeros = "zeros_symint" if own else "_efficientzerotensor_symint"
        lines += tangent_binding(name, zeros, not own, maybe_unused=own and rewritten)
    for n in _inputs(k, fw.required_primals):
        mark = "[[maybe_unused]] " if rewritten and n == "self" else ""
        lines.append(f"{mark}auto {n}_p = primal_of({n});")
    if fw.required_original_self:
        lines += tangent_binding("original_self", "_efficientzerotensor_symint", False)
        lines.append("auto original_self_p = primal_of(original_self);")
    elif inplace and fw.reuses_outplace and not k.function.name.base.startswith("_foreach_"):
        # the out-of-place formula reads self_t, which the result is then copied into: under grad
        # mode, work on a copy so the graph recorded for the tangent does not alias what it writes
        lines.append("self_t = GradMode::is_enabled() ? self_t.clone() : self_t;")
    return lines


def formula_text(fw: Forward, line_directives: bool) -> str:
    if not line_directives:
        return fw.formula
    if fw.derived is not None and fw.derived.formula == fw.formula:
        return _derived_text(fw.derived)
    # the yaml spells it `  result: formula`; the kernel body indents this line by two spaces
    column = 2 + len(", ".join(fw.var_names)) + 2 + 1
    return at_yaml_line(fw.formula, fw.location, column - 2)


def _derived_text(d: Derived) -> str:
    """A forward formula written from a backward one, as the backward text itself at its own yaml line
    and column (the names it uses bound to their forward values): a compiler error in that text points
    into the line holding it, inside a lambda named for where it came from."""
    binds = " ".join(f"const auto& {name} = {value};" for name, value in d.bindings)
    column = 2 + len(", ".join(d.var_names)) + 2 + 1
    text = at_yaml_line(d.original, d.location, column - 2)
    value = f"[&]() {{ /* derived from the backward formula */ {binds} return ({text}); }}().conj()"
    return f"self_t_raw.defined() ? self_t_raw.copy_({value}) : {value}" if d.inplace_update else value


def forward_formulas(k: KernelPlan, line_directives: bool = False) -> list[str]:
    """After the call: evaluate every formula whose inputs carry a tangent, then attach the results.

    All formulas run before any tangent is attached: a formula reading another output (``L``
    in linalg_lu's ``U`` formula) must see it without a tangent, or its result would carry one.
    ``line_directives``: compiler errors in a formula are reported at its derivatives.yaml line.
    """
    computed: list[str] = []
    attached: list[str] = []
    for fw in _formulas(k):
        holder = "_".join(fw.var_names) + "_new_fw_grad_opt"
        computed += _computation(k, fw, holder, line_directives)
        attached += _list_attach(fw, holder) if _is_tensor_list(fw) else _attach(k, fw, holder)
    return computed + attached


def _computation(k: KernelPlan, fw: Forward, holder: str, line_directives: bool) -> list[str]:
    single = len(fw.var_names) == 1
    if _is_tensor_list(fw):
        value_type, guard = "::std::vector<at::Tensor>", forward_flag(fw)
    else:
        value_type = "at::Tensor" if single else f"::std::tuple<{','.join(['at::Tensor'] * len(fw.var_names))}>"
        guard = forward_flag(fw) + (f" && ({fw.var_names[0]}.defined())" if single else "")
    return [
        f"::std::optional<{value_type}> {holder} = ::std::nullopt;",
        f"if ({guard}) {{",
        *("  " + b for b in _bindings(k, fw)),
        f"  {holder} = {formula_text(fw, line_directives)};",
        "}",
    ]


def _attach(k: KernelPlan, fw: Forward, holder: str) -> list[str]:
    inplace = "true" if k.function.kind is SchemaKind.inplace else "false"
    single = len(fw.var_names) == 1
    lines: list[str] = []
    for i, out in enumerate(fw.var_names):
        value = f"{holder}.value()" if single else f"std::get<{i}>({holder}.value())"
        lines += [
            f"if ({holder}.has_value() && {value}.defined() && {out}.defined()) {{",
            f"  {out}._set_fw_grad({value}, /* level */ 0, /* is_inplace_op */ {inplace});",
            "}",
        ]
    return lines


def _list_attach(fw: Forward, holder: str) -> list[str]:
    """A ``Tensor[]`` output: the formula gave one tangent per element, attached element by element."""
    out = fw.var_names[0]
    return [
        f"if ({holder}.has_value()) {{",
        f"  const auto& tangents = {holder}.value();",
        f"  TORCH_INTERNAL_ASSERT({out}.size() == tangents.size());",
        f"  for (const auto i : c10::irange({out}.size())) {{",
        f"    if (tangents[i].defined() && {out}[i].defined()) {{",
        f"      {out}[i]._set_fw_grad(tangents[i], /* level */ 0, /* is_inplace_op */ false);",
        "    }",
        "  }",
        "}",
    ]
