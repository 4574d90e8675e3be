"""The two dialects an op library's backend registrations are written in, as one record each.

A build against ATen (``CLASSIC``) and a LibTorch stable-ABI library (``STABLE``, ``--stable-abi``)
register the same things -- the author's kernels per dispatch key, the kernels generated around a
structured group's meta function and impls -- and differ only in what this record holds: the C++
types a kernel takes (its signature's shape), the registration macro, how a kernel is boxed, and
the meta function's output record.  The build request chooses one (``BuildRequest.dialect``); the
one planning function (``plan/registrations.py``) and the one structured-kernel emitter
(``emit/structured.py``) read it instead of keeping a copy a dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..model.cpp_api import TENSOR, CppSignature, dispatcher_signature, native_signature
from ..model.native import NativeFunction
from .stable_types import TENSOR as STABLE_TENSOR
from .stable_types import stable_signature
from .structured import META_OUTPUTS

__all__ = ["CLASSIC", "STABLE", "STABLE_META_OUTPUTS", "Dialect", "MetaOutputsSpelling"]

STABLE_META_OUTPUTS = "vtgen::stable::MetaOutputs"  # what a stable meta function fills in

Signature = Callable[[NativeFunction, str], CppSignature]


@dataclass(frozen=True)
class MetaOutputsSpelling:
    """How a generated structured kernel makes its outputs from what the meta function filled in
    (``{i}``: the output's index, ``{name}``: its variable)."""

    record: str  # the C++ type the meta function fills in
    allocate: str  # a functional variant's new output
    check_inplace: str  # an in-place variant's mutated input
    resize_out: str  # an out= variant's out argument


@dataclass(frozen=True)
class Dialect:
    name: str
    kernel_signature: Signature  # an author's kernel named by ``dispatch:``
    variant_signature: Signature  # a structured group's generated variant
    impl_macro: str  # the per-key registration block
    boxing: str  # what wraps a kernel in ``m.impl``
    generated_pointer: str  # how a generated kernel is named inside ``boxing`` ("&" or nothing)
    meta_outputs: MetaOutputsSpelling
    written_tuple: str  # the return of a mutating variant with several outputs (``{outs}``)


CLASSIC = Dialect(
    name="classic",
    kernel_signature=native_signature,
    variant_signature=dispatcher_signature,
    impl_macro="TORCH_LIBRARY_IMPL",
    boxing="TORCH_FN",
    generated_pointer="",
    meta_outputs=MetaOutputsSpelling(
        META_OUTPUTS,
        f"{TENSOR.cpp()} {{name}} = vtgen_allocate(outputs_, {{i}});",
        "vtgen_check_inplace(outputs_, {i}, {name});",
        "vtgen_resize_out(outputs_, {i}, {name});",
    ),
    written_tuple="std::forward_as_tuple({outs})",
)

STABLE = Dialect(
    name="stable",
    kernel_signature=stable_signature,
    variant_signature=stable_signature,
    impl_macro="STABLE_TORCH_LIBRARY_IMPL",
    boxing="TORCH_BOX",
    generated_pointer="&",
    meta_outputs=MetaOutputsSpelling(
        STABLE_META_OUTPUTS,
        f"{STABLE_TENSOR.cpp()} {{name}} = outputs_.allocate({{i}});",
        "outputs_.check_inplace({i}, {name});",
        "outputs_.resize_out({i}, {name});",
    ),
    written_tuple="{{{outs}}}",
)
