"""From derivative entries to per-key derivative infos (what a backward Node needs).

One ``DerivativeInfo`` per (derivatives.yaml entry, autograd key): the function
the formulas are written against, the Node that evaluates them, the backward
and forward formulas, and every value the kernel must save for them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace

from ..base.errors import Location, VtgenError, misspelled
from ..model import Model
from ..model.cpp_api import dispatcher_arguments, dispatcher_returns
from ..model.derivatives import AUTO_ELEMENT_WISE, AUTO_LINEAR, DerivativeEntry, Formula
from ..model.native import NativeFunction
from ..model.schema import Argument, FunctionSchema, SchemaKind, Type
from .formulas import SavedValue, extract_saved, ident_re, uses_ident
from .mutating import mutated_arguments
from .values import CppValue, cpp_arguments, cpp_return_names, value_type

__all__ = ["Backward", "DerivativeInfo", "Forward", "build_infos", "node_prefix"]


@dataclass(frozen=True)
class Backward:
    """One backward formula: the inputs it computes, its rewritten text, what it saves."""

    var_names: tuple[str, ...]
    formula: str
    original: str
    saved_inputs: tuple[SavedValue, ...]
    saved_outputs: tuple[SavedValue, ...]
    named_gradients: frozenset[str]
    location: Location


@dataclass(frozen=True)
class Derived:
    """The backward formula a forward one was written from (``auto_element_wise``): its yaml text and
    place, and what each name in that text stands for in the forward formula (``grad``: the tangent)."""

    original: str
    location: Location
    var_names: tuple[str, ...]  # the backward formula's key (`self`): where its text starts on its line
    bindings: tuple[tuple[str, str], ...]
    formula: str  # the forward formula as derived (and rewritten for an in-place kernel): a kernel whose
    # formula was rewritten otherwise since (_foreach_) no longer evaluates the backward text as it is
    inplace_update: bool = False  # an in-place kernel reusing it: its tangent is copied into self's


@dataclass(frozen=True)
class Forward:
    """One forward-mode (JVP) formula for some outputs."""

    var_names: tuple[str, ...]
    var_types: tuple[Type, ...]
    formula: str
    required_tangents: tuple[str, ...]
    required_primals: tuple[str, ...]
    location: Location
    required_original_self: bool = False
    reuses_outplace: bool = False
    derived: Derived | None = None  # written from a backward formula: errors in it belong to that one's line


@dataclass(frozen=True)
class DerivativeInfo:
    name: str  # the entry's base name (``add``), what name lists are checked against
    func: NativeFunction  # the function the formulas are written against
    dispatch_key: str  # ``Default`` or an autograd key
    node: str | None  # ``AddBackward0``; None when no input has a formula
    backward: tuple[Backward, ...]
    forward: tuple[Forward, ...]
    args_with_derivatives: tuple[CppValue, ...]
    non_differentiable: tuple[str, ...]
    available_named_gradients: tuple[str, ...]
    output_differentiability: tuple[bool, ...] | None
    output_differentiability_condition: str | None
    location: Location

    @property
    def has_derivatives(self) -> bool:
        return bool(self.args_with_derivatives)

    @property
    def saved_inputs(self) -> tuple[SavedValue, ...]:
        return _dedup(v for b in self.backward for v in b.saved_inputs)

    @property
    def saved_outputs(self) -> tuple[SavedValue, ...]:
        return _dedup(v for b in self.backward for v in b.saved_outputs)

    @property
    def used_named_gradients(self) -> frozenset[str]:
        return frozenset(n for b in self.backward for n in b.named_gradients)

    def uses(self, ident: str) -> bool:
        return any(uses_ident(b.formula, ident) for b in self.backward)


def _dedup(values: object) -> tuple[SavedValue, ...]:
    seen: dict[str, SavedValue] = {}
    for v in values:  # type: ignore[attr-defined]
        seen.setdefault(v.name, v)
    return tuple(seen.values())


def node_prefix(base_name: str) -> str:
    """``_to_copy`` → ``ToCopyBackward``; ``foo_forward`` → ``FooBackward``."""
    camel = "".join(part.title() for part in base_name.split("_"))
    return (camel + "Backward").replace("ForwardBackward", "Backward")


def build_infos(model: Model) -> dict[FunctionSchema, tuple[DerivativeInfo, ...]]:
    """Infos keyed by the schema of the function they are written against, in file order."""
    by_schema = {str(f.func): f for f in model.native_functions}
    by_signature: dict[FunctionSchema, list[NativeFunction]] = {}
    for f in model.native_functions:
        by_signature.setdefault(f.func.signature(), []).append(f)
    counter: Counter[str] = Counter()
    infos: dict[FunctionSchema, tuple[DerivativeInfo, ...]] = {}
    for entry in model.derivatives:
        named = by_schema.get(str(entry.schema))
        if named is None:
            what = f"no native function has the schema '{entry.schema}'"
            raise misspelled(what, str(entry.schema), by_schema, entry.location)
        canonical = _canonical(by_signature[named.func.signature()], named, entry)
        infos[canonical.func] = tuple(_info(entry, key, canonical, counter) for key in _keys(entry))
    _add_view_copies(model, infos)
    return infos


def _keys(entry: DerivativeEntry) -> tuple[str, ...]:
    return tuple(s.dispatch_key for s in entry.formula_sets)


def _canonical(candidates: list[NativeFunction], named: NativeFunction, entry: DerivativeEntry) -> NativeFunction:
    """The variant the formulas describe: the plain one, else the in-place one."""
    name = entry.schema.name.name
    for f in [named, *candidates]:
        if not f.func.arguments.out and "functional" not in f.name.overload and f.name.name == name:
            return f
    return candidates[0]


def _info(entry: DerivativeEntry, key: str, f: NativeFunction, counter: Counter[str]) -> DerivativeInfo:
    formula_set = entry.formula_set(key)
    assert formula_set is not None
    args = cpp_arguments(f)
    arg_names = tuple(a.name for a in args)
    for bad in ("grad_input_mask", "result"):
        if bad in arg_names:
            raise VtgenError(f"an argument may not be named '{bad}' (the generator uses that name)", entry.location)
    od = entry.output_differentiability
    available = _available_named_gradients(f, od)
    backward: list[Backward] = []
    forward_raw: list[Forward] = []
    non_diff: list[str] = []
    for formula in sorted(formula_set.formulas, key=lambda x: x.key):
        if formula.names[0] not in arg_names:
            forward_raw.append(_forward(f, formula))
        elif formula.is_non_differentiable:
            non_diff.extend(formula.names)
        else:
            backward.append(_backward(f, formula, args, available))
    with_derivs = {n for b in backward for n in b.var_names}
    args_with_derivatives = tuple(a for a in args if a.name in with_derivs)
    _check_grad_usage(entry, backward)
    forward = _postprocess_forward(f, entry, arg_names, backward, forward_raw, args_with_derivatives)
    node = None
    if args_with_derivatives:
        prefix = node_prefix(_base_name(entry)) + ("" if key == "Default" else key)
        node = f"{prefix}{counter[prefix]}"
        counter[prefix] += 1
    return DerivativeInfo(
        _base_name(entry),
        f,
        key,
        node,
        tuple(backward),
        forward,
        args_with_derivatives,
        tuple(non_diff),
        available,
        od,
        entry.output_differentiability_condition,
        entry.location,
    )


def _base_name(entry: DerivativeEntry) -> str:
    return entry.schema.name.name


def _available_named_gradients(f: NativeFunction, od: tuple[bool, ...] | None) -> tuple[str, ...]:
    diff = od or (True,) * len(f.func.returns)
    return tuple(
        f"grad_{r.name}"
        for r, d in zip(f.func.returns, diff, strict=False)
        if d and r.name is not None and r.type.is_tensor_like()
    )


def _named_returns(f: NativeFunction) -> tuple[CppValue, ...]:
    mutated = mutated_arguments(f)
    if len(mutated) == 1:  # a `-> ()` op: ``result`` is the written tensor after the op
        return (CppValue("result", _return_value_type(mutated[0].type), mutated[0].type),)
    names = tuple("result" if n == "self" else n for n in cpp_return_names(f))
    return tuple(CppValue(n, _return_value_type(r.type), r.type) for n, r in zip(names, f.func.returns, strict=False))


def _return_value_type(ty: Type) -> str:
    text = value_type(ty)
    return "::std::vector<at::Tensor>" if text == "at::TensorList" else text


def _backward(f: NativeFunction, formula: Formula, args: tuple[CppValue, ...], available: tuple[str, ...]) -> Backward:
    text, saved_in = extract_saved(formula.expression, args, formula.names, formula.location, outputs=False)
    text, saved_out = extract_saved(text, _named_returns(f), formula.names, formula.location, outputs=True)
    used = frozenset(n for n in available if uses_ident(text, n))
    _check_bound_names(f, saved_in, available, formula.location)
    _check_mutated_result(f, text, formula.location)
    _check_mutated_lists(f, saved_in, formula.location)
    outputs = len(f.func.returns) or len(mutated_arguments(f))
    for index in _grad_indices(text):
        if index >= outputs:
            raise VtgenError(f"grads[{index}] is out of range: '{f.name}' has {outputs} output(s)", formula.location)
    return Backward(formula.names, text, formula.expression, saved_in, saved_out, used, formula.location)


# Names the backward binds itself, which a value it saves (an argument a formula reads) may not take:
# the formulas' words for the incoming gradients; the parameters and locals of the C++ Node's apply
# and the members its struct declares (emit/node.py); the Python Function's are stepped aside from
# (translate/python_names.py).  Taken, the Python backward reads the wrong value (a silently wrong
# gradient) and the Node does not compile.
_BOUND_BY_BACKWARD = frozenset(
    (
        *("grad", "grads", "grad_input_mask", "result"),
        *("grad_inputs", "grad_result", "needs_input_grad", "any_grad_defined", "gen"),
        *("name", "apply", "compiled_args", "apply_with_saved", "release_variables", "will_release_variables"),
        *("retain_variables", "mutex", "lock"),
    )
)


def _check_bound_names(
    f: NativeFunction, saved: tuple[SavedValue, ...], available: tuple[str, ...], location: Location
) -> None:
    """A saved argument named like something the backward binds (``grad``, ``grad_<output>``...)."""
    args = {a.name for a in f.func.arguments.all}
    loop = ("i",) if f.name.name.startswith("_foreach_") else ()
    for value in saved:
        clash = value.name in (*_BOUND_BY_BACKWARD, *available, *loop) or any(value.name == f"{a}_ix" for a in args)
        if clash:
            raise VtgenError(
                f"the formula reads the argument '{value.name}', but the generated backward binds "
                f"'{value.name}' itself (the incoming gradient, or a name of the Node's); rename the argument",
                location,
            )


def _check_mutated_result(f: NativeFunction, text: str, location: Location) -> None:
    """``result`` of a `-> ()` op writing several tensors would not say which one."""
    mutated = mutated_arguments(f)
    if len(mutated) > 1 and uses_ident(text, "result"):
        names = ", ".join(a.name for a in mutated)
        raise VtgenError(
            f"'result' is ambiguous: '{f.name}' returns nothing and writes {len(mutated)} tensors ({names}); "
            "a formula may read their values before the op by name, not after it",
            location,
        )


def _check_mutated_lists(f: NativeFunction, saved: tuple[SavedValue, ...], location: Location) -> None:
    """A written ``Tensor[]`` has no value-before-the-op copy."""
    lists = {a.name for a in mutated_arguments(f) if a.type.is_list()}
    for value in saved:
        if value.expr in lists:
            raise VtgenError(
                f"the formula reads '{value.expr}', a tensor list '{f.name}' overwrites: only a written "
                "Tensor's value before the op can be saved",
                location,
            )


def _grad_indices(text: str) -> list[int]:
    return [int(i) for i in re.findall(r"(?:^|\W)grads\[(\d+)\]", text)]


def _check_grad_usage(entry: DerivativeEntry, backward: list[Backward]) -> None:
    uses_grad = any(uses_ident(b.formula, "grad") for b in backward)
    grads_uses = sum(len(re.findall(ident_re("grads"), b.formula)) for b in backward)
    indices = [i for b in backward for i in _grad_indices(b.formula)]
    named = any(b.named_gradients for b in backward)
    where = backward[0].location if backward else entry.location
    if uses_grad and grads_uses:
        raise VtgenError("formulas mix 'grad' and 'grads'; write 'grads[0]' instead of 'grad'", where)
    if grads_uses == len(indices) and set(indices) == {0}:
        raise VtgenError(
            "formulas use only 'grads[0]'; write 'grad' when only the first output is differentiable", where
        )
    if named and (uses_grad or grads_uses):
        raise VtgenError("formulas mix 'grad_<output>' with 'grad' or 'grads[i]'; use one style", where)


def _forward(f: NativeFunction, formula: Formula) -> Forward:
    returns = f.func.returns
    types = [r.type for r in returns if r.name in formula.names]
    mutated = mutated_arguments(f)
    if not types and mutated:
        return _mutated_forward(f, formula, mutated)
    if not types:
        if formula.names == ("result",) and len(returns) == 1:
            types = [returns[0].type]
        else:
            for name in formula.names:
                m = re.fullmatch(r"result(\d+)", name)
                if m and int(m.group(1)) < len(returns):
                    types.append(returns[int(m.group(1))].type)
    if not types:
        raise VtgenError(f"'{formula.key}' names no output of '{f.name}'", formula.location)
    return Forward(formula.names, tuple(types), formula.expression, (), (), formula.location)


def _mutated_forward(f: NativeFunction, formula: Formula, mutated: tuple[Argument, ...]) -> Forward:
    """A `-> ()` op's forward formula sets ``result``: the tangent of ``self`` after the op."""
    if formula.names != ("result",) or [a.name for a in mutated] != ["self"] or not f.func.name.inplace:
        raise VtgenError(
            f"'{formula.key}': a forward formula of a `-> ()` op is supported for an op named '<name>_' "
            "that writes only 'self' (as 'result')",
            formula.location,
        )
    return Forward(formula.names, (mutated[0].type,), formula.expression, (), (), formula.location)


def _postprocess_forward(
    f: NativeFunction,
    entry: DerivativeEntry,
    arg_names: tuple[str, ...],
    backward: list[Backward],
    forward: list[Forward],
    with_derivs: tuple[CppValue, ...],
) -> tuple[Forward, ...]:
    result = []
    for fw in forward:
        text = fw.formula
        tangents = _required(f, fw, text, "_t", with_derivs)
        derived = None
        if text == AUTO_ELEMENT_WISE:
            text, tangents = _auto_element_wise(f, fw, forward, backward, with_derivs), arg_names
            b, name = backward[0], with_derivs[0].name
            binds = (("grad", f"{name}_t.conj()"), *((a.name, f"{a.name}_p") for a in with_derivs))
            used = tuple((n, v) for n, v in binds if uses_ident(b.original, n))
            derived = Derived(b.original, b.location, b.var_names, used, text)
        elif text == AUTO_LINEAR:
            text, tangents = _auto_linear(f, entry, fw, forward, arg_names, with_derivs)
        primals = _required(f, fw, text, "_p", with_derivs)
        fields = {"required_tangents": tuple(tangents), "required_primals": primals, "derived": derived}
        result.append(replace(fw, formula=text, **fields))  # type: ignore[arg-type]
    return tuple(result)


def _required(
    f: NativeFunction, fw: Forward, text: str, postfix: str, with_derivs: tuple[CppValue, ...]
) -> tuple[str, ...]:
    foreach = f.name.base.startswith("_foreach_")
    found = []
    for arg in with_derivs:
        if arg.cpp_type in ("at::TensorList", "at::ITensorListRef") and not foreach:
            continue
        if uses_ident(text, arg.name):
            raise VtgenError(
                f"the forward formula uses '{arg.name}' itself; write '{arg.name}_p' for its value "
                f"and '{arg.name}_t' for its tangent",
                fw.location,
            )
        if uses_ident(text, arg.name + postfix):
            found.append(arg.name)
    return tuple(sorted(found))


def _auto_element_wise(
    f: NativeFunction, fw: Forward, forward: list[Forward], backward: list[Backward], with_derivs: tuple[CppValue, ...]
) -> str:
    if f.func.name.inplace:
        raise VtgenError("auto_element_wise cannot be used for an in-place op", fw.location)
    if len(with_derivs) != 1 or len(forward) > 1 or len(forward[0].var_names) > 1:
        raise VtgenError("auto_element_wise needs one differentiable input and one output", fw.location)
    if len(backward) != 1:
        raise VtgenError("auto_element_wise needs the backward formula of its input", fw.location)
    name = with_derivs[0].name
    text = re.sub(ident_re("grad"), lambda m: f"{m.group(1)}{name}_t.conj(){m.group(2)}", backward[0].original)
    for arg in with_derivs:
        text = re.sub(ident_re(arg.name), lambda m, a=arg.name: f"{m.group(1)}{a}_p{m.group(2)}", text)  # type: ignore[misc]
    return f"({text}).conj()"


def _auto_linear(
    f: NativeFunction,
    entry: DerivativeEntry,
    fw: Forward,
    forward: list[Forward],
    arg_names: tuple[str, ...],
    with_derivs: tuple[CppValue, ...],
) -> tuple[str, tuple[str, ...]]:
    if len(forward) > 1 or len(forward[0].var_names) > 1:
        raise VtgenError("auto_linear needs a single differentiable output", fw.location)
    diff = [a.name for a in with_derivs]
    if not diff:
        raise VtgenError("auto_linear needs at least one input with a backward formula", fw.location)
    args = [n + "_t" if n in diff else n for n in arg_names]
    if f.namespace != "aten":  # an op library's op has no C++ API of its own: call it through the dispatcher
        return f"{_dispatcher_call(f)}({', '.join(args)})", tuple(diff)
    name = _base_name(entry) + ("_symint" if f.func.has_symint() else "")
    if "function" in f.variants:
        return f"at::{name}({', '.join(args)})", tuple(diff)
    return f"{args[0]}.{name}({', '.join(args[1:])})", tuple(diff)


def _dispatcher_call(f: NativeFunction) -> str:
    """The callee of ``f`` called through the dispatcher (typed with its kernel signature)."""
    types = ", ".join(b.type.cpp() for b in dispatcher_arguments(f))
    lookup = f'c10::Dispatcher::singleton().findSchemaOrThrow("{f.namespace}::{f.name.name}", "{f.name.overload}")'
    return f"{lookup}.typed<{dispatcher_returns(f).cpp()} ({types})>().call"


def _add_view_copies(model: Model, infos: dict[FunctionSchema, tuple[DerivativeInfo, ...]]) -> None:
    """A view op's ``_copy`` variant (``expand_copy``) reuses the view's formulas."""
    copies = {
        f.func.signature(strip_view_copy_name=True): f
        for f in model.native_functions
        if f.name.base.endswith("_copy") and not f.is_view_op and f.kind is SchemaKind.functional
    }  # only a ``<view>_copy`` name can match a view's signature once ``_copy`` is stripped
    added: dict[FunctionSchema, tuple[DerivativeInfo, ...]] = {}
    for per_key in infos.values():
        view = per_key[0].func
        if not view.is_view_op or view.func.name.inplace:
            continue
        copy = copies.get(view.func.signature(strip_view_copy_name=True))
        if copy is None or copy.func in infos:
            continue
        name = f"{view.name.base}_copy.{view.name.overload}"
        added[copy.func] = tuple(
            replace(i, name=name, func=copy, node=None if i.node is None else f"{i.node}_copy") for i in per_key
        )
    infos.update(added)
