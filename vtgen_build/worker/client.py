"""Running a child through a warm worker, and the wire both sides speak (JSON lines, ``server.py``).

A worker that cannot serve (stopped, stopping, killed, its directory deleted, or silent) is never
the check's failure: ``WorkerGone`` says so, and the callers (``run_python``, ``gradcheck/supervise.py``)
run the child in a new Python instead, with a note.  A request the worker refuses is an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError

__all__ = ["ANSWER", "Worker", "WorkerGone", "WorkerProcess", "connect", "receive", "run_python", "send", "without"]

ANSWER = 10.0  # seconds a worker may take to answer a request (hello, stop, a child's pid); more: it is silent
KILLED = 10.0  # seconds a child killed here may take to be reported ended; more: counted dead all the same


class WorkerGone(VtgenError):
    """The worker could not serve this request; the caller goes on without it (``without``)."""


def without(gone: WorkerGone) -> None:
    """Say that this process goes on without the worker, and why."""
    print(f"vtgen-build: note: {gone.message}: going on without it", file=sys.stderr, flush=True)


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {ANSWER:g}s"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    if isinstance(exc, VtgenError):
        return exc.message
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class Worker:
    directory: Path  # OUT/.vtgen-worker
    pid: int  # the worker's own process

    def spawn(self, argv: Sequence[str], stderr: Path, env: Mapping[str, str], cwd: str | None = None) -> WorkerProcess:
        """Run ``python ARGV`` as a child the worker forks (in ``cwd``, default here), its output into ``stderr``."""
        request = {"argv": list(argv), "stderr": str(stderr.resolve()), "env": dict(env), "cwd": cwd or os.getcwd()}
        try:
            conn = connect(self.directory)
        except OSError as exc:
            raise WorkerGone(f"the gradcheck worker in {self.directory} is gone ({_why(exc)})") from None
        try:
            send(conn, {"run": request})
            answer = receive(conn, ANSWER)
        except (OSError, WorkerGone) as exc:
            conn.close()  # if it forks the child later, it finds nobody waiting and kills it
            why = _why(exc)
            raise WorkerGone(f"the gradcheck worker in {self.directory} did not start the child ({why})") from None
        pid = answer.get("pid")
        if not isinstance(pid, int):
            conn.close()
            raise VtgenError(f"the gradcheck worker in {self.directory} refused to run a child: {answer.get('error')}")
        return WorkerProcess(conn, pid, self.directory)


class WorkerProcess:
    """A child of the worker, as much of ``subprocess.Popen`` as a supervisor uses.

    ``wait`` raises ``WorkerGone`` when the worker ends while its child runs (the child dies with it:
    ``server.py``); the child counts as killed from then on."""

    def __init__(self, conn: socket.socket, pid: int, directory: Path) -> None:
        self.conn, self.pid, self.directory = conn, pid, directory
        self.returncode: int | None = None
        self.killed: float | None = None  # when ``kill`` was called

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        limit = timeout
        if self.killed is not None:  # its end is due at once: a worker that does not report it is silent
            left = max(0.0, self.killed + KILLED - time.monotonic())
            limit = left if timeout is None else min(timeout, left)
        try:
            answer = receive(self.conn, limit)
        except TimeoutError:
            if self.killed is not None and time.monotonic() >= self.killed + KILLED:
                return self._ended(-signal.SIGKILL)
            raise subprocess.TimeoutExpired(f"worker child {self.pid}", timeout or 0) from None
        except (OSError, WorkerGone) as exc:
            self._ended(-signal.SIGKILL)
            why = _why(exc)
            raise WorkerGone(f"the gradcheck worker in {self.directory} ended while its child ran ({why})") from None
        code = answer.get("exit")
        if not isinstance(code, int):
            self._ended(-signal.SIGKILL)
            raise WorkerGone(f"the gradcheck worker in {self.directory} answered {answer} for its child's end")
        return self._ended(code)

    def _ended(self, code: int) -> int:
        self.returncode = code
        self.conn.close()
        return code

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        if self.returncode is not None:
            return
        self.killed = self.killed or time.monotonic()
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(self.pid, signal.SIGKILL)


def run_python(
    worker: Worker | None,
    python: str,
    argv: Sequence[str],
    output: Path,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    timeout: float | None = None,
) -> int:
    """``python ARGV`` to its end, its output into ``output``; forked by ``worker`` when given and able,
    else (or when it goes while the child runs) a new Python.  ``subprocess.TimeoutExpired`` past ``timeout``."""
    env = env if env is not None else {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    if worker is not None:
        try:
            process = worker.spawn(argv, output, env, cwd)
            try:
                return process.wait(timeout)
            finally:
                if process.returncode is None:
                    process.kill()
        except WorkerGone as gone:
            without(gone)
    with open(output, "w", encoding="utf-8") as out:
        return subprocess.run(
            [python, *argv], stdout=out, stderr=out, env=env, cwd=cwd, timeout=timeout, check=False
        ).returncode


def connect(directory: Path) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        conn.close()
        raise
    try:  # through /proc: the full path may pass the 108 bytes AF_UNIX allows
        conn.connect(f"/proc/self/fd/{dir_fd}/socket")
    except OSError:
        conn.close()
        raise
    finally:
        os.close(dir_fd)
    return conn


def send(conn: socket.socket, message: Mapping[str, object]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def receive(conn: socket.socket, timeout: float | None) -> dict[str, object]:
    """One JSON line; ``TimeoutError`` when none came within ``timeout`` seconds (None: wait),
    ``WorkerGone`` when the worker closed the connection first."""
    conn.settimeout(timeout)
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = conn.recv(65536, socket.MSG_PEEK)
        except (TimeoutError, BlockingIOError):
            raise TimeoutError from None
        if not chunk:
            raise WorkerGone("the gradcheck worker closed the connection")
        line_end = chunk.find(b"\n")
        take = len(chunk) if line_end < 0 else line_end + 1
        data += conn.recv(take)
    try:
        answer = json.loads(data)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise VtgenError(f"the gradcheck worker answered something that is not a JSON object: {data[:200]!r}")
    return answer
