"""The per-op decision record: what an Autograd kernel must do.

``plan_kernels`` answers, for every native function and autograd key: is a
kernel generated, is the not-implemented fallback registered, or nothing; and
for a kernel, which inputs and outputs are differentiable, which Node it
creates, what it saves, which guard it dispatches under.  Emitters only spell
these decisions in C++.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..base.errors import VtgenError
from ..base.names import distinct_names
from ..model import Model
from ..model.native import NativeFunction
from ..model.schema import SchemaKind, Type
from .infos import Backward, DerivativeInfo, build_infos
from .match import Match, match_infos
from .mutating import mutated_arguments, overwritten_names
from .policy import Policy
from .values import cpp_return_names, value_type
from .views import view_base

__all__ = ["KernelPlan", "Plan", "Value", "build_plan", "differentiable_outputs", "unpacked_arguments"]

NOT_IMPLEMENTED_NODE = "NotImplemented"


@dataclass(frozen=True)
class Value:
    """A differentiable input or output of a kernel."""

    name: str
    type: Type
    cpp_type: str


@dataclass(frozen=True)
class DebugChecks:
    """What a debug build (no NDEBUG) asserts around the redispatch.

    Inputs keep their storage and TensorImpl; a fresh output owns its storage
    and TensorImpl alone, and a view's output shares its base's storage.
    """

    inputs: tuple[tuple[str, bool], ...]  # (unpacked argument, is a tensor list)
    outputs: tuple[tuple[str, str | None, bool, bool], ...]  # (name, aliased input, unique storage, fresh impl)


@dataclass(frozen=True)
class KernelPlan:
    function: NativeFunction
    dispatch_key: str  # the registration key: Autograd, AutogradNestedTensor, ...
    kind: str  # "kernel" or "fallback"
    info: DerivativeInfo | None
    node: str | None  # the Node type the kernel creates (None: creates none)
    requires_derivative: bool
    differentiable_inputs: tuple[Value, ...]
    differentiable_outputs: tuple[Value, ...]
    args_with_derivatives: tuple[Value, ...]
    check_no_requires_grad: tuple[str, ...]
    view_of: str | None  # the input a view op's output aliases
    complex_checked: tuple[str, ...] = ()  # outputs that must not be complex (no complex formula known)
    save_guards: tuple[tuple[str, str], ...] = ()  # saved member -> C++ condition under which it is saved
    debug: DebugChecks | None = None
    # no forward formula: when an input carries a tangent, run the op's decomposition instead
    jvp_decomposition: bool = False
    # the C++ name when the one ``wrapper`` spells is an earlier kernel's (``base.names.distinct_names``)
    distinct_wrapper: str | None = None

    def save_guard(self, member: str) -> str | None:
        return next((cond for name, cond in self.save_guards if name == member), None)

    @property
    def op(self) -> str:
        """The registered operator name: ``add.Tensor``."""
        return str(self.function.name)

    @property
    def wrapper(self) -> str:
        """The C++ kernel function name: ``add_Tensor``, ``mean_AutogradNestedTensor``; ``foo_bar_2`` for
        ``foo_bar`` after ``foo.bar``."""
        if self.distinct_wrapper is not None:
            return self.distinct_wrapper
        name = self.function.cpp_name
        overload = self.function.name.overload
        key = "" if self.dispatch_key == "Autograd" else f"_{self.dispatch_key}"
        return f"{name}{'_' + overload if overload else ''}{key}"

    @property
    def modifies_arguments(self) -> bool:
        """In-place, out= and ``-> ()`` mutating ops write their outputs (ops that also mutate other inputs
        do not count)."""
        return self.function.kind in (SchemaKind.inplace, SchemaKind.out) or bool(self.mutated)

    @property
    def mutated(self) -> tuple[str, ...]:
        """A ``-> ()`` mutating op: the arguments it writes (its outputs, for autograd)."""
        return tuple(a.name for a in mutated_arguments(self.function))

    @property
    def overwritten(self) -> tuple[str, ...]:
        """Arguments the op overwrites: a formula reading one saves a clone taken before the call."""
        return overwritten_names(self.function)

    @property
    def guard(self) -> str:
        """Views and mutating ops skip ADInplaceOrView too (it already ran for them)."""
        if self.view_of is not None or self.modifies_arguments:
            return "at::AutoDispatchBelowAutograd"
        return "at::AutoDispatchBelowADInplaceOrView"


@dataclass(frozen=True)
class Plan:
    kernels: tuple[KernelPlan, ...]
    infos: tuple[DerivativeInfo, ...]  # every info with a Node, in Node-emission order

    def by_op(self, op: str) -> tuple[KernelPlan, ...]:
        return tuple(k for k in self.kernels if k.op == op)


def build_plan(model: Model, policy: Policy) -> Plan:
    infos = build_infos(model)
    matches = match_infos(model.native_functions, infos, policy)
    kernels = _distinct_wrappers([k for m in matches for k in _plan_function(m, policy)])
    nodes: dict[str, DerivativeInfo] = {}
    for info in [i for per_key in infos.values() for i in per_key] + [i for m in matches for i in m.infos]:
        if info.node is not None:
            nodes.setdefault(info.node, info)  # foreach infos are made while matching
    return Plan(kernels, tuple(nodes.values()))


def _distinct_wrappers(kernels: list[KernelPlan]) -> tuple[KernelPlan, ...]:
    """Each kernel a C++ name of its own, fixed by the yaml's order (``TORCH_FN`` of two same-named ones
    cannot compile)."""
    names = distinct_names([k.wrapper for k in kernels])
    return tuple(k if k.wrapper == n else replace(k, distinct_wrapper=n) for k, n in zip(kernels, names, strict=True))


def _plan_function(m: Match, policy: Policy) -> list[KernelPlan]:
    f = m.function
    has_derivatives = any(i.has_derivatives for i in m.infos)
    if f.cpp_name in policy.manual_autograd or not (f.is_abstract or has_derivatives):
        return []  # written by hand, or decomposes into ops that have kernels
    if not m.infos:
        if _uses_fallback(f, policy):
            return [_fallback(f)]
        return [_kernel(f, None, policy)]
    return [_kernel(f, info, policy) for info in m.infos]


def _uses_fallback(f: NativeFunction, policy: Policy) -> bool:
    """No formula at all: the boxed fallback errors on backward, unless a name list says otherwise.

    Not for a `-> ()` mutating op: the fallback rebases only returned tensors; our kernel's
    NotImplemented Node is rebased on each written one."""
    wrapper = f.cpp_name + (f"_{f.name.overload}" if f.name.overload else "")
    return (
        not mutated_arguments(f)
        and f.name.name not in policy.reset_grad_accumulator
        and f.name.base not in policy.dont_require_derivative
        and bool(_outputs(f, None))
        and f.cpp_name not in policy.dont_enforce_same_tensor_impl_or_storage
        and wrapper not in policy.dont_enforce_storage_impl_use_count
        and wrapper not in policy.dont_enforce_tensor_impl_use_count
    )


def _fallback(f: NativeFunction) -> KernelPlan:
    return KernelPlan(f, "Autograd", "fallback", None, None, False, (), (), (), (), None)


def _autograd_key(info: DerivativeInfo | None) -> str:
    return "Autograd" if info is None or info.dispatch_key == "Default" else info.dispatch_key


def unpacked_arguments(f: NativeFunction) -> tuple[tuple[int, str, str], ...]:
    """(position, name, type) of the arguments a kernel unpacks into a local ``<name>_``: non-optional
    tensors and tensor lists."""
    return tuple(
        (i, a.name, str(a.type))
        for i, a in enumerate(f.func.arguments.all)
        if a.type.is_tensor_like() and not a.type.is_optional() and str(a.type) != "Tensor?[]"
    )


def _check_unpacked_names(f: NativeFunction) -> None:
    """An argument ``x_`` beside a tensor ``x``: the kernel's unpacked copy of ``x`` takes its name."""
    names = {a.name for a in f.func.arguments.all}
    for _, name, _ in unpacked_arguments(f):
        if f"{name}_" in names:
            raise VtgenError(
                f"arguments '{name}' and '{name}_': the autograd kernel names its unpacked copy of the tensor "
                f"'{name}' '{name}_' (C++ cannot hold both); rename one",
                f.location,
            )


def _kernel(f: NativeFunction, info: DerivativeInfo | None, policy: Policy) -> KernelPlan:
    _check_unpacked_names(f)
    inputs = _inputs(f, info)
    outputs = _outputs(f, info)
    is_inplace_foreach = f.name.base.startswith("_foreach_") and f.kind is SchemaKind.inplace
    requires = (
        f.name.base not in policy.dont_require_derivative
        and f.cpp_name not in policy.dont_require_derivative
        and bool(inputs)
        and (bool(outputs) or is_inplace_foreach)
    )
    with_derivs = _args_with_derivatives(f, info, inputs)
    node = None
    if requires and f.kind is not SchemaKind.out:
        node = info.node if info is not None and info.has_derivatives else NOT_IMPLEMENTED_NODE
    unchecked = _no_requires_grad_checks(f, info, inputs, with_derivs) if requires else ()
    complex_checked = _complex_checked(f, outputs, policy) if requires else ()
    guards = _save_guards(f, info, with_derivs) if node is not None and info is not None else ()
    return KernelPlan(
        f,
        _autograd_key(info),
        "kernel",
        info,
        node,
        requires,
        inputs,
        outputs,
        with_derivs,
        unchecked,
        view_base(f, policy),
        complex_checked,
        guards,
        _debug_checks(f, policy),
        _decomposes_for_jvp(f, info, requires),
    )


def _decomposes_for_jvp(f: NativeFunction, info: DerivativeInfo | None, requires: bool) -> bool:
    """Without a forward formula, a returning, non-mutating aten op gets its JVP from its decomposition.
    An op library's op has none (PyTorch's JIT decompositions are aten's): its kernel refuses a tangent
    and names the derivatives.yaml entry lacking the formula (emit/kernel.py)."""
    writes_arguments = f.kind in (SchemaKind.inplace, SchemaKind.out)
    if f.namespace != "aten":
        return False
    return requires and not (info is not None and info.forward) and not writes_arguments and bool(f.func.returns)


def _debug_checks(f: NativeFunction, policy: Policy) -> DebugChecks | None:
    if f.cpp_name in policy.dont_enforce_same_tensor_impl_or_storage:
        return None
    inputs = tuple((a.name, a.type.is_list()) for a in f.func.arguments.all if str(a.type) in ("Tensor", "Tensor[]"))
    if not inputs:
        return None  # nothing to compare against: PyTorch skips the output checks too
    outputs: list[tuple[str, str | None, bool, bool]] = []
    if f.kind not in (SchemaKind.inplace, SchemaKind.out):
        wrapper = f.cpp_name + (f"_{f.name.overload}" if f.name.overload else "")
        # an op library's view op aliases what its schema says (PyTorch's list names aten ops only)
        aliased = policy.debug_alias(f.name.base) if f.namespace == "aten" else view_base(f, policy)
        for name, r in zip(cpp_return_names(f), f.func.returns, strict=False):
            if str(r.type) == "Tensor" and not r.is_write:
                unique = aliased is None and wrapper not in policy.dont_enforce_storage_impl_use_count
                fresh = wrapper not in policy.dont_enforce_tensor_impl_use_count
                outputs.append((name, aliased, unique, fresh))
    return DebugChecks(inputs, tuple(outputs))


def _save_guards(
    f: NativeFunction, info: DerivativeInfo, with_derivs: tuple[Value, ...]
) -> tuple[tuple[str, str], ...]:
    """Skip saving a tensor that only the formula of an input nobody needs a gradient for reads.

    Only when the answer is simple: several inputs have formulas, none of them a tensor list
    (in-place foreach aside), the op is not itself a backward, and exactly one formula reads
    the tensor; a formula for several inputs guards only what it wraps in ``wrap_opt_if``.
    """
    inplace_foreach = f.name.base.startswith("_foreach_") and f.kind is SchemaKind.inplace
    if any(v.type.is_list() for v in with_derivs) and not inplace_foreach:
        return ()
    if "backward" in info.name or len(with_derivs) <= 1:
        return ()
    guards = []
    for value in info.saved_inputs:
        if value.cpp_type != "at::Tensor":
            continue
        readers = [b for b in info.backward if value in b.saved_inputs]
        if len(readers) != 1:
            continue
        condition = _guard_condition(value.name, readers[0], info, with_derivs)
        if condition is not None:
            guards.append((value.name, condition))
    return tuple(guards)


def _guard_condition(name: str, b: Backward, info: DerivativeInfo, with_derivs: tuple[Value, ...]) -> str | None:
    if len(b.var_names) != 1:
        m = re.search(rf"wrap_opt_if\({re.escape(name)},(.*?)\)", b.formula)
        if m is None:
            return None
        return re.sub(r"grad_input_mask\[(\d+)\]", r"grad_fn->should_compute_output(\1)", m.group(1).strip())
    position = _edge_position(b.var_names[0], info, with_derivs)
    return None if position is None else f"grad_fn->should_compute_output({position})"


def _edge_position(var: str, info: DerivativeInfo, with_derivs: tuple[Value, ...]) -> int | None:
    names = [v.name for v in with_derivs]
    if var in names:
        return names.index(var)
    ref = [a.name for a in info.args_with_derivatives]  # in-place foreach: the per-tensor op's names
    return ref.index(var) if var in ref and len(ref) == len(names) else None


def _complex_checked(f: NativeFunction, outputs: tuple[Value, ...], policy: Policy) -> tuple[str, ...]:
    """Fresh Tensor outputs of ops not on the complex allowlist are checked not to be complex.

    Mutated outputs (in-place, out=) and list outputs are not checked, as in PyTorch.
    """
    writes = f.kind in (SchemaKind.inplace, SchemaKind.out) or mutated_arguments(f)
    if f.name.base in policy.gradient_implemented_for_complex or writes:
        return ()
    returns = {n: r for n, r in zip(cpp_return_names(f), f.func.returns, strict=False)}
    return tuple(o.name for o in outputs if str(o.type) == "Tensor" and not returns[o.name].is_write)


def _inputs(f: NativeFunction, info: DerivativeInfo | None) -> tuple[Value, ...]:
    """Tensor-like non-out arguments not declared non-differentiable."""
    skip = set(info.non_differentiable) if info else set()
    return tuple(
        Value(a.name, a.type, value_type(a.type))
        for a in f.func.arguments.non_out
        if a.type.is_tensor_like() and a.name not in skip
    )


def _outputs(f: NativeFunction, info: DerivativeInfo | None) -> tuple[Value, ...]:
    names = cpp_return_names(f)
    outs = [Value(n, r.type, value_type(r.type)) for n, r in zip(names, f.func.returns, strict=False)]
    outs += [Value(a.name, a.type, value_type(a.type)) for a in mutated_arguments(f)]  # a `-> ()` op's
    od = info.output_differentiability if info else None
    if od is not None:
        return tuple(o for o, d in zip(outs, od, strict=False) if d)
    skip = set(info.non_differentiable) if info else set()
    candidates = tuple(o for o in outs if o.type.is_tensor_like() and o.name not in skip)
    if info is not None and info.uses("grad"):
        return candidates[:1]
    return candidates


def differentiable_outputs(f: NativeFunction, info: DerivativeInfo | None) -> tuple[Value, ...]:
    """The outputs gradients flow through (``output_differentiability``, else the tensor-like ones)."""
    return _outputs(f, info)


def _args_with_derivatives(
    f: NativeFunction, info: DerivativeInfo | None, inputs: tuple[Value, ...]
) -> tuple[Value, ...]:
    if info is None or not info.has_derivatives:
        return inputs
    names = {a.name for a in info.args_with_derivatives}
    if f.name.base.startswith("_foreach_") and f.kind is SchemaKind.inplace and info.func is not f:
        # an in-place foreach op runs the per-tensor op's formulas: match arguments by position
        ref_names = [a.name for a in info.func.func.arguments.non_out]
        by_position = dict(zip((a.name for a in f.func.arguments.non_out), ref_names, strict=False))
        return tuple(i for i in inputs if by_position.get(i.name) in names)
    return tuple(i for i in inputs if i.name in names)


def _no_requires_grad_checks(
    f: NativeFunction, info: DerivativeInfo | None, inputs: tuple[Value, ...], with_derivs: tuple[Value, ...]
) -> tuple[str, ...]:
    """Differentiable inputs without a formula must not require grad (the kernel checks)."""
    if info is None or not info.has_derivatives or f.kind is SchemaKind.out:
        return ()
    covered = {v.name for v in with_derivs}
    skip = set(info.non_differentiable) | {"output"}
    return tuple(i.name for i in inputs if i.name not in covered and i.name not in skip)
