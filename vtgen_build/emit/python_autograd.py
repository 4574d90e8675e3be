"""The Python autograd of an op library: derivatives.yaml's formulas as a generated Python module.

For op libraries whose kernels carry no C++ autograd (the LibTorch stable ABI has none), the
module registers, at import, each op's autograd as an ``autograd.Function`` that is the op's
``Autograd`` kernel (what ``torch.library.register_autograd`` does inside, plus a ``jvp`` and
mutating ops, which that API cannot carry; docs/design/python-autograd.md says why):

- its forward runs the op below autograd and saves exactly the values the plan saves
  (``DerivativeInfo.saved_inputs``/``saved_outputs``: a tensor through ``ctx.save_for_backward``,
  anything else on ``ctx``); its backward evaluates each formula translated to Python
  (``python_formula``), only for the inputs ``ctx.needs_input_grad`` asks;
- a mutating ``-> ()`` op's (or an in-place op's) Function also bumps the written tensors' versions if the kernel did
  not and marks them dirty (their history is rebased on the op, a leaf that requires grad is
  refused); a value a formula reads of them from before the op is copied by the kernel.

Every formula line carries its yaml place in a comment; ``not_implemented(...)`` raises naming
the entry.  What a formula cannot be spelled as is a ``VtgenError`` at its yaml line with the
column.  Forward-mode formulas run in the Function's ``jvp``; an op without them raises when a
tangent reaches it, rather than dropping the tangent (docs/design/python-autograd.md).
"""

from __future__ import annotations

import keyword
import os
import re
from dataclasses import dataclass

from ..base.errors import Location, VtgenError
from ..model.derivatives import DerivativeEntry, output_names
from ..model.native import NativeFunction
from ..model.schema import Argument, SchemaKind
from ..plan.batching import elementwise_ops
from ..plan.formulas import SavedValue, uses_ident
from ..plan.infos import Backward, DerivativeInfo, Forward
from ..plan.kernel import KernelPlan
from ..translate import (
    ExprError,
    attribute,
    comment,
    formula_scope,
    forward_python,
    integer_arguments,
    op_identifiers,
    prelude,
    private_name_error,
    py_name,
    python_formulas,
    string,
    translate_formula,
)
from .python_api import python_default

__all__ = [
    "AutogradModule",
    "describe_python",
    "python_autograd_module",
    "supported_kernels",
]

_TENSOR_TYPES = ("at::Tensor", "::std::optional<at::Tensor>")


@dataclass(frozen=True)
class AutogradModule:
    """What the module is generated from besides the plans.

    ``namespace``: the library's; ``library_ops``: its operator names (helpers a formula may
    call); ``formulas_module``: the module name of the author's formulas (imported relatively,
    ``from . import <name> as _formulas``) and ``user_functions`` the functions it defines;
    ``entries``: the derivatives entries (their text places a formula's column); ``functions``: the
    library's ops (those declared element-wise get a batching rule).
    """

    namespace: str
    library_ops: frozenset[str]
    entries: tuple[DerivativeEntry, ...]
    formulas_module: str | None = None
    user_functions: frozenset[str] = frozenset()
    functions: tuple[NativeFunction, ...] = ()
    list_returns: bool = False  # carry ``-> Tensor[]`` ops (the Python tier of check; generate refuses them)


def supported_kernels(kernels: tuple[KernelPlan, ...]) -> tuple[KernelPlan, ...]:
    """The kernels that get a Python autograd: a formula set of the plain Autograd key and a Node."""
    return tuple(
        k
        for k in kernels
        if k.kind == "kernel"
        and k.dispatch_key == "Autograd"
        and k.info is not None
        and k.node is not None
        and (bool(_written(k)) or (k.function.kind is SchemaKind.functional and k.function.func.returns))
    )


def _written(k: KernelPlan) -> tuple[str, ...]:
    """The tensors the op writes, as autograd sees them: a ``-> ()`` op's written arguments, an in-place
    op's ``self`` (it returns it); () for a functional op."""
    if k.mutated:
        return k.mutated
    return ("self",) if k.function.kind is SchemaKind.inplace and k.overwritten == ("self",) else ()


def _place(location: Location) -> str:
    """A yaml place as comments and messages spell it: the file's name (not its directory) and line."""
    return f"{os.path.basename(location.file)}:{location.line}"


def _op_ref(f: NativeFunction) -> str:
    packet = attribute(attribute("torch.ops", f.namespace), f.name.name)
    return attribute(packet, f.name.overload or "default")


def _is_tensor(value: SavedValue) -> bool:
    return value.cpp_type in _TENSOR_TYPES


def _arguments(k: KernelPlan) -> tuple[str, ...]:
    """The op's arguments as the Function is applied to them (schema order, out arguments aside)."""
    return tuple(a.name for a in k.function.func.arguments.non_out)


def _call(f: NativeFunction) -> str:
    args = f.func.arguments
    parts = [py_name(a.name) for a in args.positional] + [_keyword(a.name, py_name(a.name)) for a in args.kwarg_only]
    return f"{_op_ref(f)}({', '.join(parts)})"


def _keyword(name: str, value: str) -> str:
    """A keyword argument of a call (``**{"from": from_}`` where the name is a Python keyword)."""
    return f"**{{{string(name)}: {value}}}" if keyword.iskeyword(name) else f"{name}={value}"


def _saved_expression(v: SavedValue, values: frozenset[str], module: AutogradModule, where: Location) -> str:
    if v.cpp_type == "torch::autograd::generated::TypeAndSize":
        return f"_type_and_size({py_name(v.expr)})"
    try:
        return translate_formula(v.expr, formula_scope(values, module))
    except ExprError as exc:
        raise VtgenError(f"the saved value '{v.name}' ({v.expr}): {exc.message}", where) from None


def _save_values(k: KernelPlan, info: DerivativeInfo, module: AutogradModule, outputs: bool) -> list[str]:
    """``_s_<name> = <value>`` for the inputs' saved values (before the op) or the outputs' (after)."""
    names = set(_arguments(k)) | set(_output_locals(k)) | {"result"}
    values = info.saved_outputs if outputs else info.saved_inputs
    lines = []
    for v in values:
        expr = _saved_expression(v, frozenset(names), module, info.location)
        if not outputs and v.expr in _befores(k, info):
            expr = f"_before_{v.expr}"  # the op overwrites it: the formula reads a copy from before
        elif not outputs and k.view_of is not None:  # an in-place view op: its sizes, strides from before it
            for n in _befores(k, info):
                expr = re.sub(rf"(?<![\w.]){re.escape(py_name(n))}\b", f"_before_{n}", expr)
        lines.append(f"_s_{v.name} = {expr}")
    return lines


def _befores(k: KernelPlan, info: DerivativeInfo) -> tuple[str, ...]:
    """Written tensors a formula reads whole: the kernel copies them before the op (with grad mode on,
    so the copy's history reaches the value before the op and double backward sees through it) and
    passes the copies to the Function as extra inputs."""
    whole = [v.expr for v in info.saved_inputs if v.expr in k.overwritten and _is_tensor(v)]
    if k.view_of is not None:  # an in-place view op changes sizes and strides: a saved value read of them too
        whole += [n for n in k.overwritten if any(uses_ident(v.expr, n) for v in info.saved_inputs)]
    return tuple(dict.fromkeys(whole))


def _forward_befores(k: KernelPlan, info: DerivativeInfo) -> tuple[str, ...]:
    """Written tensors whose value before the op only a forward formula reads (``self_p``): copied
    only while forward AD is on."""
    if not _written(k):
        return ()
    read = [n for n in _written(k) if any(uses_ident(fw.formula, f"original_{n}_p") for fw in info.forward)]
    return tuple(n for n in read if n not in _befores(k, info))


def _applied(k: KernelPlan, info: DerivativeInfo) -> tuple[str, ...]:
    """What the Function is applied to: the op's arguments, then the copies from before the op."""
    copies = (*_befores(k, info), *_forward_befores(k, info))
    return _arguments(k) + tuple(f"_before_{n}" for n in copies)


def _saved_tensors(info: DerivativeInfo) -> list[str]:
    return [f"_s_{v.name}" for v in (*info.saved_inputs, *info.saved_outputs) if _is_tensor(v)]


def _store(k: KernelPlan, info: DerivativeInfo) -> list[str]:
    """Save what backward reads; while forward AD is on, also every input and output for the jvp
    (``_save_both``: one tuple both ways, as torch.func's generated vmap rule needs)."""
    values = (*info.saved_inputs, *info.saved_outputs)
    tensors = "".join(t + ", " for t in _saved_tensors(info))
    lines = [f"ctx.save_for_backward({tensors.rstrip()})"] if tensors else []
    if info.forward:
        outs = (
            f"*{py_name(_output_locals(k)[0])}, "
            if _list_return(k)
            else "".join(py_name(o) + ", " for o in _output_locals(k))
        )
        both = f"_save_both(ctx, ({tensors.rstrip()}), inputs[1:], ({outs.rstrip()}))"
        lines = ["if _forward_ad_on():", f"    {both}", *(["else:", *_indent(lines).splitlines()] if lines else [])]
    return lines + [f"ctx._s_{v.name} = _s_{v.name}" for v in values if not _is_tensor(v)]


def _load(info: DerivativeInfo) -> list[str]:
    """Statements of backward binding the saved values as locals (forward AD may have saved more after them)."""
    values = (*info.saved_inputs, *info.saved_outputs)
    tensors = [py_name(v.name) for v in values if _is_tensor(v)]
    saved = f"ctx.saved_tensors[:{len(tensors)}]" if info.forward else "ctx.saved_tensors"
    lines = [f"{', '.join(tensors)}, = {saved}"] if tensors else []
    return lines + [f"{py_name(v.name)} = ctx._s_{v.name}" for v in values if not _is_tensor(v)]


def _output_locals(k: KernelPlan) -> tuple[str, ...]:
    """How the forward names the op's outputs: ``result``, ``result0..``, return names; a ``-> ()``
    op's written tensors by their argument names."""
    return _written(k) if _written(k) else output_names(k.function.func)


def _list_return(k: KernelPlan) -> bool:
    """A ``-> Tensor[]`` op: its Function returns the list's tensors as a tuple (one output each, so each
    gets the Node and its own gradient); the kernel hands the op's caller a list again."""
    returns = k.function.func.returns
    return len(returns) == 1 and returns[0].type.is_list()


def _has_lists(k: KernelPlan) -> bool:
    """A Tensor[] argument: the Function's inputs are not the arguments one to one (``_flatten``)."""
    return any(str(a.type.base()) == "Tensor" and a.type.is_list() for a in k.function.func.arguments.non_out)


def _need_expr(k: KernelPlan, position: int) -> str:
    """Is argument ``position``'s gradient needed: ``needs`` (``ctx.needs_input_grad``, whose first
    entry is the layout's) read directly when every argument is one input, else through the layout."""
    return f"_need(ctx, {position})" if _has_lists(k) else f"needs[{position + 1}]"


def _backward_statements(k: KernelPlan, info: DerivativeInfo, module: AutogradModule) -> list[str]:
    positions = {n: i for i, n in enumerate(_arguments(k))}
    lines = []
    for b, python in python_formulas(info, module):
        need = " or ".join(_need_expr(k, positions[n]) for n in b.var_names)
        lines += [f"if {need}:", f"    # {comment(_place(b.location) + ': ' + _one_line(b.original))}"]
        reason = _not_implemented(b)
        if reason is not None:
            lines.append(f"    raise NotImplementedError({_not_implemented_message(reason, info, b)!r})")
        elif len(b.var_names) == 1:
            lines.append(f"    _grad_{b.var_names[0]} = {python}")
        else:
            mask = ", ".join(_need_expr(k, positions[n]) for n in b.var_names)
            lines += [f"    grad_input_mask = [{mask}]", f"    _grads = {python}"]
            picks = enumerate(b.var_names)
            lines += [f"    _grad_{n} = _grads[{i}] if grad_input_mask[{i}] else None" for i, n in picks]
    return lines


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _not_implemented(b: Backward) -> str | None:
    m = re.fullmatch(r'not_implemented\("([^"]*)"(?:,.*)?\)', b.original)
    return m.group(1) if m else None


def _not_implemented_message(reason: str, info: DerivativeInfo, b: Backward) -> str:
    names = ", ".join(b.var_names)
    return f"the derivative of '{info.name}' for {names} is not implemented: {reason} ({_place(b.location)})"


def _backward(k: KernelPlan, info: DerivativeInfo, module: AutogradModule) -> list[str]:
    lines = ["grad = grads[0]"]
    outputs = list(_output_locals(k))
    for name in sorted(info.used_named_gradients):
        lines.append(f"{py_name(name)} = grads[{outputs.index(name.removeprefix('grad_'))}]")
    lines += _load(info)
    with_derivs = {a.name for a in info.args_with_derivatives}
    lines += [f"_grad_{n} = None" for n in _arguments(k) if n in with_derivs]
    lines += [] if _has_lists(k) else ["needs = ctx.needs_input_grad"]
    lines += _backward_statements(k, info, module)
    returned = "".join((f"_grad_{n}" if n in with_derivs else "None") + ", " for n in _applied(k, info))
    if _has_lists(k):
        return [*lines, f"return _flat_grads(ctx, ({returned.rstrip()}))"]
    return [*lines, f"return None, {returned.rstrip()}"]  # the layout's, then one per argument


def _forward(k: KernelPlan, info: DerivativeInfo) -> list[str]:
    """The op below autograd, nothing on ``ctx`` (torch.func runs it at each transform's level)."""
    f = k.function
    lines = [f"{''.join(py_name(a) + ', ' for a in _applied(k, info))}= _unflatten(layout, flat)"]
    lines = lines if _has_lists(k) else []  # no list: the arguments are the forward's parameters
    # the C++ kernel's guard: a view or mutating op stays above its ADInplaceOrView kernel
    below = (
        "_below_autograd(inplace_or_view=True)" if k.guard == "at::AutoDispatchBelowAutograd" else "_below_autograd()"
    )
    if not _written(k):
        call = f"tuple({_call(f)})" if _list_return(k) else _call(f)
        return [*lines, f"with {below}:", f"    return {call}"]
    written = "".join(py_name(n) + ", " for n in _written(k))
    lines += [f"_versions = _versions_of(({written}))", f"with {below}:"]
    lines += [f"    {_call(f)}", f"_bump(({written}), _versions)"]
    return [*lines, f"return {written.rstrip(', ')}"]


def _setup_context(k: KernelPlan, info: DerivativeInfo, module: AutogradModule) -> list[str]:
    """What the Function keeps of a call (its inputs and output): the saved values, dirty and
    non-differentiable outputs."""
    args, outs = _applied(k, info), _output_locals(k)
    names = "".join(py_name(a) + ", " for a in args)
    lines = (
        ["ctx.layout = layout = inputs[0]", f"{names}= _unflatten(layout, inputs[1:])"]
        if _has_lists(k)
        else ["ctx.layout = inputs[0]", f"_, {names}= inputs"]
    )
    if _written(k):
        lines += [f"result = {py_name(_written(k)[0])}"] if len(_written(k)) == 1 else []
    else:
        one = f"{py_name(outs[0])} = list(output)" if _list_return(k) else f"{py_name(outs[0])} = output"
        lines += [one] if len(outs) == 1 else [f"{_tuple(outs)} = output"]
    lines += [f"_no_grad_formula({py_name(n)}, {_no_formula_message(info, n)!r})" for n in k.check_no_requires_grad]
    lines += _save_values(k, info, module, outputs=False)
    if _written(k):
        lines.append(f"ctx.mark_dirty({_tuple(_written(k)).rstrip(',')})")
    else:
        diff = {v.name for v in k.differentiable_outputs}
        hidden = [o for o, name in zip(outs, _return_names(k), strict=True) if name not in diff]
        lines += [f"ctx.mark_non_differentiable({', '.join(py_name(h) for h in hidden)})"] if hidden else []
    return lines + _save_values(k, info, module, outputs=True) + _store(k, info)


def _return_names(k: KernelPlan) -> tuple[str, ...]:
    from ..plan.values import cpp_return_names

    return cpp_return_names(k.function)


def _no_formula_message(info: DerivativeInfo, name: str) -> str:
    return f"the derivative for '{name}' of '{info.name}' is not implemented: no formula ({_place(info.location)})"


def _jvp(k: KernelPlan, info: DerivativeInfo, module: AutogradModule) -> list[str]:
    """The forward-mode formulas: primals and outputs kept by the forward (only while forward AD is on),
    tangents of the inputs without one are zeros, one tangent per output (None: not differentiable)."""
    if not info.forward or len(_written(k)) > 1:
        why = "an op writing several tensors" if info.forward else "its entry has no forward formula"
        message = (
            f"forward-mode AD of '{k.op}' is not implemented by the Python autograd ({why}; "
            f"{_place(info.location)}): use backward mode"
        )
        return [f"raise NotImplementedError({message!r})"]
    args, outs = _applied(k, info), _output_locals(k)
    tensors_saved = len(_saved_tensors(info))
    lines = [f"_fw_args, _fw_outs = _saved_both(ctx, {tensors_saved})"]
    lines += [
        f"{''.join(py_name(a) + ', ' for a in args)}= _fw_args",
        f"{py_name(outs[0])} = list(_fw_outs)"
        if _list_return(k)
        else f"{''.join(py_name(o) + ', ' for o in outs)}= _fw_outs",
    ]
    tensors = [a.name for a in k.function.func.arguments.non_out if a.type.is_tensor_like()]
    lines += [f"{py_name(n + '_p')} = {py_name(n)}" for n in tensors]
    lines.append(f"{''.join(py_name(a + '_t') + ', ' for a in args)}= _tangents(ctx, tangents, ({_tuple(args)}))")
    extra: list[str] = []
    for n in _written(k):  # the plan's in-place spelling: the raw tangent (updated in place), the value before
        position = _arguments(k).index(n)
        raw = py_name(f"{n}_t_raw")
        lines.append(f"{raw} = tangents[1 + ctx.layout[{position}][0]]")
        lines.append(f"_tv_{n} = _tangent_version({raw})")
        lines.append(f"{py_name(f'original_{n}_t')} = {py_name(n + '_t')}")
        if n in (*_befores(k, info), *_forward_befores(k, info)):
            lines.append(f"{py_name(f'original_{n}_p')} = _before_{n}")
        extra += [f"{n}_t_raw", f"original_{n}_t", f"original_{n}_p"]
    values = frozenset({*args, *outs, "result", *(f"{n}_p" for n in tensors), *(f"{a}_t" for a in args), *extra})
    for fw in info.forward:
        lines.append(f"# {comment(_place(fw.location) + ': ' + _one_line(fw.formula))}")
        target = _tuple([f"_t_{n}" for n in fw.var_names]) if len(fw.var_names) > 1 else f"_t_{fw.var_names[0]}"
        lines.append(f"{target} = {_forward_python(k, fw, values, module)}")
    if _written(k):  # the formula updated the written tensor's own tangent in place (it is marked dirty)
        n = _written(k)[0]
        return [*lines, f"_bump_tangent({py_name(n + '_t_raw')}, _tv_{n}, _t_{n})", f"return _t_{n}"]
    given = {n for fw in info.forward for n in fw.var_names}
    returned = [f"_t_{o}" if o in given else "None" for o in outs]
    if _list_return(k):  # one tangent per element of the list (None for each: the entry gives no formula)
        return [*lines, f"return _list_tangents({returned[0]}, {py_name(outs[0])})"]
    if k.view_of is not None and len(returned) == 1 and returned[0] != "None":
        return [*lines, f"return _view_tangent({returned[0]}, tangents)"]
    return [*lines, f"return {returned[0]}" if len(returned) == 1 else f"return {', '.join(returned)}"]


def _tuple(names: list[str] | tuple[str, ...]) -> str:
    return "".join(py_name(n) + ", " for n in names).rstrip(" ")


def _forward_python(k: KernelPlan, fw: Forward, values: frozenset[str], module: AutogradModule) -> str:
    if fw.formula.startswith("c10::Dispatcher"):  # auto_linear of a library op: the op on the tangents
        diff = set(fw.required_tangents)
        args = k.function.func.arguments
        parts = [py_name(a.name + ("_t" if a.name in diff else "")) for a in args.positional]
        parts += [_keyword(a.name, py_name(a.name + ("_t" if a.name in diff else ""))) for a in args.kwarg_only]
        return f"{_op_ref(k.function)}({', '.join(parts)})"
    where = fw.derived.location if fw.derived is not None else fw.location
    original = fw.derived.original if fw.derived is not None else fw.formula
    return forward_python(fw.formula, values, where, original, module, integer_arguments(k.function))


def _signature(f: NativeFunction) -> str:
    """The kernel's parameters.  The dispatcher passes keyword-only arguments by their schema names:
    one whose local is spelled otherwise (``torch``, ``from``) arrives in ``**_renamed``."""
    args = f.func.arguments
    params = [_param(a, f) for a in args.positional]
    plain = [a for a in args.kwarg_only if py_name(a.name) == a.name]
    if plain:
        params += ["*", *(_param(a, f) for a in plain)]
    if len(plain) < len(args.kwarg_only):
        params.append("**_renamed")
    return ", ".join(params)


def _renamed(f: NativeFunction) -> list[str]:
    """The kernel's first lines: the keyword-only arguments ``**_renamed`` holds, as their locals."""
    lines = []
    for a in f.func.arguments.kwarg_only:
        if py_name(a.name) != a.name:
            default = f", {python_default(a, f)}" if a.default is not None else ""
            get = f"_renamed.get({string(a.name)}{default})" if default else f"_renamed[{string(a.name)}]"
            lines.append(f"{py_name(a.name)} = {get}")
    return lines


def _param(a: Argument, f: NativeFunction) -> str:
    return py_name(a.name) if a.default is None else f"{py_name(a.name)}={python_default(a, f)}"


def _layout(count: int) -> str:
    """The layout ``_flatten`` gives ``count`` arguments none of which is a list, as a literal (a constant of the
    compiled kernel: nothing is built per call)."""
    return "(" + "".join(f"({i}, None), " for i in range(count)).rstrip(" ") + ")"


def _forward_parameters(k: KernelPlan, info: DerivativeInfo) -> str:
    """The forward's parameters: the layout, then the flat inputs (a Tensor[] spread), or, with no list, the
    arguments by name (no ``_unflatten`` per call)."""
    return "layout, *flat" if _has_lists(k) else "layout, " + ", ".join(py_name(a) for a in _applied(k, info))


def _kernel(k: KernelPlan, info: DerivativeInfo, cls: str) -> list[str]:
    f = k.function
    args = _applied(k, info)
    non_out = f.func.arguments.non_out
    lists = tuple(i for i, a in enumerate(non_out) if str(a.type.base()) == "Tensor" and a.type.is_list())
    flat = "".join(py_name(a) + ", " for a in args)
    apply = (
        f"{cls}_apply(*_flatten(({flat}), {lists!r}))"
        if lists
        else f"{cls}_apply({_layout(len(args))}, {flat.rstrip(', ')})"
    )
    when = _differentiating(f)
    if _written(k):
        written = "".join(py_name(n) + ", " for n in _written(k))
        direct = [f"_versions = _versions_of(({written}))", "with torch._C._AutoDispatchBelowAutograd():"]
        result = "None" if k.mutated else py_name(_written(k)[0])  # an in-place op returns self
        direct += [f"    {_call(f)}", f"_bump(({written}), _versions)", f"return {result}"]
        copies = [f"    _before_{n} = {py_name(n)}.clone()" for n in _befores(k, info)]
        copies += [
            f"    _before_{n} = {py_name(n)}.clone() if _forward_ad_on() else None" for n in _forward_befores(k, info)
        ]
        return [
            *_renamed(f),
            f"if {when}:",
            *copies,
            f"    {apply}",
            f"    return {result}",
            *direct,
        ]
    direct = ["with torch._C._AutoDispatchBelowAutograd():", f"    return {_call(f)}"]
    returned = f"list({apply})" if _list_return(k) else apply
    return [*_renamed(f), f"if {when}:", f"    return {returned}", *direct]


def _differentiating(f: NativeFunction) -> str:
    """When a call needs the op's Function: an input requiring grad (read inline for tensors and optional
    tensors: the check every eager call pays), or forward AD on (then ``_differentiating`` looks for a
    tangent)."""
    tensors = [a for a in f.func.arguments.non_out if a.type.is_tensor_like()]
    names = ", ".join(py_name(a.name) for a in tensors)
    if any(a.type.is_list() for a in tensors):
        return f"_differentiating({names})"
    needs = [
        f"{py_name(a.name)}.requires_grad"
        if not a.type.is_optional()
        else f"({py_name(a.name)} is not None and {py_name(a.name)}.requires_grad)"
        for a in tensors
    ]
    grad = " or ".join(needs) if len(needs) == 1 else "(" + " or ".join(needs) + ")"
    return f"torch.is_grad_enabled() and {grad} or _forward_ad_on() and _differentiating({names})"


def _refusal(k: KernelPlan, info: DerivativeInfo, module: AutogradModule) -> VtgenError | None:
    """Why an op that has a formula set of the Autograd key cannot get a Python autograd (None: it can)."""
    f = k.function
    if info.output_differentiability_condition is not None:
        return VtgenError(
            f"'{f.name}': the Python autograd does not evaluate a C++ output_differentiability condition",
            info.location,
        )
    if any(a.type.is_list() and a.is_write for a in f.func.arguments.non_out):
        return VtgenError(f"'{f.name}': the Python autograd does not support a written Tensor[] argument", f.location)
    private = private_name_error((*(a.name for a in f.func.arguments.all), *output_names(f.func)))
    if private is not None:
        return VtgenError(f"'{f.name}': {private}", f.location)
    if f.name.name.startswith("_foreach_") and any(r.type.is_list() for r in f.func.returns):
        why = "a _foreach_ op: its formulas are per list element (`grads[i]`, `self[i]`), which it does not loop over"
        return VtgenError(f"'{f.name}': the Python autograd does not carry {why}", info.location)
    if any(r.type.is_list() for r in f.func.returns) and not (module.list_returns and _list_return(k)):
        return VtgenError(
            f"'{f.name}': the Python autograd cannot carry a Tensor[] return (an autograd.Function returns "
            "tensors one by one: the list's elements would get no history and their gradients would be lost); "
            "return a fixed number of tensors, e.g. `-> (Tensor a, Tensor b)`",
            info.location,
        )
    return None


def _section(k: KernelPlan, module: AutogradModule, cls: str) -> str:
    """The op's Function class ``cls``, its kernel and registration (each checked to compile)."""
    info = k.info
    assert info is not None
    f = k.function
    refused = _refusal(k, info, module)
    if refused is not None:
        raise refused
    parts = [
        f"# {comment(f'{f.namespace}::{f.func}  ({_place(info.location)})')}",
        f"class {cls}(torch.autograd.Function):",
        "    generate_vmap_rule = True  # forward, backward and jvp call only operators: vmap runs them batched",
        "",
        "    @staticmethod",
        f"    def forward({_forward_parameters(k, info)}):",
        _indent(_forward(k, info), 2),
        "",
        "    @staticmethod",
        "    def setup_context(ctx, inputs, output):",
        _indent(_setup_context(k, info, module), 2),
        "",
        "    @staticmethod",
        "    def backward(ctx, *grads):",
        _indent(_backward(k, info, module), 2),
        "",
        "    @staticmethod",
        "    def jvp(ctx, *tangents):",
        _indent(_jvp(k, info, module), 2),
        "",
        "",
        f"{cls}._backward_cls.__name__ = {cls}._backward_cls.__qualname__ = {string(k.node or '')}  # grad_fn.name()",
        f"{cls}_apply = _level_apply({cls})",
        "",
        "",
        f"def {cls}_autograd({_signature(f)}):",
        _indent(_kernel(k, info, cls)),
        "",
        "",
        f'_lib.impl({string(str(f.name))}, {cls}_autograd, "Autograd")',
    ]
    text = "\n".join(parts)
    _check_compiles(text, f"'{f.name}': its Python autograd", info.location)
    return text


def _check_compiles(text: str, what: str, where: Location | None) -> None:
    """Python compiles ``text`` (in memory), else an error at ``where``: never a module that cannot load."""
    try:
        compile(text, "<generated>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise VtgenError(f"{what} does not compile: {exc}; please report this", where) from None


def _indent(lines: list[str], depth: int = 1) -> str:
    pad = "    " * depth
    return "\n".join(pad + line if line else "" for line in lines)


def _vmap_rule(f: NativeFunction) -> str:
    rule = f"_elementwise_batched({_op_ref(f)})"
    where = comment(f"{f.namespace}::{f.name}")
    return f'_lib.impl({string(str(f.name))}, {rule}, "FuncTorchBatched")  # {where}: vmap: elementwise'


def python_autograd_module(kernels: tuple[KernelPlan, ...], module: AutogradModule) -> str:
    """The module text: the prelude, then one section per kernel (yaml order), then the batching rules."""
    supported = supported_kernels(kernels)
    classes = op_identifiers((k.function.name.name, k.function.name.overload) for k in supported)
    rules = [_vmap_rule(f) for f in elementwise_ops(module.functions)]
    sections = [_section(k, module, cls) for k, cls in zip(supported, classes, strict=True)] + rules
    if not sections:
        raise VtgenError(f"the Python autograd: no op of namespace '{module.namespace}' has a derivatives entry")
    body = "\n\n\n".join(sections)
    header = [
        f'"""Autograd of the {module.namespace} ops (generated by vtgen_build from derivatives.yaml; do not edit).',
        "",
        "Import it after the op library is loaded: each op's Autograd kernel is registered here.",
        '"""',
        "",
        "# ruff: noqa",
        "# mypy: ignore-errors",
        "import contextlib",
        "import math",
        "",
        "import torch",
        "import torch.autograd.forward_ad",
    ]
    if module.formulas_module is not None:
        header.append(f"from . import {module.formulas_module} as _formulas")
    header += ["", f'_lib = torch.library.Library({string(module.namespace)}, "IMPL")']
    text = "\n".join(header) + "\n\n\n" + prelude(body) + "\n\n\n" + body + "\n" + _left_out(kernels)
    _check_compiles(text, "the Python autograd module", None)
    return text


def _left_out(kernels: tuple[KernelPlan, ...]) -> str:
    """A closing comment naming the ops with formulas that get no Python autograd, and why."""
    supported = set(supported_kernels(kernels))
    lines = []
    for k in kernels:
        if k in supported or k.kind != "kernel" or k.info is None or k.node is None:
            continue
        if k.dispatch_key != "Autograd":
            why = f"formulas of the {k.dispatch_key} key"
        elif k.function.kind is SchemaKind.out:
            why = "an out= variant"
        elif k.function.kind is SchemaKind.inplace:
            why = "an in-place op writing more than self"
        else:
            why = "a mutable op returning values (not functional, not -> ())"
        lines.append(f"#   {comment(f'{k.function.namespace}::{k.op}: {why}')}")
    if not lines:
        return ""
    head = "\n\n# Ops with formulas that get no Python autograd here (docs/design/python-autograd.md):"
    return "\n".join([head, *lines]) + "\n"


def describe_python(k: KernelPlan, module: AutogradModule) -> list[str]:
    """``inspect --op``: the Python each formula of ``k`` became (or why it cannot be)."""
    if k not in supported_kernels((k,)) or k.info is None:
        return ["  Python autograd: none (no formula of the plain Autograd key, or not a functional/-> () op)"]
    refused = _refusal(k, k.info, module)
    if refused is not None:
        return [f"  Python autograd: refused ({refused})"]
    rule = str(k.function.name) in {str(f.name) for f in elementwise_ops(module.functions)}
    vmap = "generated element-wise rule" if rule else "none: PyTorch's vmap fallback (a loop over the batch)"
    lines = [f"  Python autograd: {'Function of a mutating op' if _written(k) else 'autograd.Function'}"]
    lines.append(f"  vmap batching rule: {vmap}")
    try:
        for b, python in python_formulas(k.info, module):
            lines += [
                f"    {', '.join(b.var_names)} ({_place(b.location)}): {_one_line(b.original)}",
                f"      -> {python}",
            ]
    except VtgenError as exc:
        lines.append(f"    untranslatable: {exc}")
    return lines
