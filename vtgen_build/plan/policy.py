"""Operator names that get special treatment, read from a policy file.

PyTorch hand-maintains lists of operators its autograd codegen treats
specially (manually registered kernels, ops that need no derivative, the
complex-autograd allowlist, view functions, ...).  They are facts about
PyTorch, kept as data in ``data/pytorch_policy.yaml``; an op library of your
own simply matches none of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import yaml

__all__ = ["Policy", "load_policy"]


@dataclass(frozen=True)
class Policy:
    manual_backend: frozenset[str]
    manual_autograd_and_tracer: frozenset[str]
    dont_require_derivative: frozenset[str]
    gradient_implemented_for_complex: frozenset[str]
    reset_grad_accumulator: frozenset[str]
    dont_enforce_same_tensor_impl_or_storage: frozenset[str]
    dont_enforce_tensor_impl_use_count: frozenset[str]
    dont_enforce_storage_impl_use_count: frozenset[str]
    returns_views_of_input: frozenset[str]
    foreach_with_inplace_ref: frozenset[str]
    foreach_with_tensor_overload: frozenset[str]
    foreach_skip_argument_len_check: frozenset[str]
    view_functions_with_metadata_change: frozenset[str]  # replayed by their view function, never as_strided
    pytorch_tags: frozenset[str]  # the at::Tag enum of the torch the output is built for
    view_functions: tuple[tuple[str, str], ...]

    @property
    def manual_autograd(self) -> frozenset[str]:
        """Ops whose Autograd kernel is written by hand (never generated nor registered)."""
        return self.manual_backend | self.manual_autograd_and_tracer

    def view_of(self, base_name: str) -> str | None:
        """The argument a view op's output aliases, if ``base_name`` is a view op."""
        for name, arg in self.view_functions:
            if name == base_name:
                return arg
        return "self" if base_name in self.returns_views_of_input else None

    def debug_alias(self, base_name: str) -> str | None:
        """The input a view's output shares storage with, as debug builds check it."""
        if base_name == "_unsafe_view":
            return "self"
        return next((arg for name, arg in self.view_functions if name == base_name), None)


_POLICY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "pytorch_policy.yaml")


def load_policy(text: str | None = None) -> Policy:
    """The built-in PyTorch policy, or one read from ``text``."""
    if text is None:
        with open(_POLICY, encoding="utf-8") as handle:
            text = handle.read()
    raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    views = raw.pop("view_functions", {}) or {}
    lists = {key: frozenset(raw.get(key) or ()) for key in Policy.__dataclass_fields__ if key != "view_functions"}
    return Policy(**lists, view_functions=tuple(sorted(views.items())))
