"""Spelling one Autograd kernel in C++ from its KernelPlan (no decisions are made here)."""

from __future__ import annotations

from ..model.cpp_api import dispatcher_arguments, dispatcher_returns
from ..model.schema import SchemaKind
from ..plan.formulas import SavedValue
from ..plan.kernel import NOT_IMPLEMENTED_NODE, KernelPlan, unpacked_arguments
from ..plan.mutating import mutated_arguments
from ..plan.policy import DEFAULT_RELEASE, fires_node_creation_hooks
from ..plan.values import CppValue, cpp_return_names
from .debug import debug_after, debug_before
from .dispatch import handle_declaration, redispatch_call
from .foreach import foreach_fire_hooks, foreach_history, foreach_nodes, foreach_saved_outputs
from .foreach_forward import foreach_forward, foreach_forward_formulas, foreach_forward_setup
from .forward import forward_flags, forward_formulas, keep_original_self, needs_original_self, supports_forward

__all__ = ["kernel_definition", "registration"]


def registration(k: KernelPlan) -> str:
    """The ``m.impl`` line registering a kernel or the not-implemented fallback."""
    if k.kind == "fallback":
        return f'm.impl("{k.op}", torch::autograd::autogradNotImplementedFallback());'
    return f'm.impl("{k.op}", TORCH_FN(VariableType::{k.wrapper}));'


def kernel_definition(k: KernelPlan, *, line_directives: bool = False, release: str = DEFAULT_RELEASE) -> str:
    """The kernel's C++ definition; ``line_directives`` (check builds) maps JVP formulas to the yaml.

    ``release``: the policy says whether its kernels fire node-creation hooks.
    """
    f = k.function
    params = dispatcher_arguments(f)
    signature = ", ".join(["c10::DispatchKeySet ks", *(f"{b.type.cpp()} {b.name}" for b in params)])
    lines = [
        *_unpack(k),
        *_derivative_setup(k),
        *debug_before(k),
        *_call(k),
        *debug_after(k),
        *_after_call(k, line_directives, hooks=fires_node_creation_hooks(release)),
    ]
    if f.func.returns:
        lines.append(f"return {_return_value(k)};")
    body = "\n".join("  " + line for line in "\n".join(lines).split("\n"))
    return f"{dispatcher_returns(f).cpp()} {k.wrapper}({signature}) {{\n{body}\n}}"


def _unpack(k: KernelPlan) -> list[str]:
    lines = []
    for i, name, ty in unpacked_arguments(k.function):
        ref = "auto " if ty.endswith("[]") else "auto& "
        lines.append(f'{ref}{name}_ = unpack({name}, "{name}", {i});')
    return lines


def _names(values: tuple[object, ...]) -> str:
    return ", ".join(v.name for v in values)  # type: ignore[attr-defined]


def _derivative_setup(k: KernelPlan) -> list[str]:
    if not k.requires_derivative:
        return []
    lines = [f"[[maybe_unused]] auto _any_requires_grad = compute_requires_grad( {_names(k.args_with_derivatives)} );"]
    if k.info is not None and k.info.output_differentiability_condition:
        lines.append(f"_any_requires_grad &= ({k.info.output_differentiability_condition});")
    if k.function.kind is SchemaKind.out:
        return [*lines, "c10::intrusive_ptr<Node> grad_fn;", *_forbid_out_grad(k)]
    if _is_inplace_foreach(k):
        return [*lines, *foreach_forward_setup(k), *foreach_nodes(k)]
    if supports_forward(k):
        lines += forward_flags(k)
    elif foreach_forward(k) is not None:
        lines += foreach_forward_setup(k)
    if k.function.kind is SchemaKind.inplace or k.mutated:
        lines += [f"check_inplace({o.name}, _any_requires_grad);" for o in k.differentiable_outputs]
        lines += [f"::std::optional<at::Tensor> original_{n};" for n in _kept_before_update(k)]
        if needs_original_self(k):
            lines += keep_original_self(k)
    lines += [f'check_no_requires_grad({n}, "{n}", "{k.function.cpp_name}");' for n in k.check_no_requires_grad]
    lines += _create_node(k)
    return lines


def _is_inplace_foreach(k: KernelPlan) -> bool:
    return k.function.name.base.startswith("_foreach_") and k.function.kind is SchemaKind.inplace


def _forbid_out_grad(k: KernelPlan) -> list[str]:
    """out= ops are never differentiable: refuse inputs or outputs that require grad."""
    outs = ", ".join(a.name for a in k.function.func.arguments.out if a.type.is_tensor_like())
    base = k.function.name.base
    lines = [
        f"if (compute_requires_grad( {_names(k.differentiable_inputs)} )) {{",
        f'  throw_error_out_requires_grad("{base}");',
        "}",
    ]
    if outs:
        lines += [f"if (compute_requires_grad( {outs} )) {{", f'  throw_error_out_requires_grad("{base}");', "}"]
    return lines


def _kept_before_update(k: KernelPlan) -> list[str]:
    """Overwritten arguments whose old value is kept: a formula reads it, or (self) a forward formula."""
    read = {v.expr for v in k.info.saved_inputs} if k.info is not None else set()
    if needs_original_self(k):
        read.add("self")
    return [n for n in k.overwritten if n in read]


def _create_node(k: KernelPlan) -> list[str]:
    node = k.node or "Node"
    lines = [f"c10::intrusive_ptr<{node}> grad_fn;", "if (_any_requires_grad) {"]
    if node == NOT_IMPLEMENTED_NODE:
        lines.append(f'  grad_fn = c10::make_intrusive<NotImplemented>("{k.function.cpp_name}");')
    else:
        lines.append(f"  grad_fn = c10::make_intrusive<{node}>();")
    lines.append(f"  grad_fn->set_next_edges(collect_next_edges( {_names(k.args_with_derivatives)} ));")
    if k.info is not None and k.node != NOT_IMPLEMENTED_NODE:
        lines += [
            "  " + line for v in sorted(k.info.saved_inputs, key=lambda v: v.name) for line in _guarded_save(v, k)
        ]
        lines += [f"  grad_fn->{a.name}_size_ = {a.name}.size();" for a in _list_args(k)]
    lines.append("}")
    return lines


def _list_args(k: KernelPlan) -> list[CppValue]:
    if k.info is None:
        return []
    return [a for a in k.info.args_with_derivatives if a.cpp_type in ("at::TensorList", "at::ITensorListRef")]


def _guarded_save(v: SavedValue, k: KernelPlan) -> list[str]:
    lines = [_save(v, k)]
    if v.expr in k.overwritten:
        lines.insert(0, f"if (!original_{v.expr}.has_value()) original_{v.expr} = {v.expr}.clone();")
    guard = k.save_guard(v.name)
    return lines if guard is None else [f"if ({guard}) {{", *("  " + x for x in lines), "}"]


def _save(v: SavedValue, k: KernelPlan) -> str:
    t = v.cpp_type
    expr = v.expr
    if expr in k.overwritten:
        expr = f"original_{expr}.value()"
    if t in ("at::Tensor", "::std::optional<at::Tensor>"):
        return f"grad_fn->{v.name}_ = SavedVariable({expr}, false);"
    if t in ("at::TensorList", "at::ITensorListRef", "c10::List<::std::optional<at::Tensor>>"):
        return f"grad_fn->{v.name}_ = make_saved_variable_list({expr});"
    if t in ("at::IntArrayRef", "c10::SymIntArrayRef", "at::ArrayRef<at::Scalar>"):
        return f"grad_fn->{v.name} = {expr}.vec();"
    if t == "c10::string_view":
        return f"grad_fn->{v.name} = std::string({expr});"
    if t == "::std::optional<c10::string_view>":
        owned = f"::std::optional<std::string>(std::string({expr}.value()))"
        return f"grad_fn->{v.name} = {expr}.has_value() ? {owned} : ::std::nullopt;"
    return f"grad_fn->{v.name} = {expr};"


def _call_args(k: KernelPlan) -> str:
    unpacked = {name for _, name, _ in unpacked_arguments(k.function)}
    return ", ".join(a.name + ("_" if a.name in unpacked else "") for a in k.function.func.arguments.all)


def _call(k: KernelPlan) -> list[str]:
    call = redispatch_call(k.function, "ks & c10::after_autograd_keyset", _call_args(k))
    handle = [] if k.function.namespace == "aten" else [handle_declaration(k.function)]
    returns = k.function.func.returns
    if not returns or k.function.kind in (SchemaKind.inplace, SchemaKind.out):  # returns its arguments
        return [*handle, "{", f"  {k.guard} guard;", f"  {call};", "}"]
    body = f"  {k.guard} guard;\n  return {call};"
    if k.jvp_decomposition:
        body = _with_jvp_decomposition(k, body)
    lambda_ = f"auto _tmp = ([&]() {{\n{body}\n}})();"
    names = _result_names(k)
    if len(names) == 1:
        return [*handle, lambda_, f"auto {names[0]} = std::move(_tmp);"]
    return [*handle, lambda_, f"auto [{', '.join(names)}] = std::move(_tmp);"]


def _with_jvp_decomposition(k: KernelPlan, body: str) -> str:
    """Inputs carrying a tangent: run the op's decomposition, whose pieces have forward formulas."""
    f = k.function
    tangents = " || ".join(
        f"isFwGradDefinedTensorList({v.name})" if v.type.is_list() else f"isFwGradDefined({v.name})"
        for v in k.differentiable_inputs
    )
    args = ", ".join(a.name for a in f.func.arguments.all)
    returns = dispatcher_returns(f).cpp()
    inner = "\n".join("  " + line for line in body.split("\n"))
    return "\n".join([
        f"  if ({tangents}) {{",
        f'    static c10::OperatorName full_name("{f.namespace}::{f.name.name}", "{f.name.overload}");',
        "    static ::std::optional<c10::OperatorHandle> opt_op = c10::Dispatcher::singleton().findSchema(full_name);",
        f'    return impl::run_jit_decomposition_with_args_for_jvp<{returns}>("{f.name.name}", *opt_op, ks, {args});',
        "  } else {",
        inner,
        "  }",
    ])  # fmt: skip


def _result_names(k: KernelPlan) -> list[str]:
    return list(cpp_return_names(k.function))


def _return_value(k: KernelPlan) -> str:
    f = k.function
    names = _result_names(k)
    if len(names) == 1:
        return names[0]
    if f.kind is SchemaKind.out or f.kind is SchemaKind.inplace:
        return f"std::forward_as_tuple({', '.join(names)})"
    return f"std::make_tuple({', '.join('std::move(' + n + ')' for n in names)})"


def _after_call(k: KernelPlan, line_directives: bool = False, *, hooks: bool = False) -> list[str]:
    if not k.requires_derivative:
        return []
    outs = _names(k.differentiable_outputs)
    rebase = k.modifies_arguments and k.view_of is None
    lines = []
    if outs and rebase and hooks:
        lines += _rebase_capturing(outs)
    elif outs:
        history = "rebase_history" if rebase else "set_history"
        lines += ["if (grad_fn) {", f"    {history}(flatten_tensor_args( {outs} ), grad_fn);", "}"]
    fire = _fire_hooks("_rebased_fn" if rebase else "grad_fn") if hooks else []
    if k.function.kind is SchemaKind.out:
        return [*lines, _forbid_forward(k, " because it is an out= function"), *fire]
    if _is_inplace_foreach(k):
        forward = foreach_forward_formulas(k, line_directives) or [_forbid_forward(k, "")]
        fired = foreach_fire_hooks(k) if hooks else []
        return [*foreach_history(k, capture=hooks), *forward, *foreach_saved_outputs(k), *fired]
    base = k.function.name.base
    lines += [f'throw_error_for_complex_autograd({o}, "{base}");' for o in k.complex_checked]
    if supports_forward(k):
        lines += forward_formulas(k, line_directives)
    elif foreach_forward(k) is not None:
        lines += foreach_forward_formulas(k, line_directives)
    elif not k.jvp_decomposition:
        lines.append(_forbid_forward(k, _missing_forward_formula(k)))
    lines += _save_outputs(k)
    lines += fire
    if k.function.name.name in ("set_", "resize_"):
        lines.append("reset_grad_accumulator(self);")
    return lines


def _rebase_capturing(outs: str) -> list[str]:
    """``rebase_history`` returns the Node it attached (a CopySlices through a view): keep it for the hooks."""
    return [
        "c10::intrusive_ptr<Node> _rebased_fn;",
        "if (grad_fn) {",
        f"    _rebased_fn = rebase_history(flatten_tensor_args( {outs} ), grad_fn);",
        "}",
    ]


def _fire_hooks(node: str) -> list[str]:
    """Node-creation hooks see the Node once it is complete: after every save."""
    return [f"if ({node}) {{", f"    fire_node_creation_hooks({node});", "}"]


def _missing_forward_formula(k: KernelPlan) -> str:
    """Why an op library's op refuses a tangent: the derivatives.yaml entry that could give it a
    forward formula (not for a `-> ()` op writing several tensors: it cannot have one, 9c)."""
    f, info = k.function, k.info
    if f.namespace == "aten" or info is None or info.forward:
        return ""
    mutated = mutated_arguments(f)
    if mutated and ([a.name for a in mutated] != ["self"] or not f.func.name.inplace):
        return ""
    entry = str(info.func.func).replace('"', '\\"')
    names = [r.name for r in f.func.returns] if len(f.func.returns) > 1 else ["result"]
    add = ", ".join(f"'{n}: <its tangent>'" for n in names if n)
    return f": its derivatives.yaml entry '{entry}' has no forward formula (add {add or 'one per output'})"


def _forbid_forward(k: KernelPlan, why: str) -> str:
    tensors = [a for a in k.function.func.arguments.all if a.type.is_tensor_like()]
    checks = (
        " || ".join(
            f"isFwGradDefinedTensorList({a.name})" if a.type.is_list() else f"isFwGradDefined({a.name})"
            for a in tensors
        )
        or "false"
    )
    return (
        f'TORCH_CHECK_NOT_IMPLEMENTED(!({checks}), "Trying to use forward AD with {k.function.cpp_name} '
        f'that does not support it{why}.");'
    )


def _save_outputs(k: KernelPlan) -> list[str]:
    if k.info is None or k.node in (None, NOT_IMPLEMENTED_NODE) or not k.info.saved_outputs:
        return []
    lines = ["if (grad_fn) {"]
    for v in sorted(k.info.saved_outputs, key=lambda v: v.name):
        lines.append("  " + _save_output(v, k))
    return [*lines, "}"]


def _save_output(v: SavedValue, k: KernelPlan) -> str:
    written = "self" if k.function.kind is SchemaKind.inplace else (k.mutated or (None,))[0]
    value = written or v.expr
    if v.cpp_type in ("::std::vector<at::Tensor>", "at::TensorList"):
        return f"grad_fn->{v.name}_ = make_saved_variable_list({value}, true);"
    if v.cpp_type in ("at::Tensor", "at::Scalar", "::std::optional<at::Tensor>"):
        extra = f", {written}.is_view()" if written else ""
        return f"grad_fn->{v.name}_ = SavedVariable({value}, true{extra});"
    if v.cpp_type in ("at::IntArrayRef", "c10::SymIntArrayRef"):
        return f"grad_fn->{v.name} = {v.expr}.vec();"
    return f"grad_fn->{v.name} = {v.expr};"
