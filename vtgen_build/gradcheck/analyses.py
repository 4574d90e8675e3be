"""What the installed torch answered (its schemas, each sample entry's reach, its libraries' symbols),
kept as entries of the artifact cache (``compile.artifacts``) under its one key rule.

The key (``torch_key``: ``artifact_key`` over the question, the torch's interpreter and version, the
target release) names the question; the entry lists the files the answer came from, the torch
libraries and the child package that asked, and every lookup verifies them by content.  A library
or a child script rewritten in place (same size, same mtime) is therefore a miss, never a stale
answer; a damaged record is a miss too, and the answer is computed again.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base import store
from ..compile import artifact_key
from ..torchlib import TorchInstall
from ..torchlib.build import Session

__all__ = ["child_files", "recall", "remember", "torch_key"]


def torch_key(kind: str, torch: TorchInstall, release: str, question: str) -> str:
    """The artifact key of a question asked of ``torch`` (no compiler, no flags: none is run)."""
    return artifact_key(kind, "", (), release, question, [torch.python, torch.version])


def child_files() -> tuple[Path, ...]:
    """The child package's files: an answer they computed is verified by their content."""
    return tuple(child_package.HERE / name for name in child_package.FILES)


def recall(session: Session, key: str, kind: str) -> store.JSON:
    """The recorded answer of ``key`` (None: none, or what it was computed from changed, or damaged)."""
    hit = session.cache.lookup(key, session.files)
    return store.read(hit.path, kind) if hit is not None and hit.path is not None else None


def remember(session: Session, key: str, kind: str, data: store.JSON, read: Sequence[Path]) -> None:
    """Record ``data`` as the answer of ``key``, computed from the files ``read``."""
    path = session.cache.place(key, f"{kind}.json")
    store.write(path, kind, data)
    session.cache.record(key, [str(p) for p in read], session.files, path)
