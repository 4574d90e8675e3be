"""A warm gradcheck worker: torch and PyTorch's test suite imported once, a fresh forked child per check.

``vtgen-build worker start --out DIR`` (or ``check --gradcheck --watch``) starts one for ``DIR``;
every ``check --gradcheck`` of that ``--out`` then runs its gradcheck children through it
(``gradcheck/supervise.py``) instead of starting a Python that imports torch again
(docs/design/worker.md).  ``client``: running a child through it; ``manage``: finding, starting and
stopping it; ``server``: its own process.

May import: ``base``.
"""

from __future__ import annotations

from .client import Worker, WorkerGone, WorkerProcess, run_python, without
from .manage import IDLE, PRELOAD, WORKER_DIR, Look, Stopped, Versions, find, look, package_digest, start, stop

__all__ = [
    "IDLE",
    "PRELOAD",
    "WORKER_DIR",
    "Look",
    "Stopped",
    "Versions",
    "Worker",
    "WorkerGone",
    "WorkerProcess",
    "find",
    "look",
    "package_digest",
    "run_python",
    "start",
    "stop",
    "without",
]
