"""Running a gradcheck child to the end, past the entries that crash, hang or quit it.

A child (``child.py``, ``schema_child.py``) writes a start line before each entry, an ``at`` line
before each sample, and a row naming the entry after it (``child_loop.py``; read as ``records.Mark``s).
The parent watches those lines as they come: an entry that writes no row within the per-entry
limit (plus ``GRACE``) is killed from here, since the child's own alarm cannot interrupt a kernel
spinning in C++.  When the child ends (dies, is killed, or exits, even with status 0) while an
entry it started has no row, that entry gets a *fatal* error row of its own (the op's failure:
``report.py``) saying how the child ended, in which sample, and the last words it printed; the
child is then started again with a request that skips every entry already written.  A child
that ends outside any entry (before its first, after its last, or between two) is an error,
with the end of what it printed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..base.errors import VtgenError
from ..base.write import write_atomic
from ..worker import Worker, WorkerGone, WorkerProcess, without
from .records import AT, ENTRY, START, Entry, entries_of, marks, read_rows

__all__ = ["GRACE", "STARTUP", "Child", "Request", "Stop", "run_to_end"]

GRACE = 5  # seconds past the per-entry limit before the parent kills a silent child (its own alarm goes first)
STARTUP = 300  # seconds a child may take before its first entry starts (importing torch and PyTorch's test suite)
_POLL = 0.1  # seconds between looks at the child's results


@dataclass(frozen=True)
class Child:
    python: str  # the interpreter with torch
    # the child's command line before its request's and results' paths (``python COMMAND... REQUEST RESULTS``):
    # ``gradcheck_child.command(module, ...)``
    command: tuple[str, ...]
    request: Path  # where each start's request is written
    results: Path  # the JSON lines the child appends to
    stderr: Path  # what the child printed (its last start's)
    what: str  # how errors name it: "the gradcheck process"
    first: str  # what it runs first, for "failed before any ...": "OpInfo"
    timeout: int  # seconds per entry (--timeout): an entry with no row by then (plus GRACE) is killed
    worker: Worker | None = None  # a warm worker forks the child (``worker``); None: a new Python runs it


class Request(Protocol):
    """A child's request record (``gradcheck_child.protocol``): written as its JSON form."""

    def to_json(self) -> Any: ...


@dataclass(frozen=True)
class _Ending:
    code: int  # the child's exit status; negative: the signal that killed it
    hung: bool  # killed here: its entry wrote no row within the limit
    stopped: bool = False  # killed here: a row it wrote was one to stop at (``Stop``)
    lost: bool = False  # its warm worker ended while it ran (the child died with it): it runs again without


@dataclass(frozen=True)
class _Pending:
    name: str  # the entry started and not finished
    aten: str  # the op it checks, when the child said
    at: str  # the last sample it reported


@dataclass(frozen=True)
class Stop:
    """Stop the child at an entry's row that ``at(row)`` picks, when ``confirmed()`` then says so (the
    rows so far are in the results); unconfirmed, the child goes on past that entry."""

    at: Callable[[Entry], bool]
    confirmed: Callable[[], bool]


def run_to_end(child: Child, request: Callable[[list[str]], Request], stop: Stop | None = None) -> bool:
    """Run the child until it finishes: its results then name every entry once (``records.read_rows``);
    or until ``stop`` stops it (True: the entries after the row it stopped at have not run).

    ``request(skip)`` is the request that skips those entries."""
    child.results.unlink(missing_ok=True)
    while True:
        rows = read_rows(child.results)
        done = list(dict.fromkeys(m.name for m in marks(rows) if m.kind == ENTRY))  # a crash's error row too
        write_atomic(child.request, json.dumps(request(done).to_json(), sort_keys=True))
        ending = _start(child, stop.at if stop else None)
        if ending.lost:  # the entry it was in was not its failure: all again, in a new Python
            child = replace(child, worker=None)
            continue
        if ending.stopped:
            if stop is not None and stop.confirmed():
                return True
            continue  # not confirmed: on past the entries written (the one it was in starts again)
        pending = _pending(child)
        if pending is None:
            if ending.code == 0 and not ending.hung:
                return False
            raise VtgenError(_outside(child, ending))
        row = Entry(pending.name, aten=pending.aten, error=_why(child, ending, pending), fatal=True)
        with open(child.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(row.to_json()) + "\n")


def _start(child: Child, stop_at: Callable[[Entry], bool] | None = None) -> _Ending:
    """Run the child once; kill it when its running entry (or its start-up) passes the time limit, or when
    it wrote a row ``stop_at`` picks."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    arguments = [*child.command, str(child.request), str(child.results)]
    watch = _Watch(child.results, stop_at)
    process = _launch(child, arguments, env)
    try:
        return _watch(process, watch, time.monotonic() + STARTUP + child.timeout, child.timeout)
    except WorkerGone as gone:  # the worker ended while the child ran: that child died with it
        without(gone)
        return _Ending(-signal.SIGKILL, False, lost=True)
    finally:
        if process.poll() is None:  # interrupted (Ctrl-C): the child goes too
            process.kill()
            process.wait()


def _watch(process: subprocess.Popen[bytes] | WorkerProcess, watch: _Watch, deadline: float, timeout: int) -> _Ending:
    """Wait for the child's end, killing it at a ``stop_at`` row or past ``deadline`` (moved on by each row)."""
    while True:
        try:
            return _Ending(process.wait(timeout=_POLL), False)
        except subprocess.TimeoutExpired:
            pass
        if watch.moved():  # an entry started or finished: the next one has the full limit
            deadline = time.monotonic() + timeout + GRACE
        if watch.stop:
            process.kill()
            return _Ending(process.wait(), False, True)
        if time.monotonic() > deadline:
            process.kill()
            return _Ending(process.wait(), True)


def _launch(child: Child, arguments: list[str], env: dict[str, str]) -> subprocess.Popen[bytes] | WorkerProcess:
    """The child started: forked by the warm worker when there is one, else a new Python."""
    if child.worker is not None:
        try:
            return child.worker.spawn(arguments, child.stderr, env)
        except WorkerGone as gone:
            without(gone)
    with open(child.stderr, "w", encoding="utf-8") as err:
        return subprocess.Popen([child.python, *arguments], stdout=err, stderr=err, env=env)


class _Watch:
    """How far the child's results file has grown; ``moved()``: a start or a row since the last look.

    Reads only what was appended (complete lines), so that a long run is not read again every poll."""

    def __init__(self, path: Path, stop_at: Callable[[Entry], bool] | None = None) -> None:
        self.path, self.stop_at, self.stop = path, stop_at, False
        self.offset = path.stat().st_size if path.exists() else 0
        self.partial = b""

    def moved(self) -> bool:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return False
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        rows = [row for row in map(_row, lines) if row is not None]
        moves = [m for m in marks(rows) if m.kind != AT]  # a start line or an entry's row
        if self.stop_at is not None:
            self.stop = self.stop or any(self.stop_at(e) for e in entries_of(rows))
        return bool(moves)


def _row(line: bytes) -> dict[str, Any] | None:
    """A line as a JSON object (None: not one)."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def _pending(child: Child) -> _Pending | None:
    """The entry the child was in when it ended: the last one it started and did not finish."""
    found = marks(read_rows(child.results))
    finished = {m.name for m in found if m.kind == ENTRY}
    current: _Pending | None = None
    for mark in found:
        if mark.kind == START:
            current = _Pending(mark.name, mark.aten, "")
        elif mark.kind == AT and current is not None:
            current = _Pending(current.name, current.aten, mark.where)
    return current if current is not None and current.name not in finished else None


_SIGNALS = {
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted",
    "SIGBUS": "bus error",
    "SIGFPE": "arithmetic error",
    "SIGILL": "illegal instruction",
    "SIGKILL": "killed: out of memory, or by another process",
}


def _how(ending: _Ending, timeout: int, where: str = "") -> str:
    """How the child ended, as a phrase: "died of SIGSEGV (segmentation fault) in sample 0 (...)"."""
    if ending.hung:
        return f"hung{where}: no result within the per-entry limit of {timeout}s (--timeout); killed"
    if ending.code < 0:
        try:
            name = signal.Signals(-ending.code).name
        except ValueError:
            name = f"signal {-ending.code}"
        return f"died of {name}" + (f" ({_SIGNALS[name]})" if name in _SIGNALS else "") + where
    return f"exited (status {ending.code}){where} before writing the entry's result"


def _why(child: Child, ending: _Ending, pending: _Pending) -> str:
    """The fatal error row's message: how the child ended, in which sample, with its last words."""
    where = f" in {pending.at}" if pending.at else ""
    words = "" if ending.hung else last_words(_tail(child))
    return f"the process {_how(ending, child.timeout, where)}" + (f": {words}" if words else "")


def _outside(child: Child, ending: _Ending) -> str:
    rows = read_rows(child.results)
    started = any(m.kind == START for m in marks(rows))
    when = f"after its last {child.first}, with none left" if started else f"before running any {child.first}"
    if ending.hung:
        how = "was killed, silent past its time limit,"
    else:
        how = _how(ending, child.timeout) if ending.code < 0 else f"failed (exit {ending.code})"
    return f"{child.what} {how} {when}:\n{_tail(child)}"


def _tail(child: Child) -> str:
    try:
        return child.stderr.read_text(encoding="utf-8", errors="replace")[-2000:]
    except OSError:
        return ""


# what a dying process says last: C++'s terminate handler, Python's MemoryError and fatal errors
_LAST_WORDS = (
    re.compile(r"terminate called after throwing an instance of '[^']+'(?:\s+what\(\):\s*[^\n]*)?"),
    re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception): [^\n]*$", re.MULTILINE),
    re.compile(r"^MemoryError\b[^\n]*$", re.MULTILINE),
    re.compile(r"^Fatal Python error: [^\n]*$", re.MULTILINE),
)


def last_words(text: str) -> str:
    """The reason a dying child printed (``std::bad_alloc``, a ``MemoryError``), one line; "" when none."""
    for pattern in _LAST_WORDS:
        found = pattern.findall(text)
        if found:
            return " ".join(str(found[-1]).split())[:300]
    return ""
