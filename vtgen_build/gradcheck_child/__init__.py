"""The child side of ``check --gradcheck``: what runs in the Python whose torch is checked.

``child`` (OpInfo and captured checks, ``--reach``, ``--reference``, ``--schemas``), ``schema_child``
(samples made from schemas), ``child_loop`` (the entry loop, counters, time limits), ``batching``
(the vmap part), ``capture`` (arguments captured from calls), ``sample_sources`` (OpInfo,
ModuleInfo and plugged-in sources).  That Python may hold no vtgen_build (or another one), so
the package is started by ``launch.py``, run by path: it loads this directory as a package of its
own name, and the modules import each other normally, by relative imports.  The parent side
(``gradcheck``) knows only the command line (``command``) and the files (``FILES``, for its
cache keys); data crosses as JSON files.

May import: nothing of vtgen_build (only the standard library, and torch inside functions).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["FILES", "HERE", "LAUNCH", "command"]

HERE = Path(__file__).resolve().parent
LAUNCH = HERE / "launch.py"
FILES = tuple(sorted(p.name for p in HERE.glob("*.py")))  # every module: answers depend on all of them


def command(module: str, *args: str) -> list[str]:
    """The command line, after the interpreter, that runs this package's ``module`` (``child``,
    ``schema_child``, ``python_tier``) with ``args``: what a new Python, or a warm worker's fork, is given.
    The one place the parent spells a child's command line."""
    return [str(LAUNCH), module, *args]
