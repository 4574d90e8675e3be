"""Finding, starting and stopping the warm worker of one ``--out``, and running a child through it.

The worker lives in ``OUT/.vtgen-worker/`` (a directory only its user may enter: anything else is
refused, never used).  ``find`` connects only to a worker that is current: the same Python, the same
torch files as when it started (``server.installation_digest``), the same vtgen_build; a stale one is
stopped and reported, and the run goes on without it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError
from .server import installation_digest

__all__ = ["PRELOAD", "WORKER_DIR", "Worker", "WorkerProcess", "find", "package_digest", "run_python", "start", "stop"]

WORKER_DIR = ".vtgen-worker"
SERVER = Path(__file__).resolve().with_name("server.py")
PACKAGE = Path(__file__).resolve().parent.parent  # vtgen_build: the only scripts the worker runs
# what every gradcheck child imports first, and what takes it seconds: torch and PyTorch's test suite
PRELOAD = (
    "torch",
    "torch.testing._internal.common_methods_invocations",
    "torch.testing._internal.common_modules",
    "torch.testing._internal.opinfo.core",
)
STARTUP = 300  # seconds the worker may take to import its modules


def package_digest() -> str:
    """The content of vtgen_build's own files: a worker started by another version is stale."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class Worker:
    directory: Path  # OUT/.vtgen-worker
    pid: int  # the worker's own process

    def spawn(self, argv: Sequence[str], stderr: Path, env: Mapping[str, str], cwd: str | None = None) -> WorkerProcess:
        """Run ``python ARGV`` as a child the worker forks (in ``cwd``, default here), its output into ``stderr``."""
        conn = _connect(self.directory)
        request = {"argv": list(argv), "stderr": str(stderr.resolve()), "env": dict(env), "cwd": cwd or os.getcwd()}
        _send(conn, {"run": request})
        pid = _receive(conn, STARTUP).get("pid")
        if not isinstance(pid, int):
            conn.close()
            raise VtgenError(f"the gradcheck worker in {self.directory} did not start the child; stop it and retry")
        return WorkerProcess(conn, pid, self.directory)


class WorkerProcess:
    """A child of the worker, as much of ``subprocess.Popen`` as a supervisor uses."""

    def __init__(self, conn: socket.socket, pid: int, directory: Path) -> None:
        self.conn, self.pid, self.directory = conn, pid, directory
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            try:
                answer = _receive(self.conn, timeout)
            except TimeoutError:
                raise subprocess.TimeoutExpired(f"worker child {self.pid}", timeout or 0) from None
            code = answer.get("exit")
            if not isinstance(code, int):
                raise VtgenError(f"the gradcheck worker in {self.directory} ended while its child {self.pid} ran")
            self.returncode = code
            self.conn.close()
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
            os.kill(self.pid, 9)


def run_python(worker: Worker | None, python: str, argv: Sequence[str], output: Path) -> int:
    """``python ARGV`` to its end, its output into ``output``; forked by ``worker`` when given."""
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OMP_NUM_THREADS": "1"}
    if worker is not None:
        return worker.spawn(argv, output, env).wait()
    with open(output, "w", encoding="utf-8") as out:
        return subprocess.run([python, *argv], stdout=out, stderr=out, env=env, check=False).returncode


def find(out: Path, python: str) -> Worker | None:
    """The current worker of ``out`` for this Python, or None (none up; a stale one is stopped, with a note)."""
    directory = out / WORKER_DIR
    if not (directory / "socket").exists():
        return None
    _owned(directory)
    try:
        conn = _connect(directory)
    except OSError:  # its process is gone: the socket is a leftover
        (directory / "socket").unlink(missing_ok=True)
        return None
    with conn:
        _send(conn, {"hello": 1})
        identity = _receive(conn, 10)
    why = _stale(identity, python)
    if why:
        stop(out)
        print(f"vtgen-build: note: the gradcheck worker in {directory} was stale ({why}): stopped", file=sys.stderr)
        return None
    return Worker(directory, int(str(identity.get("pid", "0"))))


def _stale(identity: Mapping[str, object], python: str) -> str:
    """Why a worker that answered is not the one this run would start, or ""."""
    if identity.get("python") != os.path.realpath(python):
        return f"it runs {identity.get('python')}, not {os.path.realpath(python)}"
    torch = str(identity.get("torch") or "")  # "": it has not imported torch (its children will)
    if torch and (not os.path.isdir(torch) or installation_digest(torch) != identity.get("torch_digest")):
        return "torch's files changed since it started"
    if identity.get("extra") != package_digest():
        return "vtgen_build changed since it started"
    return ""


def start(out: Path, python: str, modules: Sequence[str] = PRELOAD, allow: Path = PACKAGE) -> Worker:
    """Start the worker of ``out`` (replacing a stale one); it lives on, detached, until ``stop``."""
    found = find(out, python)
    if found is not None:
        return found
    directory = out / WORKER_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    _owned(directory)
    ready = directory / "ready.json"
    ready.unlink(missing_ok=True)
    command = [python, str(SERVER), str(directory), package_digest(), str(allow), *modules]
    (directory / "pid").unlink(missing_ok=True)
    with open(ready, "w", encoding="utf-8") as said, open(directory / "worker-stderr.txt", "w") as err:
        subprocess.run(command, stdout=said, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True, check=False)
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        text = ready.read_text(encoding="utf-8").strip()
        if text:
            return Worker(directory, int(str(json.loads(text)["ready"]["pid"])))
        if not _alive(directory / "pid"):
            tail = (directory / "worker-stderr.txt").read_text(errors="replace")[-2000:]
            raise VtgenError(f"the gradcheck worker failed to start:\n{tail}")
        time.sleep(0.05)
    with contextlib.suppress(OSError, ValueError):
        os.kill(int((directory / "pid").read_text(encoding="utf-8")), 9)
    raise VtgenError(f"the gradcheck worker did not start within {STARTUP}s")


def _alive(pid_file: Path) -> bool:
    """The worker whose pid the file holds is still running (True while the file is not written yet)."""
    try:
        os.kill(int(pid_file.read_text(encoding="utf-8")), 0)
    except FileNotFoundError:
        return True
    except (ProcessLookupError, ValueError):
        return False
    return True


def stop(out: Path) -> bool:
    """Stop the worker of ``out``; False when none was up."""
    directory = out / WORKER_DIR
    if not (directory / "socket").exists():
        return False
    _owned(directory)
    try:
        conn = _connect(directory)
    except OSError:
        (directory / "socket").unlink(missing_ok=True)
        return False
    with conn:
        _send(conn, {"stop": 1})
        with contextlib.suppress(TimeoutError, VtgenError):
            _receive(conn, 10)
    deadline = time.monotonic() + 10  # it leaves when its running children have ended
    while (directory / "socket").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _owned(directory: Path) -> None:
    """Refuse a worker directory (or socket) that is not a plain directory of this user's, closed to others."""
    for path in (directory, directory / "socket"):
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if info.st_uid != os.getuid():
            raise VtgenError(f"refused the gradcheck worker in {directory}: {path} belongs to user {info.st_uid}")
        if path == directory and not stat.S_ISDIR(info.st_mode):
            raise VtgenError(f"refused the gradcheck worker in {directory}: it is not a directory")
        if info.st_mode & 0o077:
            mode = oct(stat.S_IMODE(info.st_mode))
            raise VtgenError(f"refused the gradcheck worker in {directory}: {path} is open to other users ({mode})")


def _connect(directory: Path) -> socket.socket:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:  # through /proc: the full path may pass the 108 bytes AF_UNIX allows
        conn.connect(f"/proc/self/fd/{dir_fd}/socket")
    except OSError:
        conn.close()
        raise
    finally:
        os.close(dir_fd)
    return conn


def _send(conn: socket.socket, message: Mapping[str, object]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(conn: socket.socket, timeout: float | None) -> dict[str, object]:
    """One JSON line; ``TimeoutError`` when none came within ``timeout`` seconds (None: wait)."""
    conn.settimeout(timeout)
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = conn.recv(65536, socket.MSG_PEEK)
        except (TimeoutError, BlockingIOError):
            raise TimeoutError from None
        if not chunk:
            raise VtgenError("the gradcheck worker closed the connection")
        line_end = chunk.find(b"\n")
        take = len(chunk) if line_end < 0 else line_end + 1
        data += conn.recv(take)
    answer = json.loads(data)
    if not isinstance(answer, dict):
        raise VtgenError("the gradcheck worker answered something that is not a JSON object")
    return answer
