"""A warm gradcheck worker: torch and PyTorch's test suite imported once, a fresh forked child per check.

``vtgen-build worker start --out DIR`` (or ``check --gradcheck --watch``) starts one for ``DIR``;
every ``check --gradcheck`` of that ``--out`` then runs its gradcheck children through it
(``gradcheck/supervise.py``) instead of starting a Python that imports torch again
(docs/design/worker.md).

May import: ``base``.
"""

from __future__ import annotations

from .client import PRELOAD, WORKER_DIR, Worker, WorkerProcess, find, package_digest, run_python, start, stop

__all__ = ["PRELOAD", "WORKER_DIR", "Worker", "WorkerProcess", "find", "package_digest", "run_python", "start", "stop"]
