"""The warm worker's own process; standalone: the standard library only (it runs under torch's Python).

    python server.py DIR EXTRA ALLOW [MODULE ...]

Imports each MODULE once (torch, PyTorch's test suite: what every gradcheck child would import
again), then listens on ``DIR/socket`` and, for each ``run`` request, forks a child from this
clean parent — a process that imported but never loaded a library nor ran a check — which runs
the named script as ``__main__``.  A child that crashes, hangs or calls ``exit`` ends alone; the
parent only reaps it and reports its exit status.  The loop is single-threaded, so that each fork
copies a process holding no lock of another thread.

One request per connection, JSON lines (``client.py``): ``{"hello": 1}`` is answered with what the
worker is (its Python, its torch and the digest of that torch's files when it started, EXTRA), then
one of ``{"run": {...}}`` (answered ``{"pid": N}``, later ``{"exit": CODE}``) or ``{"stop": 1}``.
Only this user's connections are served (``SO_PEERCRED``); only scripts under ALLOW are run.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import runpy
import select
import socket
import struct
import sys
import traceback
import warnings
from collections.abc import Mapping
from pathlib import Path

__all__ = ["installation_digest", "main"]

MAX_LINE = 1 << 20  # bytes of one request; a longer one is refused


def installation_digest(package_dir: str) -> str:
    """What identifies an installed package's files: the content of its ``*.py`` at the top, of its
    dist-info ``RECORD`` (the hash of every file pip installed), and the size and modification time
    of each shared library under ``lib/`` (their content, a gigabyte, would cost seconds)."""
    root = Path(package_dir)
    digest = hashlib.sha256(str(root.resolve()).encode())
    for path in sorted(root.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for record in sorted(root.parent.glob(f"{root.name}-*.dist-info/RECORD")):
        digest.update(record.read_bytes())
    for lib in sorted((root / "lib").glob("*")) if (root / "lib").is_dir() else []:
        info = lib.stat()
        digest.update(f"{lib.name}:{info.st_size}:{info.st_mtime_ns}".encode())
    return digest.hexdigest()


def _identity(extra: str, modules: list[str]) -> dict[str, str]:
    torch = sys.modules.get("torch")
    torch_dir = os.path.dirname(os.path.abspath(torch.__file__ or "")) if torch is not None else ""
    return {
        "python": os.path.realpath(sys.executable),
        "torch": torch_dir,
        "torch_digest": installation_digest(torch_dir) if torch_dir else "",
        "extra": extra,
        "modules": ",".join(modules),
        "pid": str(os.getpid()),
    }


def _peer_is_me(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return bool(uid == os.getuid())


def _child(request: dict[str, object], allow: Path, closing: list[socket.socket]) -> None:
    """In the forked child: become the script's process, run it, and never return."""
    code = 1
    try:
        for s in closing:
            s.close()
        argv = [str(a) for a in request["argv"]]  # type: ignore[attr-defined]
        fd = os.open(str(request["stderr"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in request["env"].items()})  # type: ignore[attr-defined]
        os.chdir(str(request["cwd"]))
        script = Path(argv[0]).resolve()
        if allow not in script.parents:
            raise SystemExit(f"vtgen-build worker: refused to run {script}: not under {allow}")
        sys.argv = argv
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


class _Server:
    def __init__(self, directory: Path, identity: dict[str, str], allow: Path) -> None:
        self.directory, self.identity, self.allow = directory, identity, allow
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.buffers: dict[socket.socket, bytes] = {}
        self.running: dict[int, socket.socket] = {}  # child pid -> the connection waiting for its exit
        self.stopping = False

    def serve(self) -> None:
        dir_fd = os.open(str(self.directory), os.O_RDONLY)
        try:  # bound through /proc: the socket's full path may pass the 108 bytes AF_UNIX allows
            self.listener.bind(f"/proc/self/fd/{dir_fd}/socket")
        finally:
            os.close(dir_fd)
        os.chmod(self.directory / "socket", 0o600)
        self.listener.listen(8)
        print(json.dumps({"ready": self.identity}), flush=True)
        while not self.stopping or self.running:
            self._reap()
            ready, _, _ = select.select([self.listener, *self.buffers], [], [], 0.05)
            for s in ready:
                if s is self.listener:
                    self._accept()
                else:
                    self._read(s)
        (self.directory / "socket").unlink(missing_ok=True)

    def _accept(self) -> None:
        conn, _ = self.listener.accept()
        if self.stopping or not _peer_is_me(conn):
            conn.close()
            return
        self.buffers[conn] = b""

    def _read(self, conn: socket.socket) -> None:
        data = conn.recv(65536)
        if not data or len(self.buffers[conn]) + len(data) > MAX_LINE:
            self._drop(conn)
            return
        buffered = self.buffers[conn] = self.buffers[conn] + data
        while b"\n" in buffered and conn in self.buffers:
            line, buffered = buffered.split(b"\n", 1)
            self.buffers[conn] = buffered
            self._answer(conn, line)

    def _answer(self, conn: socket.socket, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self._drop(conn)
        elif "hello" in message:
            self._send(conn, self.identity)
        elif "stop" in message:
            self.stopping = True
            self._send(conn, {"stopped": True})
            self._drop(conn)
        elif isinstance(message.get("run"), dict):
            pid = os.fork()
            if pid == 0:
                _child(message["run"], self.allow, [self.listener, *self.buffers, *self.running.values()])
            self.running[pid] = conn
            print(f"run {pid}: {' '.join(map(str, message['run'].get('argv', [])))[:300]}", file=sys.stderr, flush=True)
            del self.buffers[conn]  # the connection now waits for the exit only
            self._send(conn, {"pid": pid})
        else:
            self._drop(conn)

    def _reap(self) -> None:
        for pid in list(self.running):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                conn = self.running.pop(pid)
                self._send(conn, {"exit": os.waitstatus_to_exitcode(status)})
                conn.close()

    def _send(self, conn: socket.socket, message: Mapping[str, object]) -> None:
        with contextlib.suppress(OSError):  # the client went away (Ctrl-C): its child runs on and is reaped
            conn.sendall(json.dumps(message).encode() + b"\n")

    def _drop(self, conn: socket.socket) -> None:
        self.buffers.pop(conn, None)
        conn.close()


def main(argv: list[str]) -> int:
    directory, extra, allow, modules = Path(argv[0]), argv[1], Path(argv[2]).resolve(), argv[3:]
    if os.fork() != 0:  # the starter's child ends at once; the worker lives on, nobody's child to wait for
        os._exit(0)
    (directory / "pid").write_text(str(os.getpid()), encoding="utf-8")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch: no thread pool a fork would break
    warnings.simplefilter("ignore")
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except Exception:
            pass
    _Server(directory, _identity(extra, loaded), allow).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
