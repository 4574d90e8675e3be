"""Running a gradcheck child to the end, past the entries that crash it.

A child (``child.py``, ``schema_child.py``) writes ``{"start": name}`` before each entry and a
row naming the entry after it (``child_loop.py``).  When it dies, the last entry started and not
finished is the one that killed it: it gets an error row of its own, and the child is started
again with a request that skips every entry already written.  A child that dies before it
started any entry is an error, with the end of what it printed.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError
from ..base.write import write_atomic
from .records import read_rows

__all__ = ["Child", "run_to_end"]


@dataclass(frozen=True)
class Child:
    python: str  # the interpreter with torch
    script: Path  # the child script, run as ``python SCRIPT [MODE...] REQUEST RESULTS``
    request: Path  # where each start's request is written
    results: Path  # the JSON lines the child appends to
    stderr: Path  # what the child printed (its last start's)
    what: str  # how errors name it: "the gradcheck process"
    first: str  # what it runs first, for "failed before any ...": "OpInfo"
    mode: tuple[str, ...] = ()  # arguments before the request's path: ``("--reach",)``


def run_to_end(child: Child, request: Callable[[list[str]], dict[str, object]]) -> None:
    """Run the child until it finishes: its results then name every entry once (``records.read_rows``).

    ``request(skip)`` is the request that skips those entries."""
    child.results.unlink(missing_ok=True)
    while True:
        rows = read_rows(child.results)
        done = list(dict.fromkeys(str(r["entry"]) for r in rows if "entry" in r))  # a crash's error row too
        write_atomic(child.request, json.dumps(request(done), sort_keys=True))
        code = _start(child)
        if code == 0:
            return
        culprit = _culprit(child, code)
        with open(child.results, "a", encoding="utf-8") as f:
            f.write(json.dumps({"entry": culprit, "error": f"the process died (exit {code})"}) + "\n")


def _start(child: Child) -> int:
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    command = [child.python, str(child.script), *child.mode, str(child.request), str(child.results)]
    with open(child.stderr, "w", encoding="utf-8") as err:
        return subprocess.run(command, stdout=err, stderr=err, env=env, check=False).returncode


def _culprit(child: Child, code: int) -> str:
    """The entry the child died in: the last one it started and did not finish."""
    rows = read_rows(child.results)
    finished = {str(r["entry"]) for r in rows if "entry" in r}
    started = [str(r["start"]) for r in rows if "start" in r]
    pending = [name for name in started if name not in finished]
    if pending:
        return pending[-1]
    tail = child.stderr.read_text(encoding="utf-8", errors="replace")[-2000:]
    when = f"after its last {child.first}, with none left" if started else f"before running any {child.first}"
    raise VtgenError(f"{child.what} failed (exit {code}) {when}:\n{tail}")
