"""What each ADInplaceOrView kernel does: bump version counters, or make its output a view.

Autograd detects that a saved tensor was modified in place through the
tensor's version counter, and tracks views through the view metadata that
``as_view`` attaches.  Both happen in the ``ADInplaceOrView`` kernel of an op,
one key below ``Autograd``.  Which ops get one follows PyTorch:

* the op has an Autograd kernel (or the not-implemented fallback), i.e. it is
  not written by hand and is abstract or has a derivative;
* it writes its arguments (an in-place or out= schema) and returns something:
  it *mutates*, and bumps the version of every returned tensor;
* an op library's op returning nothing that writes tensors (``-> ()``, see
  ``mutating.py``) mutates too, and bumps the version of every tensor it writes;
* or it is a view op: its output aliases an input.  For ``aten`` the view ops
  are PyTorch's lists (``policy.view_of``); an op library's own ops are views
  when their schema says so (``Tensor(a) self -> Tensor(a)``), the aliased
  argument being the input that carries the return's alias set.

An in-place variant of a view op (``transpose_``) mutates: it is not a view.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..base.errors import VtgenError
from ..base.names import distinct_names
from ..model.native import NativeFunction
from ..model.schema import SchemaKind
from .kernel import KernelPlan, Plan, differentiable_outputs
from .mutating import mutated_arguments
from .policy import Policy
from .values import cpp_return_names
from .views import view_base

__all__ = ["InplaceOrViewPlan", "ViewPlan", "plan_inplace_or_view"]


@dataclass(frozen=True)
class ViewPlan:
    """How a view op's outputs become views of its base."""

    base: str  # the argument every output aliases
    differentiable: bool  # False: the output is a non-differentiable view (no grad flows through it)
    multi_output: bool  # a Tensor[] output: each element is a view (MULTI_OUTPUT_NODE: no in-place rebase)
    metadata_change: bool  # view_as_real & co.: always replayed by the view function, never by as_strided


@dataclass(frozen=True)
class InplaceOrViewPlan:
    function: NativeFunction
    bumped: tuple[str, ...]  # a mutating op: the returned values (or, for `-> ()`, written arguments) to bump
    view: ViewPlan | None  # a view op: how its output is made a view (None: it mutates)
    distinct_wrapper: str | None = None  # the C++ name when ``wrapper``'s is an earlier kernel's

    @property
    def op(self) -> str:
        return str(self.function.name)

    @property
    def wrapper(self) -> str:
        """The C++ kernel name: ``add__Tensor``, ``transpose_int``."""
        if self.distinct_wrapper is not None:
            return self.distinct_wrapper
        overload = self.function.name.overload
        return self.function.cpp_name + (f"_{overload}" if overload else "")


def plan_inplace_or_view(plan: Plan, policy: Policy) -> tuple[InplaceOrViewPlan, ...]:
    """One plan per function needing an ADInplaceOrView kernel, in plan order."""
    default: dict[int, KernelPlan] = {}
    order: list[NativeFunction] = []
    for k in plan.kernels:
        if id(k.function) not in default:
            order.append(k.function)
            default[id(k.function)] = k
        if k.dispatch_key == "Autograd":
            default[id(k.function)] = k  # the Default formulas decide which outputs are differentiable
    plans = [p for p in (_plan_function(f, default[id(f)], policy) for f in order) if p is not None]
    names = distinct_names([p.wrapper for p in plans])
    return tuple(p if p.wrapper == n else replace(p, distinct_wrapper=n) for p, n in zip(plans, names, strict=True))


def _plan_function(f: NativeFunction, kernel: KernelPlan, policy: Policy) -> InplaceOrViewPlan | None:
    base = view_base(f, policy)
    mutated = mutated_arguments(f)
    if mutated:  # a `-> ()` op of an op library: bumps what it writes
        return InplaceOrViewPlan(f, tuple(a.name for a in mutated), None)
    mutates = f.kind in (SchemaKind.inplace, SchemaKind.out)
    if mutates:
        # an op that writes its arguments but returns nothing gets no kernel (as in PyTorch)
        return InplaceOrViewPlan(f, cpp_return_names(f), None) if f.func.returns else None
    if base is None:
        return None
    info = kernel.info if kernel.dispatch_key == "Autograd" else None
    outputs = differentiable_outputs(f, info)
    if len(outputs) > 1:
        raise VtgenError(f"view op '{f.name}': a view with several differentiable outputs is not supported", f.location)
    multi = len(outputs) == 1 and outputs[0].type.is_list()
    view = ViewPlan(base, bool(outputs), multi, f.name.base in policy.view_functions_with_metadata_change)
    return InplaceOrViewPlan(f, (), view)
