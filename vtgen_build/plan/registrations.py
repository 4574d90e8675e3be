"""Backend registrations: which kernel each ``dispatch:`` key of an op library's yaml registers.

For every op outside ``aten`` (declared in the yaml, not derived) the plan lists the kernels the
author defines -- each with the C++ signature its dialect gives its schema (``plan/dialect.py``:
PyTorch's native API in a build against ATen, ``torch::stable`` types in a stable-ABI library) --
and the registrations of each dispatch key (``select_kernels``: the one rule of both dialects).  Structured groups
(``plan/structured.py``) register generated kernels instead.  Only the keys the build asks for
get a registration unit (a CPU-only build does not compile a CUDA one): a kernel of another key
is neither declared as required nor referenced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..base.errors import Location, VtgenError, did_you_mean
from ..model.cpp_api import CppSignature
from ..model.native import DISPATCH_KEYS, Dispatch, NativeFunction
from .autocast import AutocastPlan, plan_autocast
from .dialect import Dialect
from .structured import StructuredGroup, plan_structured

__all__ = [
    "ALL_KEYS",
    "KernelDecl",
    "KernelImpl",
    "KernelSelection",
    "RegistrationPlan",
    "parse_keys",
    "plan_registrations",
    "registered",
    "registered_keys",
    "select_kernels",
]

ALL_KEYS = "all"  # --register-backends all: every key the yaml uses


@dataclass(frozen=True)
class KernelDecl:
    """A function the author defines, declared in the generated header."""

    namespace: str
    signature: CppSignature
    location: Location
    role: str  # e.g. "CPU kernel of vtsample::affine"


@dataclass(frozen=True)
class KernelImpl:
    """One ``m.impl`` of a plain (not structured) op, in either dialect."""

    namespace: str
    key: str
    op: str  # the operator name as registered: ``affine``, ``softsign.out``
    kernel: CppSignature
    location: Location  # the `dispatch:` line naming the kernel


@dataclass(frozen=True)
class RegistrationPlan:
    keys: tuple[str, ...]  # one registration unit each
    declarations: tuple[KernelDecl, ...]
    impls: tuple[KernelImpl, ...]
    structured: tuple[StructuredGroup, ...]
    autocast: AutocastPlan  # the ops' Autocast kernels, in their devices' units
    dialect: Dialect  # what the registrations are written in (the request's)


def parse_keys(text: str) -> tuple[str, ...]:
    """``CPU,Meta`` (or ``all``) as given to --register-backends; unknown keys are errors."""
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    if keys == (ALL_KEYS,):
        return keys
    for key in keys:
        if key not in DISPATCH_KEYS:
            raise VtgenError(f"--register-backends: unknown dispatch key '{key}'{did_you_mean(key, DISPATCH_KEYS)}")
    if not keys:
        raise VtgenError("--register-backends: no dispatch key given (e.g. CPU,Meta or all)")
    return tuple(sorted(set(keys)))


def registered(functions: Iterable[NativeFunction]) -> list[NativeFunction]:
    """The operators whose kernels the generated code registers: declared in the library's own
    namespace (not derived) and not registered by hand."""
    return [f for f in functions if f.namespace != "aten" and not f.generated and not f.manual_kernel_registration]


@dataclass(frozen=True)
class KernelSelection:
    """Which keys get a registration unit, and what each registers: the decision both dialects share."""

    keys: tuple[str, ...]  # one registration unit each
    declarations: tuple[KernelDecl, ...]
    impls: tuple[KernelImpl, ...]


def _plain(fns: list[NativeFunction], groups: tuple[StructuredGroup, ...]) -> list[NativeFunction]:
    """The operators registered one kernel per ``dispatch:`` key (not members of a structured group)."""
    in_groups = {(f.namespace, str(f.name)) for g in groups for f in g.members}
    return [f for f in fns if (f.namespace, str(f.name)) not in in_groups]


def registered_keys(
    fns: list[NativeFunction], groups: tuple[StructuredGroup, ...], keys: tuple[str, ...]
) -> tuple[str, ...]:
    """The keys given to ``--register-backends`` (``all``: every key the yaml's ``fns`` use; a structured group
    adds Meta): one registration unit each, in either dialect."""
    if keys != (ALL_KEYS,):
        return keys
    used = {d.key for f in _plain(fns, groups) for d in f.dispatch} | {d.key for g in groups for d in g.impls}
    return tuple(sorted(used | ({"Meta"} if groups else set())))


def select_kernels(
    fns: list[NativeFunction], groups: tuple[StructuredGroup, ...], keys: tuple[str, ...], dialect: Dialect
) -> KernelSelection:
    """The keys (``all``: every key the yaml uses; a structured group adds Meta), the author's kernels
    to declare and the ``m.impl`` of each plain op, their signatures in ``dialect``'s types."""
    plain = _plain(fns, groups)
    chosen = registered_keys(fns, groups, keys)
    signature = dialect.kernel_signature
    impls = tuple(
        KernelImpl(f.namespace, d.key, str(f.name), signature(f, d.kernel), _where(d, f))
        for f in plain
        for d in f.dispatch
        if d.key in chosen
    )
    return KernelSelection(chosen, _declarations(plain, chosen, signature), impls)


def plan_registrations(
    functions: Iterable[NativeFunction], keys: tuple[str, ...], dialect: Dialect
) -> RegistrationPlan:
    """A build against ATen's backend registrations for ``keys``, in ``dialect`` (the request's)."""
    fns = registered(functions)
    groups = plan_structured(fns)
    chosen = select_kernels(fns, groups, keys, dialect)
    autocast = plan_autocast(fns, chosen.keys)
    return RegistrationPlan(chosen.keys, chosen.declarations, chosen.impls, groups, autocast, dialect)


def _declarations(
    plain: list[NativeFunction], keys: tuple[str, ...], signature: Callable[[NativeFunction, str], CppSignature]
) -> tuple[KernelDecl, ...]:
    """One declaration per distinct kernel (``CPU, CUDA: affine`` declares ``affine`` once), its C++
    signature spelled by ``signature`` (the dialect's)."""
    seen: dict[tuple[str, str, tuple[str, ...]], KernelDecl] = {}
    for f in plain:
        for d in f.dispatch:
            if d.key not in keys:
                continue
            sig = signature(f, d.kernel)
            key = (f.namespace, sig.name, sig.types())
            if key not in seen:
                seen[key] = KernelDecl(f.namespace, sig, _where(d, f), f"{d.key} kernel of {f.namespace}::{f.name}")
    return tuple(seen.values())


def _where(d: Dispatch, f: NativeFunction) -> Location:
    return d.location or f.location
