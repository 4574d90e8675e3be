"""An op's autocast policy: the ``autocast:`` key of a native_functions.yaml entry.

Under ``torch.autocast`` an op library's operator sees whatever dtypes arrive unless it says what
it wants.  The key names one of three policies, PyTorch's own kinds of autocast op:

* ``fp32``: run in float32 (the op is not accurate, or has no kernel, in a lower precision);
* ``promote``: run in the widest floating type among the inputs and the autocast dtype (an op
  whose kernel wants its inputs in one dtype: ``bfloat16`` and ``float32`` in give ``float32``);
* ``lower``: run in the autocast dtype (``torch.autocast(..., dtype=...)``: ``bfloat16`` on CPU
  by default, ``float16`` on CUDA), the op that gains from a lower precision.

Only floating tensors the op reads are cast (``Tensor``, ``Tensor?``, ``Tensor[]``, ``Tensor?[]``),
never a tensor it writes (an out= or in-place argument keeps its dtype), nor a ``float64`` one (as
PyTorch's autocast leaves them).  So an op reading no tensor has nothing a policy could change, and
naming one there is an error at the line.
"""

from __future__ import annotations

from ..base.errors import Location, VtgenError, misspelled
from .schema import Argument, FunctionSchema

__all__ = ["AUTOCAST_POLICIES", "castable_arguments", "parse_autocast"]

AUTOCAST_POLICIES = ("fp32", "promote", "lower")


def castable_arguments(func: FunctionSchema) -> tuple[tuple[int, Argument], ...]:
    """(schema position, argument) of every tensor argument the op reads and does not write."""
    return tuple((i, a) for i, a in enumerate(func.arguments.all) if a.type.is_tensor_like() and not a.is_write)


def parse_autocast(value: str | None, func: FunctionSchema, where: Location) -> str | None:
    """The policy ``value`` names (None: no key, no policy), checked against the schema."""
    if value is None:
        return None
    if value not in AUTOCAST_POLICIES:
        raise misspelled(f"unknown autocast policy '{value}' (one of {', '.join(AUTOCAST_POLICIES)})", value,
                         AUTOCAST_POLICIES, where)  # fmt: skip
    if not castable_arguments(func):
        raise VtgenError(
            f"autocast: '{func.name}' reads no tensor a policy could cast (a tensor the op writes keeps its "
            "dtype); drop the key",
            where,
        )
    return value
