"""The stable-ABI mode: which PyTorch releases a library targets, and what its kernels look like.

A library built with ``--stable-abi X.Y`` (``vtgen_generate(... STABLE_ABI X.Y)``, ``stable-abi =
"X.Y"``) talks to libtorch only through the LibTorch stable ABI (``torch/csrc/stable/``): its kernels
take ``torch::stable::Tensor`` and header-only value types, are boxed (``TORCH_BOX``) and registered
with ``STABLE_TORCH_LIBRARY``/``_IMPL``; the headers are compiled with ``-DTORCH_TARGET_VERSION`` =
the oldest release the one wheel supports, packed as ``(major << 56) | (minor << 48)``.

Decisions made here (spelled in ``emit/stable_registrations.py``):

* the target: ``X.Y`` with ``2.10 <= X.Y <= the torch the build compiles against`` (PyTorch itself
  would only fail at load time for a newer one);
* each schema type's stable C++ parameter type, or an error at the entry's yaml line naming the
  type and the spelling that works (``plan/stable_types.py``);
* the kernels the author defines (``NativeKernels.h``), the ``m.impl`` of each dispatch key (by the
  rule of the classic mode, ``select_kernels`` in the request's dialect, ``STABLE``), and the
  structured groups, whose meta function and impls take stable types (``StableStructured``).

There is no C++ autograd in this mode: derivatives.yaml is read and checked, and is the input of
the generated Python autograd (``torch.library.register_autograd``), never of C++ Nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..base.errors import VtgenError
from ..model.cpp_api import VOID, BaseC, Binding, ConstRefC, CppSignature, MutRefC
from ..model.native import NativeFunction
from .aoti_shims import AotiShim, AotiShimPlan, kernel_entry, plan_device_shims
from .dialect import STABLE_META_OUTPUTS, Dialect
from .registrations import KernelDecl, KernelImpl, registered, select_kernels
from .request import OLDEST_TARGET, BuildRequest, StableTarget
from .stable_types import TENSOR, stable_argument_type, stable_return_type, stable_signature
from .structured import StructuredGroup, plan_structured

__all__ = [
    "OLDEST_TARGET",
    "STABLE_META_OUTPUTS",
    "StablePlan",
    "StableShim",
    "StableStructured",
    "StableTarget",
    "plan_stable",
    "stable_argument_type",
    "stable_return_type",
    "stable_signature",
]

TAGS_SINCE = (2, 12)  # StableLibrary::def(schema, tags)
PYTHON_MODULE_SINCE = (2, 13)  # StableLibrary::set_python_module


# -- the plan -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StableStructured:
    """A structured group on stable types: one meta function, one impl per backend."""

    group: StructuredGroup
    inputs: tuple[Binding, ...]  # the non-out arguments, as the meta function and the impls take them

    @property
    def namespace(self) -> str:
        return self.group.out.namespace

    def meta_signature(self) -> CppSignature:
        first = Binding(MutRefC(BaseC(STABLE_META_OUTPUTS)), "outputs")
        return CppSignature(self.group.meta_name, VOID, (first, *self.inputs))

    def impl_signature(self, impl: str) -> CppSignature:
        outs = tuple(Binding(ConstRefC(TENSOR), a.name) for a in self.group.out.func.arguments.out)
        return CppSignature(impl, VOID, (*self.inputs, *outs))


@dataclass(frozen=True)
class StableShim:
    """One AOTInductor C shim of a stable library, defined in ``Register<key>.cpp`` beside the kernel it
    runs: the author's ``kernel`` (in the op's namespace) or, for a structured op (``kernel`` None), the
    variant generated there.  Its C signature is the classic mode's (AOTInductor's ABI is one)."""

    shim: AotiShim
    key: str
    kernel: str | None


@dataclass(frozen=True)
class StablePlan:
    target: StableTarget
    keys: tuple[str, ...]  # one registration unit each
    schemas: tuple[tuple[str, str, tuple[str, ...]], ...]  # (namespace, schema, tags) in yaml order
    declarations: tuple[KernelDecl, ...]
    impls: tuple[KernelImpl, ...]
    structured: tuple[StableStructured, ...]
    fake_module: str | None
    aoti_shims: AotiShimPlan  # which operators get an AOTInductor C shim, and why the others do not
    shim_calls: tuple[StableShim, ...]  # what each shim runs, and where it is defined
    dialect: Dialect  # what the registrations are written in (the request's)


def plan_stable(functions: Iterable[NativeFunction], request: BuildRequest, pytorch_tags: frozenset[str]) -> StablePlan:
    """Every decision of a stable-ABI library (``request.stable``: its target), its registrations in the
    request's dialect; a located error for what the target cannot carry."""
    target, keys, fake_module = request.stable, request.register_backends, request.fake_module
    if target is None:
        raise ValueError("plan_stable: the request is not a stable-ABI library's")
    fns = registered(functions)
    if not fns:
        raise VtgenError("--stable-abi: the yaml declares no operator outside aten (a stable library defines its own)")
    if fake_module is not None and not target.at_least(PYTHON_MODULE_SINCE):
        raise VtgenError(
            f"--fake-module needs stable-abi {StableTarget(*PYTHON_MODULE_SINCE)} or newer "
            f"(StableLibrary::set_python_module); at {target}, import the fake module from the package's "
            "__init__.py after loading the library, and drop --fake-module"
        )
    groups = plan_structured(fns)
    structured = tuple(_structured(g) for g in groups)  # what the ABI cannot carry in a group first
    chosen = select_kernels(fns, groups, keys, request.dialect)
    schemas = tuple((f.namespace, str(f.func), _tags(f, target, pytorch_tags)) for f in fns)
    shims = plan_device_shims(fns, chosen.keys, groups)
    return StablePlan(target, chosen.keys, schemas, chosen.declarations, chosen.impls, structured, fake_module,
                      shims, _shim_calls(shims, groups), request.dialect)  # fmt: skip


def _shim_calls(shims: AotiShimPlan, groups: tuple[StructuredGroup, ...]) -> tuple[StableShim, ...]:
    """Each shim's kernel: a structured op's variant generated at its device's key, else the author's."""
    structured = {id(f) for g in groups for f in g.members}
    calls = []
    for s in shims.shims:
        entry = None if id(s.function) in structured else kernel_entry(s)
        calls.append(StableShim(s, s.key, None) if entry is None else StableShim(s, *entry))
    return tuple(calls)


def _tags(fn: NativeFunction, target: StableTarget, pytorch_tags: frozenset[str]) -> tuple[str, ...]:
    if not fn.tags:
        return ()
    if not target.at_least(TAGS_SINCE):
        raise VtgenError(
            f"tags: {', '.join(sorted(fn.tags))}: a stable-ABI schema carries tags from stable-abi "
            f"{StableTarget(*TAGS_SINCE)} on (StableLibrary::def with tags); at {target}, remove 'tags:' "
            "or raise the target",
            fn.location,
        )
    unknown = sorted(fn.tags - pytorch_tags)
    if unknown:
        why = "not a PyTorch tag (the stable ABI registers only at::Tag values)"
        raise VtgenError(f"tags: {', '.join(unknown)}: {why}", fn.location)
    return tuple(sorted(fn.tags))


def _structured(group: StructuredGroup) -> StableStructured:
    out = group.out
    if group.iterator or group.precomputed:
        what = "structured_inherits: TensorIteratorBase" if group.iterator else "precomputed"
        raise VtgenError(f"{what}: the stable ABI has no TensorIterator or precomputed fields; drop it "
                         "(the meta function decides sizes, dtype and device)", out.location)  # fmt: skip
    what = f"{out.namespace}::{out.name}"
    inputs = tuple(
        Binding(stable_argument_type(a.type, False, out.location, f"{what}: argument '{a.name}'"), a.name)
        for a in out.func.arguments.non_out
    )
    for fn in group.members:
        stable_signature(fn, "check")  # every variant's types must cross the ABI too
    return StableStructured(group, inputs)
