"""The input files of a run (kept apart from the model so that the no-op path imports nothing heavy)."""

from __future__ import annotations

from dataclasses import dataclass

from ..base import store
from ..base.errors import VtgenError

__all__ = ["Inputs", "file_digest"]


def file_digest(path: str) -> str:
    """The content digest of a file a run reads or wrote (``store.file_sha256``); unreadable: an error."""
    digest = store.file_sha256(path)
    if digest is None:
        raise VtgenError(f"cannot read {path}")
    return digest


@dataclass(frozen=True)
class Inputs:
    """The three input files (tags.yaml is optional)."""

    native_functions: str
    derivatives: str
    tags: str | None = None
    namespace: str = "aten"  # operator namespace of entries written without ``ns::``
