"""Which schemas an op library registers (``RegisterSchema.cpp``), with which tags.

Every native function of a namespace other than ``aten`` -- declared in the yaml
or derived from it (``out=`` and functional variants), as PyTorch registers its
own -- is defined once in a ``TORCH_LIBRARY(<ns>, m)`` block.  ``aten``'s
schemas are never registered here: libtorch registers them itself, and a
second ``TORCH_LIBRARY(aten, ...)`` makes loading the library fail.  A yaml of
``aten`` ops (PyTorch's own, or an override of aten kernels) therefore gets a
``RegisterSchema.cpp`` with no registration in it.

Tags are passed to ``m.def`` as ``at::Tag`` values, which exist only for the
tags PyTorch declares (``policy.pytorch_tags``); an op library's own tags are
kept out of the registration (and listed in a comment of the file).  An out= operator that gets a
generated Functionalize kernel (``plan/functionalize.py``) is registered without the ``out`` tag.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model.native import NativeFunction
from .functionalize import FunctionalizedOut
from .policy import Policy

__all__ = ["SchemaDef", "plan_schemas"]


@dataclass(frozen=True)
class SchemaDef:
    namespace: str
    schema: str  # as registered: the schema text without the namespace
    tags: tuple[str, ...]  # at::Tag names, sorted
    unregistered_tags: tuple[str, ...] = ()  # tags of the yaml that PyTorch's at::Tag lacks


def plan_schemas(
    functions: Iterable[NativeFunction], policy: Policy, functionalized: Iterable[FunctionalizedOut] = ()
) -> tuple[SchemaDef, ...]:
    """The schema definitions of every non-``aten`` function, in yaml order; the ``functionalized``
    out= operators without the ``out`` tag."""
    untagged = {(f.namespace, f.out) for f in functionalized}

    def tags(f: NativeFunction) -> frozenset[str]:
        return f.tags - {"out"} if (f.namespace, str(f.name)) in untagged else f.tags

    return tuple(
        SchemaDef(
            f.namespace,
            str(f.func),
            tuple(sorted(t for t in tags(f) if t in policy.pytorch_tags)),
            tuple(sorted(t for t in tags(f) if t not in policy.pytorch_tags)),
        )
        for f in functions
        if f.namespace != "aten"
    )
