"""Finding, starting and stopping the warm worker of one ``--out``.

The worker lives in ``OUT/.vtgen-worker/`` (a directory only its user may enter: anything else is
refused, never used), its process named by the ``pid`` file there (written whole, by a rename).
``find`` connects only to a worker that is current: the same Python, the same torch files as when
it started (``server.installation_digest``), the files of the modules it imported unchanged, the
same vtgen_build; a stale one is stopped, a silent one (stopped, hung) is reported, and either way
the run goes on without it.  ``stop`` never says "stopped" while the process lives: a worker that
does not answer is killed, one still finishing the checks it runs says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError
from ..base.write import locked
from .client import ANSWER, Worker, WorkerGone, connect, receive, send
from .server import installation_digest

__all__ = ["DRAIN", "IDLE", "PRELOAD", "WORKER_DIR", "Look", "Stopped", "Versions"]
__all__ += ["find", "look", "package_digest", "start", "stop"]

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
IDLE = 3600  # seconds a worker with no request and no child waits before it leaves (``worker start --idle``)
DRAIN = 10.0  # seconds ``stop`` waits for a worker to finish the children it runs
_GONE = 5.0  # seconds a killed worker may take to vanish


def package_digest() -> str:
    """The content of vtgen_build's own files now (a worker started by another version is stale)."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


class Versions:
    """What tells a current worker from a stale one, read once for whoever holds this (a command's run, a
    watch loop): the vtgen_build this process runs (its files' content at the first ask: the code a process
    imported is the code it runs, whatever the files say later), and torch's installation digest (read again
    only when a stat signature of its files changed: ``server.installation_digest``)."""

    def __init__(self) -> None:
        self._package = ""
        self._installs: dict[object, str] = {}  # torch's files' signatures -> their digest

    @property
    def package(self) -> str:
        if not self._package:
            self._package = package_digest()
        return self._package

    def installation(self, package_dir: str) -> str:
        return installation_digest(package_dir, self._installs)

    def package_changed(self) -> bool:
        """Do vtgen_build's files differ from the version this process runs (asked for it already)?"""
        return bool(self._package) and package_digest() != self._package


def _note(text: str) -> None:
    print(f"vtgen-build: note: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Look:
    """What answers in ``OUT/.vtgen-worker`` for this Python."""

    worker: Worker | None  # the current worker; None: none usable
    pid: int  # the process found (0: none)
    problem: str  # why it is not usable ("": current, or none up)
    stale: bool  # it answered but is not the worker this run would start (``problem`` says why)


def look(out: Path, python: str, versions: Versions | None = None) -> Look:
    """Ask the worker of ``out`` what it is (a dead worker's socket is removed; nothing else is done);
    ``versions``: the caller's (read once for all its looks), else read now."""
    directory = out / WORKER_DIR
    if not (directory / "socket").exists():
        return Look(None, 0, "", False)
    _owned(directory)
    try:
        conn = connect(directory)
    except OSError:  # nobody listens: a dead worker's socket (one that stopped removed its own)
        (directory / "socket").unlink(missing_ok=True)
        return Look(None, 0, "", False)
    with conn:
        try:
            send(conn, {"hello": 1})
            identity = receive(conn, ANSWER)
        except TimeoutError:
            silent = f"does not answer (nothing within {ANSWER:g}s: stopped, hung or swapped out)"
            return Look(None, _worker_pid(directory), silent, False)
        except (OSError, WorkerGone):  # it is leaving
            return Look(None, 0, "", False)
    pid = int(str(identity.get("pid") or 0)) if str(identity.get("pid") or "").isdigit() else 0
    why = _stale(identity, python, versions or Versions())
    return Look(None if why else Worker(directory, pid), pid, why, bool(why))


def find(out: Path, python: str, versions: Versions | None = None) -> Worker | None:
    """The current worker of ``out`` for this Python, or None (none up; a stale one is stopped, a
    silent one left for ``worker stop``, each with a note)."""
    seen = look(out, python, versions)
    directory = out / WORKER_DIR
    if seen.stale:
        stopped = stop(out)
        how = "stopped" if stopped.how != "leaving" else "it takes no new checks and leaves when its running ones end"
        _note(f"the gradcheck worker in {directory} was stale ({seen.problem}): {how}")
    elif seen.problem:
        process = f" (process {seen.pid})" if seen.pid else ""
        _note(f"the gradcheck worker in {directory}{process} {seen.problem}: this run goes on without it "
              f"(`vtgen-build worker stop --out {out}` kills it)")  # fmt: skip
    return seen.worker


def _stale(identity: Mapping[str, object], python: str, versions: Versions) -> str:
    """Why a worker that answered is not the one this run would start, or ""."""
    if identity.get("python") != os.path.realpath(python):
        return f"it runs {identity.get('python')}, not {os.path.realpath(python)}"
    torch = str(identity.get("torch") or "")  # "": it has not imported torch (its children will)
    if torch and (not os.path.isdir(torch) or versions.installation(torch) != identity.get("torch_digest")):
        return "torch's files changed since it started"
    if identity.get("changed"):
        return f"{identity.get('changed')} changed since it imported it"
    if identity.get("extra") != versions.package:
        return "vtgen_build changed since it started"
    return ""


def start(
    out: Path,
    python: str,
    modules: Sequence[str] = PRELOAD,
    allow: Path = PACKAGE,
    idle: float = IDLE,
    versions: Versions | None = None,
) -> Worker:
    """Start the worker of ``out`` (replacing a stale or silent one); it lives on, detached, until
    ``stop``, until ``out`` is deleted, or ``idle`` seconds without a request (0: never).  Starts of
    one ``out`` take turns (a lock in its directory): two at one instant leave one worker, both return it."""
    versions = versions or Versions()
    found = find(out, python, versions)
    if found is not None:
        return found
    directory = out / WORKER_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    _owned(directory)
    with locked(directory, "start.lock"):  # one start at a time: a second one finds the first's worker
        found = find(out, python, versions)
        if found is not None:
            return found
        return _start_new(out, directory.resolve(), python, modules, allow, idle, versions.package)


def _start_new(
    out: Path, directory: Path, python: str, modules: Sequence[str], allow: Path, idle: float, package: str
) -> Worker:
    if (directory / "socket").exists():  # one that does not answer: killed
        stop(out)
    for name in ("ready.json", "pid"):
        (directory / name).unlink(missing_ok=True)
    command = [python, str(SERVER), str(directory), package, str(allow), f"{idle:g}", *modules]
    pid = _launch(command, directory)
    try:
        return _await_ready(directory, pid)
    except BaseException:  # failed, or interrupted: no worker of ours lives on
        _kill(directory, pid)
        raise


def _launch(command: list[str], directory: Path) -> int:
    """Run the starter (it forks the worker, names it in the pid file and ends); the worker's pid."""
    ready, stderr = directory / "ready.json", directory / "worker-stderr.txt"
    with open(ready, "w", encoding="utf-8") as said, open(stderr, "w", encoding="utf-8") as err:
        try:
            starter = subprocess.run(command, stdout=said, stderr=err, stdin=subprocess.DEVNULL,
                                     start_new_session=True, timeout=STARTUP, check=False)  # fmt: skip
        except OSError as exc:
            why = exc.strerror or exc
            raise VtgenError(f"the gradcheck worker failed to start: cannot run {command[0]}: {why}") from None
        except subprocess.TimeoutExpired:
            _kill(directory, _read_pid(directory))
            raise VtgenError(
                f"the gradcheck worker failed to start: {command[0]} did not start it within {STARTUP}s"
            ) from None
    pid = _read_pid(directory)
    if starter.returncode != 0 or not pid:
        _kill(directory, pid)
        how = f"exited with status {starter.returncode}" if starter.returncode else "exited without starting it"
        raise VtgenError(f"the gradcheck worker failed to start: {command[0]} {how}:\n{_tail(directory)}")
    return pid


def _await_ready(directory: Path, pid: int) -> Worker:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        if _ready(directory):
            return Worker(directory, pid)
        if not _alive(pid):
            raise VtgenError(f"the gradcheck worker failed to start (process {pid} ended):\n{_tail(directory)}")
        time.sleep(0.05)
    raise VtgenError(f"the gradcheck worker did not start within {STARTUP}s:\n{_tail(directory)}")


def _ready(directory: Path) -> bool:
    """The worker printed its ready line (a line only partly written reads as not yet)."""
    try:
        text = (directory / "ready.json").read_text(encoding="utf-8")
        return text.endswith("\n") and "ready" in json.loads(text)
    except (OSError, ValueError, TypeError):
        return False


def _tail(directory: Path) -> str:
    try:
        return (directory / "worker-stderr.txt").read_text(errors="replace")[-2000:].strip() or "(it printed nothing)"
    except OSError:
        return "(it printed nothing)"


@dataclass(frozen=True)
class Stopped:
    """What ``stop`` did."""

    pid: int  # the worker process (0: none was up)
    how: str  # "stopped" (it left), "killed" (it did not answer, or did not leave), "leaving", "none"
    running: int = 0  # the children it was running when asked

    def sentence(self, out: Path) -> str:
        process = f" (process {self.pid})" if self.pid else ""
        if self.how == "stopped":
            return f"stopped the gradcheck worker of {out}{process}"
        if self.how == "killed":
            return f"killed the gradcheck worker of {out}{process} with SIGKILL: it did not leave when asked"
        if self.how == "leaving":
            return (f"the gradcheck worker of {out}{process} takes no new checks and leaves when its "
                    f"{self.running} running gradcheck processes end (`worker stop` again kills it)")  # fmt: skip
        return f"no gradcheck worker of {out}"


def stop(out: Path, drain: float | None = None) -> Stopped:
    """Ask the worker of ``out`` to leave and wait ``drain`` seconds (default ``DRAIN``) for it; one that
    does not answer (or was asked before) is killed; one that answered and still finishes running
    children is left to them."""
    directory = out / WORKER_DIR
    if not directory.is_dir():
        return Stopped(0, "none")
    _owned(directory)
    answer = _ask_to_stop(directory)
    named = str(answer.get("pid", "")) if answer else ""
    pid = int(named) if named.isdigit() else _worker_pid(directory)
    running = answer.get("running", 0) if answer else 0
    running = running if isinstance(running, int) else 0
    if not pid:
        _clear(directory)
        return Stopped(0, "none")
    wait = DRAIN if drain is None else drain
    if answer is not None and _ends(pid, wait if running else max(wait, _GONE)):  # one with no child leaves at once
        _clear(directory)
        return Stopped(pid, "stopped", running)
    if answer is not None and running:
        return Stopped(pid, "leaving", running)
    _kill(directory, pid)
    if not _ends(pid, _GONE):
        raise VtgenError(f"could not stop the gradcheck worker of {out}: process {pid} lives on after SIGKILL")
    _clear(directory)
    return Stopped(pid, "killed", running)


def _ask_to_stop(directory: Path) -> dict[str, object] | None:
    """The worker's answer to ``stop``; None when nobody answered (none listening, or silent)."""
    try:
        conn = connect(directory)
    except OSError:
        return None
    with conn:
        try:
            send(conn, {"stop": 1})
            return receive(conn, ANSWER)
        except (OSError, WorkerGone):
            return None


def _clear(directory: Path) -> None:
    """Remove what a worker that is gone left: a socket nobody listens on, a pid file of a dead process."""
    try:
        connect(directory).close()
    except OSError:
        (directory / "socket").unlink(missing_ok=True)
    if not _worker_pid(directory):
        (directory / "pid").unlink(missing_ok=True)


def _ends(pid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for process ``pid`` to end; True when it did."""
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _read_pid(directory: Path) -> int:
    """The pid the worker's pid file names; 0 when there is none (or not a whole number)."""
    try:
        text = (directory / "pid").read_text(encoding="utf-8").strip()
    except OSError:
        return 0
    return int(text) if text.isdigit() else 0


def _worker_pid(directory: Path) -> int:
    """The pid file's process when it is alive and is the worker of ``directory``, else 0."""
    pid = _read_pid(directory)
    return pid if pid and _alive(pid) and _is_worker(pid, directory) else 0


def _alive(pid: int) -> bool:
    """Process ``pid`` exists and is not a zombie (a dead worker its parent has not reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's: not ours to judge, but it is there
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True
    return fields[0] != "Z"


def _is_worker(pid: int, directory: Path) -> bool:
    """Process ``pid`` runs server.py for ``directory`` (a pid file outlives its process; pids are reused)."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    places = {os.fsencode(os.path.realpath(directory)), os.fsencode(directory)}
    return any(a.endswith(SERVER.name.encode()) for a in args) and bool(places & set(args))


def _kill(directory: Path, pid: int) -> None:
    """Kill the worker ``pid`` of ``directory`` (its children die with it), if it is that."""
    if pid and _alive(pid) and _is_worker(pid, directory):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


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
