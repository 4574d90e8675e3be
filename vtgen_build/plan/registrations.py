"""Backend registrations: which kernel each ``dispatch:`` key of an op library's yaml registers.

For every op outside ``aten`` (declared in the yaml, not derived) the plan lists the kernels the
author defines -- each with the C++ signature PyTorch's native API gives its schema (schema
order, out arguments last, ``SymInt`` as ``c10::SymInt`` only when the kernel name ends in
``_symint``, else ``int64_t``) -- and the registrations of each dispatch key.  Structured groups
(``plan/structured.py``) register generated kernels instead.  Only the keys the build asks for
get a registration unit (a CPU-only build does not compile a CUDA one): a kernel of another key
is neither declared as required nor referenced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..base.errors import Location, VtgenError, did_you_mean
from ..model.cpp_api import Binding, CppSignature, argument_type, dispatcher_returns
from ..model.native import DISPATCH_KEYS, Dispatch, NativeFunction
from .autocast import AutocastPlan, plan_autocast
from .structured import StructuredGroup, plan_structured

__all__ = [
    "ALL_KEYS",
    "KernelDecl",
    "KernelImpl",
    "RegistrationPlan",
    "kernel_declarations",
    "parse_keys",
    "plan_registrations",
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
    """One ``m.impl`` of a plain (not structured) op."""

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


def native_signature(fn: NativeFunction, kernel: str) -> CppSignature:
    """The native C++ signature of ``fn``'s kernel named ``kernel``."""
    symint = kernel.endswith("_symint")
    params = tuple(
        Binding(
            argument_type(
                a.type, mutable=a.is_write, symint=symint, const_mutable=fn.use_const_ref_for_mutable_tensors
            ),
            a.name,
        )
        for a in fn.func.arguments.all
    )
    return CppSignature(kernel, dispatcher_returns(fn), params)


def _registered(fn: NativeFunction) -> bool:
    return fn.namespace != "aten" and not fn.generated and not fn.manual_kernel_registration


def plan_registrations(functions: Iterable[NativeFunction], keys: tuple[str, ...]) -> RegistrationPlan:
    fns = [f for f in functions if _registered(f)]
    groups = plan_structured(fns)
    in_groups = {(f.namespace, str(f.name)) for g in groups for f in g.members}
    plain = [f for f in fns if (f.namespace, str(f.name)) not in in_groups]
    used = {d.key for f in plain for d in f.dispatch} | {d.key for g in groups for d in g.impls}
    used |= {"Meta"} if groups else set()
    chosen = tuple(sorted(used)) if keys == (ALL_KEYS,) else keys
    impls = tuple(
        KernelImpl(f.namespace, d.key, str(f.name), native_signature(f, d.kernel), _where(d, f))
        for f in plain
        for d in f.dispatch
        if d.key in chosen
    )
    declarations = kernel_declarations(plain, chosen, native_signature)
    return RegistrationPlan(chosen, declarations, impls, groups, plan_autocast(fns, chosen))


def kernel_declarations(
    plain: list[NativeFunction], keys: tuple[str, ...], signature: Callable[[NativeFunction, str], CppSignature]
) -> tuple[KernelDecl, ...]:
    """One declaration per distinct kernel (``CPU, CUDA: affine`` declares ``affine`` once), its C++
    signature spelled by ``signature`` (the classic native types, or the stable ABI's)."""
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
