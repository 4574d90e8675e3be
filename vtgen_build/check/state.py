"""The one ``--changed`` state record: each op's code digest when it last passed, under a settings key.

``check --changed`` and ``check --gradcheck --changed`` keep one each (``.vtgen-check/state``,
``.vtgen-gradcheck/state.json``), in this one format: a data-only, hash-checked ``store`` file
``{"settings": <digest of everything but the ops' own code>, "ops": {op: digest}}``.  A record of
other settings, or a damaged one, reads as empty: every op counts as changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..base import store

__all__ = ["changed_ops", "read_state", "write_state"]


def read_state(path: Path, kind: str, settings: str) -> dict[str, str]:
    """Op → its digest at its last pass, as recorded under ``settings`` (else empty)."""
    data = store.read(path, kind)
    ops = data.get("ops") if isinstance(data, dict) and data.get("settings") == settings else None
    if not isinstance(ops, dict):
        return {}
    return {str(k): v for k, v in ops.items() if isinstance(v, str)}


def write_state(path: Path, kind: str, settings: str, ops: Mapping[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    store.write(path, kind, {"settings": settings, "ops": dict(sorted(ops.items()))})


def changed_ops(state: Mapping[str, str], digests: Mapping[str, str]) -> list[str]:
    """The ops whose code is not what last passed (new ones too)."""
    return [op for op, d in digests.items() if state.get(op) != d]
