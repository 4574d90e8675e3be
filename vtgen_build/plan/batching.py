"""Which operators get a generated batching rule (a ``FuncTorchBatched`` kernel), in both modes.

An entry of native_functions.yaml that says ``vmap: elementwise``, or carries the ``pointwise`` tag,
is element-wise over its tensor arguments: its batching rule is mechanical (move each argument's
batch dimension to the front, line the samples' ranks up, call the operator once below the vmap
level, mark the results batched at dimension 0).  Only functional operators with no list argument
and tensor returns qualify; a ``pointwise``-tagged operator that does not keeps PyTorch's vmap
fallback (``inspect`` says so), while ``vmap: elementwise`` on one is an error at its line.  Every
other operator keeps the fallback (a loop over the batch).

The stable mode spells the rules in its Python autograd module (``emit/python_autograd.py``): the
stable ABI carries no functorch API.  The classic mode spells them in its typed Python API module
(``emit/python_api.py``: ``BATCHING_RULES``, ``install_batching_rules()``, which the library's package
calls after loading it): a C++ rule needs the current vmap level, whose header no torch wheel can
compile.  Both read this one decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..base.errors import Location, VtgenError
from ..model.native import NativeFunction
from ..model.schema import SchemaKind

__all__ = ["BatchingRule", "elementwise_ops", "plan_batching"]


def _batchable(f: NativeFunction) -> bool:
    """A functional operator whose arguments hold no list and whose returns are all tensors."""
    args, returns = f.func.arguments.non_out, f.func.returns
    return bool(returns) and not any(a.type.is_list() for a in args) and all(r.type.is_tensor_like() for r in returns)


def elementwise_ops(functions: Iterable[NativeFunction]) -> tuple[NativeFunction, ...]:
    """The functional operators declared element-wise (``vmap: elementwise`` or the ``pointwise`` tag) a
    rule can batch, first entry of each name in yaml order."""
    found: dict[str, NativeFunction] = {}
    for f in functions:
        if (f.vmap != "elementwise" and "pointwise" not in f.tags) or f.kind is not SchemaKind.functional:
            continue
        if not _batchable(f):
            if f.vmap != "elementwise":  # only tagged pointwise: it keeps PyTorch's fallback (inspect says so)
                continue
            why = "needs Tensor (or non-tensor) arguments, no lists, and Tensor returns"
            raise VtgenError(f"'{f.name}': vmap: elementwise {why}", f.location)
        found.setdefault(str(f.name), f)
    return tuple(found.values())


@dataclass(frozen=True)
class BatchingRule:
    """One operator's generated element-wise batching rule (classic mode: registered by its typed API module)."""

    namespace: str
    op: str  # as registered: ``softsign`` or ``name.overload``
    location: Location  # the yaml entry that asks for it


def plan_batching(functions: Iterable[NativeFunction]) -> tuple[BatchingRule, ...]:
    """The rules of an op library's own operators (``aten``'s have PyTorch's), in yaml order."""
    ours = [f for f in functions if f.namespace != "aten"]
    return tuple(BatchingRule(f.namespace, str(f.name), f.location) for f in elementwise_ops(ours))
