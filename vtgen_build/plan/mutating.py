"""Mutating ops that return nothing: ``op_(Tensor(a!) self, ...) -> ()``.

PyTorch functionalizes a custom mutating op under ``torch.compile`` only when
its outputs carry no alias annotation, so an op library writes its in-place
variants returning nothing.  Such an op is differentiable the way an in-place
op is: each tensor it writes (``Tensor(a!)``, ``Tensor(a!)[]``) is an output
whose history is rebased on the op's Node, and whose version counter
ADInplaceOrView bumps.  The rules for naming its formulas are in
``docs/design/autograd-rules.md``.

``aten``'s own ``-> ()`` ops keep PyTorch's treatment (the ``_foreach_`` ops
have their own; the others have no derivative), so the rule applies to op
libraries' namespaces.
"""

from __future__ import annotations

from ..model.native import NativeFunction
from ..model.schema import Argument, SchemaKind

__all__ = ["mutated_arguments", "overwritten_names"]


def mutated_arguments(f: NativeFunction) -> tuple[Argument, ...]:
    """The tensors a ``-> ()`` op of an op library writes, in schema order; () for any other op."""
    if f.namespace == "aten" or f.func.returns or f.kind not in (SchemaKind.inplace, SchemaKind.mutable):
        return ()
    return tuple(a for a in f.func.arguments.non_out if a.is_write and a.type.is_tensor_like())


def overwritten_names(f: NativeFunction) -> tuple[str, ...]:
    """Arguments whose old value a formula reading them must see (cloned before the op runs)."""
    mutated = mutated_arguments(f)
    if mutated:
        return tuple(a.name for a in mutated)
    return ("self",) if f.kind is SchemaKind.inplace else ()
