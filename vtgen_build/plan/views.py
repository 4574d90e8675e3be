"""Which argument a view op's output aliases."""

from __future__ import annotations

from ..model.native import NativeFunction
from .policy import Policy

__all__ = ["view_base"]


def view_base(f: NativeFunction, policy: Policy) -> str | None:
    """The argument a view op's output aliases; None when ``f`` is not a view op."""
    if f.namespace == "aten":
        return policy.view_of(f.name.base)
    returns = f.func.returns
    if not returns or returns[0].annotation is None or returns[0].annotation.is_write:
        return None
    aliases = set(returns[0].annotation.alias_set)
    for a in f.func.arguments.all:
        if a.annotation is not None and not a.annotation.is_write and aliases & set(a.annotation.alias_set):
            return a.name
    return None
