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
  type and the spelling that works (``Scalar`` -> ``float``/``int``, ``SymInt`` -> ``int``, ...);
* the kernels the author defines (``NativeKernels.h``), the ``m.impl`` of each dispatch key, and
  the structured groups, whose meta function and impls take stable types (``StableStructured``).

There is no C++ autograd in this mode: derivatives.yaml is read and checked, and is the input of
the generated Python autograd (``torch.library.register_autograd``), never of C++ Nodes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..base.errors import Location, VtgenError
from ..model.cpp_api import VOID, BaseC, Binding, ConstRefC, CppSignature, CType, MutRefC, OptionalC, TupleC
from ..model.native import NativeFunction
from ..model.schema import BaseType, ListType, OptionalType, Return, Type
from .aoti_shims import AotiShim, AotiShimPlan, kernel_entry, plan_device_shims
from .registrations import ALL_KEYS, KernelDecl, kernel_declarations
from .request import OLDEST_TARGET, StableTarget
from .structured import StructuredGroup, plan_structured

__all__ = [
    "OLDEST_TARGET",
    "STABLE_META_OUTPUTS",
    "StableImpl",
    "StablePlan",
    "StableShim",
    "StableStructured",
    "StableTarget",
    "plan_stable",
]

TAGS_SINCE = (2, 12)  # StableLibrary::def(schema, tags)
PYTHON_MODULE_SINCE = (2, 13)  # StableLibrary::set_python_module
STABLE_META_OUTPUTS = "vtgen::stable::MetaOutputs"  # what a stable meta function fills in

TENSOR = BaseC("torch::stable::Tensor")
INT_LIST = BaseC("torch::headeronly::IntHeaderOnlyArrayRef")
FLOAT_LIST = BaseC("torch::headeronly::HeaderOnlyArrayRef<double>")

# Schema base types a stable kernel takes by value.
_BY_VALUE = {
    "int": "int64_t",
    "float": "double",
    "bool": "bool",
    "str": "std::string_view",
    "ScalarType": "torch::headeronly::ScalarType",
    "Layout": "torch::headeronly::Layout",
    "MemoryFormat": "torch::headeronly::MemoryFormat",
    "Device": "torch::stable::Device",
}

# Schema types the stable ABI cannot carry, and the spelling that works.
_UNSUPPORTED = {
    "Scalar": "a StableIValue carries no Scalar: write `float` (or `int`) and convert in the kernel",
    "SymInt": "a stable kernel gets no symbolic ints: write `int` (torch.compile then specializes on it)",
    "SymBool": "a stable kernel gets no symbolic bools: write `bool`",
    "Generator": "vtgen_build's stable mode passes no Generator (torch::stable::Generator needs 2.13): "
    "take a seed as `int`",
    "Dimname": "named dimensions do not cross the stable ABI: write `int` dims",
    "DeviceIndex": "write the index as `int`",
    "Storage": "storages do not cross the stable ABI: pass a `Tensor`",
    "Stream": "streams do not cross the stable ABI (torch/csrc/stable/accelerator.h gives the current one)",
    "QScheme": "quantized types do not cross the stable ABI",
    "ConstQuantizerPtr": "quantized types do not cross the stable ABI",
    "DimVector": "write `int[]`",
    "GraphModule": "graph modules do not cross the stable ABI",
}


# -- kernel types -------------------------------------------------------------------------------
def _unsupported(ty: Type, where: Location, what: str) -> VtgenError:
    base = ty.base().name
    why = _UNSUPPORTED.get(base, "it has no stable-ABI C++ type")
    return VtgenError(f"{what}: '{ty}' cannot be a stable-ABI kernel argument ({why})", where)


def stable_argument_type(ty: Type, mutable: bool, where: Location, what: str) -> CType:
    """The parameter type of a stable kernel for schema type ``ty``, or an error at ``where``."""
    if isinstance(ty, BaseType):
        if ty.name == "Tensor":
            return MutRefC(TENSOR) if mutable else ConstRefC(TENSOR)
        if ty.name in _BY_VALUE:
            return BaseC(_BY_VALUE[ty.name])
    elif isinstance(ty, OptionalType):
        if isinstance(ty.elem, ListType) or (isinstance(ty.elem, BaseType) and ty.elem.name in ("Tensor", *_BY_VALUE)):
            elem = stable_argument_type(ty.elem, False, where, what)
            inner = elem.elem if isinstance(elem, ConstRefC) else elem
            return ConstRefC(OptionalC(inner)) if isinstance(elem, ConstRefC) else OptionalC(inner)
    elif isinstance(ty, ListType) and ty.size is None:
        spelled = str(ty.elem)
        if spelled == "int":
            return INT_LIST
        if spelled == "float":
            return FLOAT_LIST
        if spelled in ("Tensor", "Tensor?"):
            inner = OptionalC(TENSOR) if spelled == "Tensor?" else TENSOR
            return ConstRefC(BaseC(f"std::vector<{inner.cpp()}>"))
    raise _unsupported(ty, where, what)


def stable_return_type(returns: tuple[Return, ...], where: Location, what: str) -> CType:
    """``void``, one value or a ``std::tuple``; returns are owned values (a mutated tensor too)."""

    def one(r: Return) -> CType:
        if isinstance(r.type, BaseType) and r.type.name == "Tensor":
            return TENSOR
        if isinstance(r.type, BaseType) and r.type.name in ("int", "float", "bool"):
            return BaseC(_BY_VALUE[r.type.name])
        if isinstance(r.type, ListType) and str(r.type.elem) == "Tensor" and r.type.size is None:
            return BaseC("std::vector<torch::stable::Tensor>")
        raise _unsupported(r.type, where, f"{what} returns")

    if not returns:
        return VOID
    if len(returns) == 1:
        return one(returns[0])
    return TupleC(tuple(one(r) for r in returns))


def _no_written_return(fn: NativeFunction, what: str) -> None:
    """A mutating op returns nothing here: ``-> Tensor(a!)`` (PyTorch's out= and in-place convention) passes
    the eager checks but fails opcheck's test_aot_dispatch_dynamic, torch.compile functionalizing only a
    mutating custom op that returns nothing (the classic mode's Functionalize kernel has no stable form)."""
    written = [str(r) for r in fn.func.returns if r.annotation is not None and r.annotation.is_write]
    if written:
        raise VtgenError(
            f"{what}: returns '{', '.join(written)}': a stable-ABI op cannot return a tensor it writes "
            "(torch.compile and opcheck's test_aot_dispatch_dynamic functionalize a mutating custom op only when "
            "it returns nothing); write '-> ()': callers still get the result in the argument",
            fn.location,
        )


def stable_signature(fn: NativeFunction, name: str) -> CppSignature:
    """A plain op's kernel: its schema's arguments in order, its returns."""
    what = f"{fn.namespace}::{fn.name}"
    _no_written_return(fn, what)
    params = tuple(
        Binding(stable_argument_type(a.type, a.is_write, fn.location, f"{what}: argument '{a.name}'"), a.name)
        for a in fn.func.arguments.all
    )
    return CppSignature(name, stable_return_type(fn.func.returns, fn.location, what), params)


# -- the plan -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class StableImpl:
    """One ``m.impl`` of a plain op: the author's kernel, boxed."""

    namespace: str
    key: str
    op: str
    kernel: CppSignature


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

    def variant_signature(self, fn: NativeFunction, name: str) -> CppSignature:
        """The generated kernel of one variant (functional, in-place or out=)."""
        return stable_signature(fn, name)


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
    impls: tuple[StableImpl, ...]
    structured: tuple[StableStructured, ...]
    fake_module: str | None
    aoti_shims: AotiShimPlan  # which operators get an AOTInductor C shim, and why the others do not
    shim_calls: tuple[StableShim, ...]  # what each shim runs, and where it is defined


def _registered(fn: NativeFunction) -> bool:
    return fn.namespace != "aten" and not fn.generated and not fn.manual_kernel_registration


def plan_stable(
    functions: Iterable[NativeFunction],
    keys: tuple[str, ...],
    target: StableTarget,
    fake_module: str | None,
    pytorch_tags: frozenset[str],
) -> StablePlan:
    """Every decision of a stable-ABI library; a located error for what the target cannot carry."""
    fns = [f for f in functions if _registered(f)]
    if not fns:
        raise VtgenError("--stable-abi: the yaml declares no operator outside aten (a stable library defines its own)")
    if fake_module is not None and not target.at_least(PYTHON_MODULE_SINCE):
        raise VtgenError(
            f"--fake-module needs stable-abi {StableTarget(*PYTHON_MODULE_SINCE)} or newer "
            f"(StableLibrary::set_python_module); at {target}, import the fake module from the package's "
            "__init__.py after loading the library, and drop --fake-module"
        )
    groups = plan_structured(fns)
    structured = tuple(_structured(g) for g in groups)
    in_groups = {(f.namespace, str(f.name)) for g in groups for f in g.members}
    plain = [f for f in fns if (f.namespace, str(f.name)) not in in_groups]
    used = {d.key for f in plain for d in f.dispatch} | {d.key for g in groups for d in g.impls}
    used |= {"Meta"} if groups else set()
    chosen = tuple(sorted(used)) if keys == (ALL_KEYS,) else keys
    impls = tuple(
        StableImpl(f.namespace, d.key, str(f.name), stable_signature(f, d.kernel))
        for f in plain
        for d in f.dispatch
        if d.key in chosen
    )
    schemas = tuple((f.namespace, str(f.func), _tags(f, target, pytorch_tags)) for f in fns)
    declarations = kernel_declarations(plain, chosen, stable_signature)
    shims = plan_device_shims(fns, chosen, groups)
    return StablePlan(target, chosen, schemas, declarations, impls, structured, fake_module, shims,
                      _shim_calls(shims, groups))  # fmt: skip


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
