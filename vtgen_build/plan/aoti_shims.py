"""Which operators of an op library get an AOTInductor C shim, on which devices, under which name.

AOTInductor compiles a graph into C++ that calls each operator either through a C function
(a *C shim*: ``aoti_torch_<device>_<name>``, tensors as ``AtenTensorHandle``, results through
pointers) or, for an operator without one, back through its proxy executor (a boxed call by
name).  PyTorch generates shims for aten only; for an op library Inductor calls a shim only when
``torch._inductor.config.aot_inductor.custom_ops_to_c_shims`` lists the operator with the
shim's declaration.  This plan decides, from ``dispatch:``, which shims the library defines:

* one per operator Inductor can meet in a graph and device the build registers a kernel for
  (``CPU`` → ``cpu``, ``CUDA`` → ``cuda``, ...; a ``CompositeExplicitAutograd`` kernel serves every
  device of the build, a structured op the devices of its out= op's ``dispatch:``);
* Inductor names a custom operator's shim after the operator *without* its overload name, so
  two overloads reaching Inductor with one name cannot both have one: neither gets a shim;
* an operator named like an aten operator (``topk``, or ``add_Tensor``: an aten name joined to its
  overload) gets none: libtorch exports (or a later release may export) aten's shim of that very
  name, and a library symbol of that name, made global, would be bound to every AOTInductor
  package's aten call; a shim of another name would never be called (``ATEN_NAMES``: the aten
  operators of the releases ``tools/gen_aten_op_names.py`` read);
* out= operators never reach Inductor's lowering (they are functionalized first), nor do
  ``CompositeImplicitAutograd`` decompositions; operators returning views of their inputs are
  refused by torch.compile; argument or return types without a C spelling (``Dimname``,
  ``Tensor[]`` returns, ...) stay on the proxy executor.

Every operator left out is listed with its reason (``AotiShimPlan.skipped``), never silently.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import Location
from ..model.native import NativeFunction
from ..model.schema import BaseType, ListType, OptionalType, SchemaKind, Type
from ..model.type_spellings import C_SHIM
from .registrations import RegistrationPlan, registered, registered_keys
from .structured import StructuredGroup, plan_structured

__all__ = [
    "ATEN_NAMES",
    "DEVICES",
    "AotiShim",
    "AotiShimPlan",
    "SkippedShim",
    "aten_name_clashes",
    "aten_op_names",
    "kernel_entry",
    "plan_aoti_shims",
    "plan_device_shims",
    "plan_library_shims",
    "shim_type_problem",
]

# One name a line (``#`` lines are comments): written by tools/gen_aten_op_names.py.
ATEN_NAMES = Path(__file__).resolve().parent.parent / "data" / "aten_op_names.txt"

# The dispatch keys that name a device AOTInductor compiles for, and its spelling in shim names.
DEVICES = {"CPU": "cpu", "CUDA": "cuda", "XPU": "xpu", "MPS": "mps"}
_EVERY_DEVICE = frozenset(("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"))

# Schema base types with a C spelling in the shim ABI, read from the table its emitter spells them by
# (optional: passed by pointer; lists: pointer + length).
_BASE = frozenset(C_SHIM)
_LIST_ELEMENTS = frozenset(name for name, t in C_SHIM.items() if t.element)
_OPTIONAL = frozenset(name for name, t in C_SHIM.items() if t.optional)
_RETURNS = frozenset(name for name, t in C_SHIM.items() if t.result)


@dataclass(frozen=True)
class AotiShim:
    """One C shim: ``function`` on ``device``, running the kernel registered for ``key``."""

    function: NativeFunction
    device: str  # "cpu"
    key: str  # the dispatch key whose kernel it runs: "CPU"

    @property
    def name(self) -> str:
        """The C function Inductor calls: ``aoti_torch_cpu_softsign`` (no overload name, as Inductor spells it)."""
        return f"aoti_torch_{self.device}_{self.function.name.name}"

    @property
    def operator(self) -> str:
        """The operator as Python names it: ``vtsample::softsign`` or ``vtsample::foo.Tensor``."""
        return f"{self.function.namespace}::{self.function.name}"


@dataclass(frozen=True)
class SkippedShim:
    """An operator without a shim (its calls go through the proxy executor), and why."""

    operator: str
    reason: str
    location: Location
    warn: bool = False  # a surprise to say at the line (generate, inspect): named like an aten operator

    def warning(self) -> str:
        """``path:line: warning: ...``, as ``generate`` and ``inspect`` print it."""
        return f"{self.location}: warning: {self.operator} gets no AOTInductor C shim: {self.reason}"


@dataclass(frozen=True)
class AotiShimPlan:
    shims: tuple[AotiShim, ...]  # in yaml order, then device order
    skipped: tuple[SkippedShim, ...]


def shim_type_problem(ty: Type) -> str | None:
    """Why an argument of type ``ty`` has no C spelling in the shim ABI (None: it has one)."""
    if isinstance(ty, BaseType):
        return None if ty.name in _BASE else f"'{ty}' arguments"
    if isinstance(ty, OptionalType):
        if isinstance(ty.elem, ListType) and str(ty.elem.elem) == "int":
            return None
        return None if str(ty.elem) in _OPTIONAL else f"'{ty}' arguments"
    if isinstance(ty, ListType):
        return None if str(ty.elem) in _LIST_ELEMENTS and ty.size is None else f"'{ty}' arguments"
    return f"'{ty}' arguments"


def _problem(f: NativeFunction) -> str | None:
    if f.generated or f.manual_kernel_registration:
        return "no kernel registered by the generated code (derived, or manual_kernel_registration)"
    if f.kind is SchemaKind.out:
        return "an out= operator (functionalized before Inductor lowers the graph)"
    if not f.is_abstract:
        return "a CompositeImplicitAutograd decomposition (decomposed before Inductor lowers the graph)"
    if any(r.annotation is not None for r in f.func.returns):
        return "returns an alias of an input (torch.compile refuses custom ops returning views)"
    for a in f.func.arguments.all:
        problem = shim_type_problem(a.type)
        if problem is not None:
            return f"{problem} have no C spelling in AOTInductor's shim ABI ({a.name})"
    for r in f.func.returns:
        if not (isinstance(r.type, BaseType) and r.type.name in _RETURNS):
            return f"'{r.type}' returns have no C spelling in AOTInductor's shim ABI"
    return None


def aten_op_names(path: Path = ATEN_NAMES) -> frozenset[str]:
    """The names of aten operators a libtorch shim is (or may be) named after: ``topk``, ``add_Tensor``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def aten_name_clashes(
    functions: Iterable[NativeFunction], aten: frozenset[str] | None = None
) -> tuple[SkippedShim, ...]:
    """The operators of an op library that would have a shim but for a name of aten's (``inspect`` lists them
    whatever the build's devices)."""
    aten = aten_op_names() if aten is None else aten
    found = []
    for f in functions:
        if f.namespace != "aten" and _problem(f) is None and (reason := _aten_clash(f, aten)) is not None:
            found.append(SkippedShim(f"{f.namespace}::{f.name}", reason, f.location, warn=True))
    return tuple(found)


def _aten_clash(f: NativeFunction, aten: frozenset[str]) -> str | None:
    name = f.name.name
    if name not in aten:
        return None
    return (
        f"named like aten's operator '{name}': libtorch's own AOTInductor shim is (or may be) "
        f"aoti_torch_<device>_{name}, and a library symbol of that name would take aten's calls in every "
        "AOTInductor package loaded after it (Inductor names a shim after the operator alone); "
        "rename the operator to give it a shim"
    )


def _device_keys(f: NativeFunction, groups: tuple[StructuredGroup, ...], keys: tuple[str, ...]) -> tuple[str, ...]:
    """The device keys of the build (``keys``: the keys it registers) that have a kernel of ``f``."""
    devices = tuple(k for k in DEVICES if k in keys)
    for group in groups:
        if any(m is f for m in group.members):
            impls = {d.key for d in group.impls}
            return tuple(k for k in devices if k in impls)
    if f.dispatch_keys & _EVERY_DEVICE & set(keys):  # registered: it serves every device
        return devices
    return tuple(k for k in devices if k in f.dispatch_keys)


def plan_aoti_shims(
    functions: Iterable[NativeFunction], registrations: RegistrationPlan, aten: frozenset[str] | None = None
) -> AotiShimPlan:
    """The shims of the operators ``registrations`` registers (a build against torch), in yaml order;
    ``aten``: the names no shim may take (default: ``aten_op_names()``)."""
    return plan_device_shims(functions, registrations.keys, registrations.structured, aten)


def plan_library_shims(functions: Iterable[NativeFunction], keys: tuple[str, ...]) -> AotiShimPlan:
    """The shims of an op library registering kernels at ``keys`` (as given: ``all`` too), in either dialect:
    which shims a library defines follows from its keys and structured groups, not from how its registrations
    are spelled, so nothing else of them is planned (the typed Python API lists these)."""
    fns = registered(functions)
    groups = plan_structured(fns)
    return plan_device_shims(fns, registered_keys(fns, groups, keys), groups)


def plan_device_shims(
    functions: Iterable[NativeFunction],
    keys: tuple[str, ...],
    groups: tuple[StructuredGroup, ...],
    aten: frozenset[str] | None = None,
) -> AotiShimPlan:
    """The shims of a build registering kernels at ``keys`` (its structured ``groups``): the rule of
    ``plan_aoti_shims``, for the classic mode's registrations and the stable mode's alike."""
    fns = [f for f in functions if f.namespace != "aten"]
    aten = aten_op_names() if aten is None else aten
    devices = tuple(k for k in DEVICES if k in keys)
    skipped: list[SkippedShim] = []
    candidates: list[NativeFunction] = []
    for f in fns:
        problem = _problem(f)
        if problem is not None:
            skipped.append(SkippedShim(f"{f.namespace}::{f.name}", problem, f.location))
        elif (clash := _aten_clash(f, aten)) is not None:  # as aten_name_clashes says it
            skipped.append(SkippedShim(f"{f.namespace}::{f.name}", clash, f.location, warn=True))
        else:
            candidates.append(f)
    by_name: dict[tuple[str, str], list[NativeFunction]] = {}
    for f in candidates:
        by_name.setdefault((f.namespace, f.name.name), []).append(f)
    shims: list[AotiShim] = []
    for f in candidates:
        same = by_name[(f.namespace, f.name.name)]
        if len(same) > 1:
            others = ", ".join(str(g.name) for g in same if g is not f)
            reason = f"shares its shim name with {others} (Inductor names a shim without the overload)"
            skipped.append(SkippedShim(f"{f.namespace}::{f.name}", reason, f.location))
            continue
        found = _device_keys(f, groups, keys)
        if not found:
            reason = f"no kernel for a device of this build ({', '.join(devices) or 'none'})"
            skipped.append(SkippedShim(f"{f.namespace}::{f.name}", reason, f.location))
        shims.extend(AotiShim(f, DEVICES[k], k) for k in found)
    return AotiShimPlan(tuple(shims), tuple(skipped))


def kernel_entry(shim: AotiShim) -> tuple[str, str] | None:
    """(dispatch key, kernel) of the author's kernel ``shim`` runs: the one of its device, else the
    ``CompositeExplicitAutograd`` one serving every device; None for a structured op (its kernels are
    generated around the meta function and impls)."""
    entries = {d.key: d.kernel for d in shim.function.dispatch}
    for key in (shim.key, *sorted(_EVERY_DEVICE)):
        if key in entries:
            return key, entries[key]
    return None
