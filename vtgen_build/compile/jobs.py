"""Running compile jobs in parallel: processes, progress lines, and a clean stop on Ctrl-C.

An interrupted run reports nothing about the units it was compiling: a compiler
killed by the interrupt (or by us, stopping) has not failed, so no ``FAILED`` line
is printed and nothing is cached; the interrupt is raised again once every process
is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

__all__ = ["Interrupted", "Processes", "Reporter", "UnitResult", "run_parallel"]

T = TypeVar("T")
R = TypeVar("R")
# a compiler that died of one of these was stopped, not failed
_STOPPING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT}


class Interrupted(Exception):
    """A job was stopped before it could tell whether its unit compiles."""


@dataclass(frozen=True)
class UnitResult:
    unit: str
    ok: bool
    seconds: float
    diagnostics: str
    errors: int
    ops: frozenset[str]  # ops blamed for the errors
    cached: bool = False  # passed before, nothing it reads changed: not compiled


@dataclass
class Processes:
    """The compiler processes running now; ``stop()`` kills them and makes later runs raise."""

    running: set[subprocess.Popen[bytes]] = field(default_factory=set)
    stopping: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[int, str]:
        """Exit code and output (stdout and stderr) of ``argv``; ``Interrupted`` when stopped."""
        with self.lock:
            if self.stopping.is_set():
                raise Interrupted
            # a process group of its own: stop() kills what a launcher or wrapper started too, which would
            # otherwise hold the output pipe open (and this thread waiting) after the compiler is killed
            proc = subprocess.Popen(
                list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
            self.running.add(proc)
        try:
            data, _ = proc.communicate()
        finally:
            with self.lock:
                self.running.discard(proc)
        code = proc.returncode
        if self.stopping.is_set() or -code in _STOPPING or code - 128 in _STOPPING:
            raise Interrupted
        return code, data.decode("utf-8", errors="replace")

    def stop(self) -> None:
        with self.lock:
            self.stopping.set()
            for proc in self.running:
                with contextlib.suppress(ProcessLookupError):  # gone: it and everything it started
                    os.killpg(proc.pid, signal.SIGKILL)


@dataclass
class Reporter:
    """Plain lines, or one progress line rewritten in place on a terminal."""

    total: int
    tty: bool
    stream: TextIO = field(default_factory=lambda: sys.stdout)
    errors: TextIO = field(default_factory=lambda: sys.stderr)
    done: int = 0
    failed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    started: float = field(default_factory=time.perf_counter)
    said: set[str] = field(default_factory=set)  # the notes printed (each once)

    def note(self, text: str) -> None:
        """One line on stderr about a slower path taken (never a wrong answer), once per run."""
        with self.lock:
            if text in self.said:
                return
            self.said.add(text)
            if self.tty:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            self.errors.write(f"vtgen-build: note: {text}\n")
            self.errors.flush()

    def finished(self, r: UnitResult) -> None:
        with self.lock:
            self.done += 1
            self.failed += not r.ok
            if self.tty:
                self.stream.write("\r\x1b[K")
            if r.diagnostics.strip():
                self.stream.flush()
                self.errors.write(r.diagnostics.rstrip("\n") + "\n")
                self.errors.flush()
            status = ("ok (cached)" if r.cached else "ok") if r.ok else f"FAILED ({r.errors} errors)"
            if self.tty:
                if not r.ok:
                    self.stream.write(f"{r.unit}: {status}\n")
                elapsed = time.perf_counter() - self.started
                self.stream.write(f"[{self.done}/{self.total}] {self.failed} failed, {elapsed:.0f}s")
            elif r.cached:
                self.stream.write(f"[{self.done}/{self.total}] {r.unit}: {status}\n")
            else:
                self.stream.write(f"[{self.done}/{self.total}] {r.unit}: {status} ({r.seconds:.1f}s)\n")
            self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def run_parallel(tasks: Sequence[T], work: Callable[[T], R], jobs: int, processes: Processes) -> list[R]:
    """``work`` on every task, ``jobs`` at a time, results in the order of ``tasks``.

    Ctrl-C (or any exception) stops every running process and is raised again;
    an ``Interrupted`` job raises ``KeyboardInterrupt`` once the others are done.
    """
    if not tasks:
        return []
    results: dict[int, R] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, min(jobs or os.cpu_count() or 1, len(tasks))))
    futures: dict[Future[R], int] = {}
    try:  # a Ctrl-C while the tasks are still being submitted stops the ones already running too
        for i, t in enumerate(tasks):
            futures[pool.submit(work, t)] = i
        for f in as_completed(futures):
            results[futures[f]] = f.result()
    except Interrupted:
        processes.stop()
        raise KeyboardInterrupt from None
    except BaseException:
        processes.stop()
        raise
    finally:
        for f in futures:
            f.cancel()
        pool.shutdown(wait=True)
    return [results[i] for i in range(len(tasks))]
