"""What the parent asks the OpInfo child (``child.py``), as a typed record with its JSON form.

Both sides import this module (the child package is standard library only): the parent
(``gradcheck.run``) builds a ``CheckRequest`` and writes ``to_json()``; the child reads
``CheckRequest.from_json`` once, where it starts, and hands the record on.  A request that is not
of this form is a ``ProtocolError`` naming the key, never a ``KeyError`` deep in a check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["CheckRequest", "ProtocolError"]


class ProtocolError(ValueError):
    """A request file the child cannot read as its record."""


def _strings(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"request: '{key}' is not a list of strings")
    return tuple(value)


def _value(data: dict[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProtocolError(f"request: '{key}' is not a {kind.__name__}")
    return value


@dataclass(frozen=True)
class CheckRequest:
    """One start of the OpInfo child: which entries run, on which of our ops, and how."""

    library: str  # the shared library whose kernels override the ops' Autograd kernels
    ops: tuple[str, ...] | None  # the ops whose OpInfo entries run (None: every entry)
    out_ops: tuple[str, ...]  # out= overloads: no OpInfo calls them directly
    autograd_ops: tuple[str, ...]  # the ops the library registers an Autograd kernel for
    variants: tuple[tuple[str, str, str], ...]  # (op, family, OpInfo variant: function or inplace)
    dtypes: tuple[str, ...]  # torch dtype names, e.g. float64
    max_samples: int  # per OpInfo; 0: every sample
    timeout: int  # seconds per entry
    skip: tuple[str, ...]  # entries already done (a restart goes on past them)
    targets: tuple[dict[str, Any], ...]  # ops checked on captured arguments (``gradcheck.reach.Target``'s form)
    reference_dir: str | None  # where a failed check's call is kept for the rerun with torch's kernels (None: not)
    batched: bool  # the vmap part of each check, where PyTorch's tests run it
    first_failure: bool  # stop an entry at its first failure
    whole: tuple[str, ...]  # entries to run whole all the same

    @property
    def variant_of(self) -> dict[str, list[str]]:
        """Op -> [family, variant], the form ``child._entry_ops`` compares."""
        return {op: [family, variant] for op, family, variant in self.variants}

    def to_json(self) -> dict[str, Any]:
        return {
            "library": self.library,
            "ops": None if self.ops is None else list(self.ops),
            "out_ops": list(self.out_ops),
            "autograd_ops": list(self.autograd_ops),
            "variants": {op: [family, variant] for op, family, variant in self.variants},
            "dtypes": list(self.dtypes),
            "max_samples": self.max_samples,
            "timeout": self.timeout,
            "skip": list(self.skip),
            "targets": list(self.targets),
            "reference_dir": self.reference_dir,
            "batched": self.batched,
            "first_failure": self.first_failure,
            "whole": list(self.whole),
        }

    @classmethod
    def from_json(cls, data: Any) -> CheckRequest:
        if not isinstance(data, dict):
            raise ProtocolError("request: not a JSON object")
        variants = data.get("variants")
        if not isinstance(variants, dict) or not all(
            isinstance(v, list) and len(v) == 2 and all(isinstance(s, str) for s in v) for v in variants.values()
        ):
            raise ProtocolError("request: 'variants' is not an object of [family, variant] pairs")
        targets = data.get("targets")
        if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
            raise ProtocolError("request: 'targets' is not a list of objects")
        return cls(
            library=_value(data, "library", str),
            ops=None if data.get("ops") is None else _strings(data, "ops"),
            out_ops=_strings(data, "out_ops"),
            autograd_ops=_strings(data, "autograd_ops"),
            variants=tuple((op, v[0], v[1]) for op, v in variants.items()),
            dtypes=_strings(data, "dtypes"),
            max_samples=_value(data, "max_samples", int),
            timeout=_value(data, "timeout", int),
            skip=_strings(data, "skip"),
            targets=tuple(targets),
            reference_dir=None if data.get("reference_dir") is None else _value(data, "reference_dir", str),
            batched=_value(data, "batched", bool),
            first_failure=_value(data, "first_failure", bool),
            whole=_strings(data, "whole"),
        )
