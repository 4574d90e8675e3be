"""What an op library registers besides its Autograd kernels: one frozen record, decided here.

``RegisterSchema.cpp``'s schema definitions, the ``ADInplaceOrView`` kernels and, with backend
registrations, the ``NativeKernels.h``/``Register<Key>.cpp`` plan and, for an op library's own
namespace (not ``aten``: there they would be empty), the out= operators that get a Functionalize
kernel (and lose the ``out`` tag: only in a build against torch) and the AOTInductor C shims.  The emitter
(``emit.files.library_files``) writes this record and decides nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model.native import NativeFunction
from .aoti_shims import AotiShimPlan, plan_aoti_shims
from .functionalize import FunctionalizedOut, plan_functionalize
from .inplace_or_view import InplaceOrViewPlan, plan_inplace_or_view
from .kernel import Plan
from .policy import Policy
from .registrations import RegistrationPlan, plan_registrations
from .request import BuildRequest
from .schemas import SchemaDef, plan_schemas

__all__ = ["LibraryPlan", "plan_library"]


@dataclass(frozen=True)
class LibraryPlan:
    schemas: tuple[SchemaDef, ...]
    inplace_or_view: tuple[InplaceOrViewPlan, ...]
    registrations: RegistrationPlan | None  # None: no backend registrations asked for
    functionalized: tuple[FunctionalizedOut, ...]  # out= operators with a Functionalize kernel
    aoti_shims: AotiShimPlan | None  # None: not an op library's backend registrations


def plan_library(
    functions: Iterable[NativeFunction],
    plan: Plan,
    policy: Policy,
    request: BuildRequest,
) -> LibraryPlan:
    """The library's registrations besides Autograd: for the request's ``register_backends`` (none: no
    registrations), in its dialect; an op library's (``BuildRequest.op_library``) extras."""
    functions = tuple(functions)
    keys = request.register_backends
    registrations = plan_registrations(functions, keys, request.dialect) if keys else None
    op_library = request.op_library
    functionalized = plan_functionalize(functions) if op_library else ()
    return LibraryPlan(
        plan_schemas(functions, policy, functionalized),
        plan_inplace_or_view(plan, policy),
        registrations,
        functionalized,
        plan_aoti_shims(functions, registrations) if op_library and registrations is not None else None,
    )
