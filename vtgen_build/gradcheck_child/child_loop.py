"""What the gradcheck children share; standalone (stdlib only), loaded by path beside them.

``child.py`` and ``schema_child.py`` run as scripts in the torch interpreter.  Each works
through a list of entries, one at a time under a time limit, and writes ``{"start": name}``
before an entry, ``{"at": where}`` before each sample it runs (``Progress``) and the entry's
rows after it, one JSON object a line, flushed: a crash then leaves the name of the entry it
hit as the last ``start`` without a row, and the sample as the last ``at``, which the parent
(``supervise.py``) reports and skips when it starts the child again.  The time limit here is
a Python alarm, which cannot interrupt a kernel spinning in C++: the parent enforces the
same limit from outside (it kills the child).

A library built by ``check --gradcheck`` counts the calls of each of its Autograd kernels;
``Counters`` reads them, so that a check can tell which of our kernels it entered.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TextIO

from .protocol import ReachRow
from .rows import At, Entry, Start

# an entry's run: its rows (each naming an entry), or an exception (then one error row stands for it)
Row = Entry | ReachRow
Run = Callable[[], Sequence[Row]]


class Timeout(BaseException):
    """An entry ran past its time limit (raised by the alarm, inside whatever it was running).  Not an
    ``Exception``: the ``except Exception`` of a check (a sample that raised, an op refusing its arguments)
    never takes a hang for a verdict and goes on with no time limit left."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise Timeout()


def load_library(path: str) -> ctypes.CDLL:
    """dlopen the library with lazy binding, which registers its kernels.

    Code the linker kept but nothing registered reaches may call helpers libtorch does not
    export; with lazy binding they are looked up only if called, which they never are.
    (``torch.ops.load_library`` binds every symbol at once.)
    """
    libc = ctypes.CDLL(None)
    libc.dlopen.restype, libc.dlopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    libc.dlerror.restype = ctypes.c_char_p
    handle = libc.dlopen(path.encode(), os.RTLD_LAZY | os.RTLD_LOCAL)
    if not handle:
        raise OSError(f"cannot load {path}: {(libc.dlerror() or b'').decode()}")
    return ctypes.CDLL(path, handle=handle)


def hidden_status(lib: ctypes.CDLL) -> str:
    """ "ok" when every hidden libtorch helper the library calls was bound at load (or there is none)."""
    try:
        status = lib.vtgen_gradcheck_hidden_status
    except AttributeError:
        return "ok"
    status.restype = ctypes.c_char_p
    return str(status().decode())


class Counters:
    """The entry counters of a ``check --gradcheck`` library: calls of each op's Autograd kernel."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        lib.vtgen_gradcheck_op.restype = ctypes.c_char_p
        lib.vtgen_gradcheck_hits.restype = ctypes.c_longlong
        self.lib = lib
        self.ops = [lib.vtgen_gradcheck_op(i).decode() for i in range(lib.vtgen_gradcheck_count())]

    def snapshot(self) -> list[int]:
        return [self.lib.vtgen_gradcheck_hits(i) for i in range(len(self.ops))]

    def entered(self, before: list[int]) -> set[str]:
        return {op for op, b, a in zip(self.ops, before, self.snapshot(), strict=True) if a > b}


def describe(exc: BaseException, limit: int = 300) -> str:
    """An exception as one line: its type and its message, whitespace folded, cut at ``limit``."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:limit]}"


class Progress:
    """Where the running entry is: ``progress("sample 0 (float64) of the backward check of f")`` writes
    an ``{"at": ...}`` line, flushed, so that a crash or a hang in that sample is reported there."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last = ""

    def __call__(self, where: str) -> None:
        self.last = where
        self.out.write(json.dumps(At(where).to_json()) + "\n")
        self.out.flush()


def run_entries(
    out: TextIO,
    entries: Iterable[tuple[str, Run]],
    timeout: int,
    progress: Progress | None = None,
    ops: Mapping[str, str] | None = None,
) -> None:
    """Each entry under the time limit: its start line (with ``ops[name]``, the op it checks, as ``aten``),
    then its rows (or one error row).  ``progress`` is the one the entries report through."""
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    progress = progress or Progress(out)
    try:
        for name, run in entries:
            op = (ops or {}).get(name)
            out.write(json.dumps(Start(name, op or "").to_json()) + "\n")
            out.flush()
            progress.last = ""
            rows = _rows(name, run, timeout, progress, op)
            out.write("".join(json.dumps(row.to_json()) + "\n" for row in rows))
            out.flush()
    finally:
        signal.signal(signal.SIGALRM, previous)


def _rows(name: str, run: Run, timeout: int, progress: Progress, op: str | None) -> Sequence[Row]:
    signal.alarm(timeout)
    try:
        return run()
    except Timeout:  # a hang is a failure of the entry's op, as a crash is
        where = f" in {progress.last}" if progress.last else ""
        why = f"timed out after {timeout}s{where} (the per-entry limit)"
        return [Entry(name, aten=op or "", error=why, fatal=True)]
    except Exception as exc:
        return [Entry(name, aten=op or "", error=describe(exc))]
    finally:
        signal.alarm(0)
