"""The warm worker's own process; standalone: the standard library only (it runs under torch's Python).

    python server.py DIR EXTRA ALLOW IDLE [MODULE ...]

Imports each MODULE once (torch, PyTorch's test suite: what every gradcheck child would import
again), then listens on ``DIR/socket`` and, for each ``run`` request, forks a child from this
clean parent — a process that imported but never loaded a library nor ran a check — which runs
the named script as ``__main__``.  A child that crashes, hangs or calls ``exit`` ends alone; the
parent only reaps it and reports its exit status.  The loop is single-threaded, so that each fork
copies a process holding no lock of another thread.

One request per connection, JSON lines (``client.py``): ``{"hello": 1}`` is answered with what the
worker is (its Python, its torch and the digest of that torch's files when it started, EXTRA) and
the first file of the modules it imported that changed since (``changed``); then one of
``{"run": {...}}`` (answered ``{"pid": N}``, later ``{"exit": CODE}``) or ``{"stop": 1}`` (answered
``{"stopped": true, "pid": N, "running": K}``).  A request of any other shape is answered
``{"error": why}`` and the worker serves on.  Only this user's connections are served
(``SO_PEERCRED``); only scripts under ALLOW are run.

A child never outlives the two processes it serves: it dies with the worker (``PR_SET_PDEATHSIG``),
and the worker kills it when the connection of the client waiting for it closes.  The worker
leaves when asked (at once it takes no new request; it ends when its children have), when its
directory or socket is deleted or replaced (its children are killed), and after IDLE seconds with
no request and no child (0: never).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib
import json
import math
import os
import runpy
import select
import signal
import socket
import struct
import sys
import time
import traceback
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RunRequest", "installation_digest", "main", "module_files", "parse_request"]

MAX_LINE = 1 << 20  # bytes of one request; a longer one is refused
LOOK = 1.0  # seconds between looks at the directory, the socket and the idle clock
FRESH = 1.0  # seconds a look at the imported modules' files answers the hellos that follow it
_PR_SET_PDEATHSIG = 1  # prctl(2)

Signature = tuple[int, int, int]  # a file's size, modification time (ns) and inode
Inode = tuple[int, int]  # a file's device and inode: which file a path names, whatever was written into it
Signed = tuple[tuple[str, Signature | None], ...]  # paths and their signatures (None: unreadable)


def installation_digest(package_dir: str, seen: dict[object, str] | None = None) -> str:
    """What identifies an installed package's files: the content of its ``*.py`` at the top, of its
    dist-info ``RECORD`` (the hash of every file pip installed), and the size and modification time
    of each shared library under ``lib/`` (their content, a gigabyte, would cost seconds).  ``seen``: the
    caller's digests by the files' stat signatures, which stand for their contents: read again only when a
    signature changed (a check asks up to three times, and a few dozen ``stat`` calls cost far less than
    reading a megabyte each time)."""
    root = Path(package_dir)
    libs = sorted((root / "lib").glob("*")) if (root / "lib").is_dir() else []

    def signed(paths: list[Path]) -> Signed:
        return tuple((str(p), _signature(str(p))) for p in paths)

    records = sorted(root.parent.glob(f"{root.name}-*.dist-info/RECORD"))
    key = (str(root.resolve()), signed(sorted(root.glob("*.py"))), signed(records), signed(libs))
    known = seen.get(key) if seen is not None else None
    if known is None:
        known = _digest_of(*key)
        if seen is not None:
            seen.clear()  # one installation at a time: the last one read
            seen[key] = known
    return known


def _digest_of(root: str, sources: Signed, records: Signed, libs: Signed) -> str:
    """``installation_digest`` of files with these signatures, which stand for their contents."""
    digest = hashlib.sha256(root.encode())
    for path, _ in sources:
        digest.update(Path(path).name.encode() + b"\0" + Path(path).read_bytes())
    for path, _ in records:
        digest.update(Path(path).read_bytes())
    for path, signature in libs:
        size, mtime = signature[:2] if signature is not None else (-1, -1)
        digest.update(f"{Path(path).name}:{size}:{mtime}".encode())
    return digest.hexdigest()


def _signature(path: str) -> Signature | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def _inode(path: Path) -> Inode | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def module_files() -> tuple[tuple[str, Signature], ...]:
    """The file of every module imported so far, with its stat signature (a few thousand ``stat``
    calls, milliseconds; hashing them would cost seconds)."""
    found: dict[str, Signature] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and path not in found:
            signature = _signature(path)
            if signature is not None:
                found[path] = signature
    return tuple(sorted(found.items()))


def first_changed(files: tuple[tuple[str, Signature], ...]) -> str:
    """The first of ``files`` edited, replaced or deleted since its signature was taken; "" when none."""
    return next((path for path, signature in files if _signature(path) != signature), "")


@dataclass(frozen=True)
class RunRequest:
    """A ``run`` request, checked: the child's arguments, output file, environment and directory."""

    argv: tuple[str, ...]  # the script and its arguments
    stderr: str  # the file its output goes to
    env: tuple[tuple[str, str], ...]  # its whole environment
    cwd: str  # its working directory


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError(f"{what} must be a non-empty string without NUL")
    return value


def _run_request(value: object) -> RunRequest:
    if not isinstance(value, dict):
        raise ValueError("'run' must be an object")
    unknown = sorted(set(value) - {"argv", "stderr", "env", "cwd"})
    if unknown:
        raise ValueError(f"'run' has unknown keys: {', '.join(map(str, unknown))}")
    argv, env = value.get("argv"), value.get("env")
    if not isinstance(argv, list) or not argv:
        raise ValueError("'run.argv' must be a non-empty list of strings")
    if not isinstance(env, dict):
        raise ValueError("'run.env' must be an object of strings")
    pairs = tuple((_text(k, "an 'run.env' name"), _text(v, f"'run.env.{k}'")) for k, v in sorted(env.items()))
    args = tuple(_text(a, "each 'run.argv' item") for a in argv)
    return RunRequest(args, _text(value.get("stderr"), "'run.stderr'"), pairs, _text(value.get("cwd"), "'run.cwd'"))


def parse_request(line: bytes) -> tuple[str, RunRequest | None]:
    """One request line as ``(kind, run)``: ``("hello", None)``, ``("stop", None)`` or ``("run", request)``;
    ``ValueError`` saying why for anything else."""
    try:
        message = json.loads(line)
    except ValueError:
        raise ValueError("the request is not JSON") from None
    if not isinstance(message, dict) or len(message) != 1:
        raise ValueError("a request is an object of one key: hello, run or stop")
    kind = next(iter(message))
    if kind in ("hello", "stop"):
        return kind, None
    if kind == "run":
        return kind, _run_request(message["run"])
    raise ValueError(f"unknown request {kind!r}: hello, run or stop")


def _identity(extra: str, modules: list[str], idle: float) -> dict[str, str]:
    torch = sys.modules.get("torch")
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__ or "")) if torch is not None else ""
    return {
        "python": os.path.realpath(sys.executable),
        "torch": torch_dir,
        "torch_digest": installation_digest(torch_dir) if torch_dir else "",
        "extra": extra,
        "modules": ",".join(modules),
        "idle": str(idle),
        "pid": str(os.getpid()),
    }


def _peer_is_me(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _die_with(parent: int) -> None:
    """Make this child die with the worker: the kernel sends it SIGKILL when its parent ends."""
    with contextlib.suppress(OSError, AttributeError):  # no prctl here: the client's kill still ends it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the worker ended between the fork and the line above
        os._exit(1)


def _child(request: RunRequest, allow: Path, parent: int, closing: list[socket.socket]) -> None:
    """In the forked child: become the script's process, run it, and never return."""
    code = 1
    try:
        _die_with(parent)
        for s in closing:
            s.close()
        fd = os.open(request.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.environ.clear()
        os.environ.update(dict(request.env))
        os.chdir(request.cwd)
        script = Path(request.argv[0]).resolve()
        if allow not in script.parents:
            raise SystemExit(f"vtgen-build worker: refused to run {script}: not under {allow}")
        sys.argv = list(request.argv)
        runpy.run_path(str(script), run_name="__main__")
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, (int, type(None))):
            print(stop.code, file=sys.stderr)
    except BaseException:  # the script's own failure: what a fresh interpreter would print
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class _Settings:
    directory: Path  # DIR: holds the socket and the pid file
    identity: dict[str, str]  # the hello answer
    allow: Path  # only scripts under it are run
    idle: float  # seconds with no request and no child before it leaves (0: never)
    files: tuple[tuple[str, Signature], ...]  # the files of the modules it imported, as they were


class _Server:
    def __init__(self, settings: _Settings) -> None:
        self.settings = settings
        self.listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.buffers: dict[socket.socket, bytes] = {}  # connections whose request is being read
        self.running: dict[int, socket.socket | None] = {}  # child pid -> the connection waiting for its exit
        self.places: tuple[Inode | None, Inode | None] = (_inode(settings.directory), None)  # dir, socket
        self.last = time.monotonic()  # the last request or child exit (the idle clock)
        self.looked = 0.0
        self.changed = ""  # a file of an imported module that changed ("": none seen)
        self.files_looked = -math.inf  # when the files were last looked at

    def serve(self) -> None:
        assert self.listener is not None
        dir_fd = os.open(str(self.settings.directory), os.O_RDONLY)
        try:  # bound through /proc: the socket's full path may pass the 108 bytes AF_UNIX allows
            self.listener.bind(f"/proc/self/fd/{dir_fd}/socket")
        finally:
            os.close(dir_fd)
        os.chmod(self.settings.directory / "socket", 0o600)
        self.places = (self.places[0], _inode(self.settings.directory / "socket"))
        self.listener.listen(8)
        print(json.dumps({"ready": self.settings.identity}), flush=True)
        while self.listener is not None or self.running:
            self._reap()
            self._look()
            waiting = [c for c in self.running.values() if c is not None]
            listening = [self.listener] if self.listener else []
            ready, _, _ = select.select([*listening, *self.buffers, *waiting], [], [], 0.05)
            for s in ready:
                try:
                    self._readable(s)
                except Exception:  # a bug of ours on one connection: that connection only
                    _log(f"error serving a connection:\n{traceback.format_exc()}")
                    self._drop(s)
        self._leave()

    def _readable(self, s: socket.socket) -> None:
        if s is self.listener:
            self._accept()
        elif s in self.buffers:
            self._read(s)
        else:  # a client waiting for its child's exit closed its end (killed, Ctrl-C): the child goes too
            with contextlib.suppress(OSError):
                if s.recv(4096):
                    return
            pid = next(p for p, c in self.running.items() if c is s)
            self.running[pid] = None
            s.close()
            _log(f"run {pid}: its client left; killed")
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _look(self) -> None:
        """Every ``LOOK`` seconds: leave when the directory or the socket is gone or replaced, or when idle."""
        now = time.monotonic()
        if now - self.looked < LOOK:
            return
        self.looked = now
        if _inode(self.settings.directory) != self.places[0]:
            _log(f"{self.settings.directory} was deleted or replaced: leaving, its children killed")
            for pid, conn in self.running.items():  # their clients see the worker gone, not a child's death
                if conn is not None:
                    conn.close()
                self.running[pid] = None
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self._stop(unlink=False)
        elif self.listener is not None and _inode(self.settings.directory / "socket") != self.places[1]:
            _log("the socket was deleted or replaced: leaving when the running children end")
            self._stop(unlink=False)
        elif self.settings.idle > 0 and not self.running and not self.buffers and now - self.last > self.settings.idle:
            _log(f"idle for {self.settings.idle:g}s: leaving")
            self._stop()

    def _stop(self, unlink: bool = True) -> None:
        """Take no new request (the socket goes at once); the loop ends when the running children have."""
        if self.listener is None:
            return
        if unlink and _inode(self.settings.directory / "socket") == self.places[1]:
            (self.settings.directory / "socket").unlink(missing_ok=True)
        self.listener.close()
        self.listener = None

    def _accept(self) -> None:
        assert self.listener is not None
        conn, _ = self.listener.accept()
        if not _peer_is_me(conn):
            conn.close()
            return
        self.last = time.monotonic()
        self.buffers[conn] = b""

    def _read(self, conn: socket.socket) -> None:
        data = conn.recv(65536)
        if not data or len(self.buffers[conn]) + len(data) > MAX_LINE:
            self._drop(conn)
            return
        buffered = self.buffers[conn] = self.buffers[conn] + data
        if b"\n" in buffered:  # one request per connection: what follows its line is ignored
            del self.buffers[conn]
            self._answer(conn, buffered.split(b"\n", 1)[0])

    def _answer(self, conn: socket.socket, line: bytes) -> None:
        try:
            kind, run = parse_request(line)
        except ValueError as why:
            _log(f"refused a request: {why}")
            self._send(conn, {"error": str(why)})
            conn.close()
            return
        if kind == "hello":
            self._send(conn, {**self.settings.identity, "changed": self._changed()})
        elif kind == "stop":
            self._stop()
            self._send(conn, {"stopped": True, "pid": os.getpid(), "running": len(self.running)})
        elif run is not None:
            self._fork(conn, run)
            return
        conn.close()

    def _changed(self) -> str:
        """The first imported module's file changed since the start (a few thousand ``stat`` calls): looked
        at again when the last look is ``FRESH`` seconds old, so the hellos of one check (up to three,
        milliseconds apart) share one look; a change once seen stays the answer."""
        now = time.monotonic()
        if not self.changed and now - self.files_looked >= FRESH:
            self.changed, self.files_looked = first_changed(self.settings.files), now
        return self.changed

    def _fork(self, conn: socket.socket, run: RunRequest) -> None:
        parent = os.getpid()
        closing = [*([self.listener] if self.listener else []), *self.buffers, conn]
        closing += [c for c in self.running.values() if c is not None]
        pid = os.fork()
        if pid == 0:
            _child(run, self.settings.allow, parent, closing)
        self.running[pid] = conn
        _log(f"run {pid}: {' '.join(run.argv)[:300]}")
        if not self._send(conn, {"pid": pid}):  # its client is gone already: nobody would watch it
            self.running[pid] = None
            conn.close()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _reap(self) -> None:
        for pid in list(self.running):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                conn = self.running.pop(pid)
                self.last = time.monotonic()
                if conn is not None:
                    self._send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                    conn.close()

    def _send(self, conn: socket.socket, message: Mapping[str, object]) -> bool:
        try:
            conn.sendall(json.dumps(message).encode() + b"\n")
        except OSError:  # the client went away
            return False
        return True

    def _drop(self, conn: socket.socket) -> None:
        self.buffers.pop(conn, None)
        for pid, waiting in self.running.items():
            if waiting is conn:
                self.running[pid] = None
        conn.close()

    def _leave(self) -> None:
        for conn in self.buffers:
            conn.close()
        pid_file = self.settings.directory / "pid"
        with contextlib.suppress(OSError):
            if pid_file.read_text(encoding="utf-8").strip() == str(os.getpid()):
                pid_file.unlink()
        _log("left")


def _write_pid(directory: Path, pid: int) -> None:
    """The pid file, whole or not at all: a temporary file renamed over it."""
    temporary = directory / f".pid.{os.getpid()}.tmp"
    temporary.write_text(str(pid), encoding="utf-8")
    os.replace(temporary, directory / "pid")


def main(argv: list[str]) -> int:
    directory, extra, allow, idle, modules = Path(argv[0]), argv[1], Path(argv[2]).resolve(), float(argv[3]), argv[4:]
    pid = os.fork()
    if pid != 0:  # the starter names the worker and ends; the worker lives on, nobody's child to wait for
        _write_pid(directory, pid)
        os._exit(0)
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch: no thread pool a fork would break
    warnings.simplefilter("ignore")
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:
            pass
    settings = _Settings(directory, _identity(extra, loaded, idle), allow, idle, module_files())
    _Server(settings).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
