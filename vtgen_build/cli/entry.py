"""The console entry point (``vtgen-build``, ``python -m vtgen_build``): the no-op fast path, then the CLI.

An up-to-date ``generate`` is answered from the engine's no-op record (``engine/noop.py``)
before anything heavy is imported: this module imports only ``os``-level code, that record's
reader and the state-file format (``base/store.py``).  Every other command, and a
``generate`` whose record does not match, goes to the full command line (``cli/commands.py``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from ..engine.noop import up_to_date

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """``vtgen-build``: the fast path for an up-to-date ``generate``, else the full CLI."""
    args = list(sys.argv[1:] if argv is None else argv)
    start = time.perf_counter()
    machine = any(a == "--format" or a.startswith("--format=") for a in args)  # its answer is a document
    if args[:1] == ["generate"] and not machine and up_to_date(args):
        print(f"vtgen-build: up to date (0 files written) in {time.perf_counter() - start:.3f}s")
        return 0
    from .commands import main as cli_main

    return cli_main(args)
