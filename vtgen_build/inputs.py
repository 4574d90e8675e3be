"""The input files of a run (kept apart from the model so that the no-op path imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Inputs"]


@dataclass(frozen=True)
class Inputs:
    """The three input files (tags.yaml is optional)."""

    native_functions: str
    derivatives: str
    tags: str | None = None
    namespace: str = "aten"  # operator namespace of entries written without ``ns::``
