"""A real distributed compile: ``check --launcher distcc`` and CMake's launcher against a real ``distccd``.

The server listens on 127.0.0.1 only and allows only 127.0.0.1; its log (on its stderr)
shows each unit it compiled.  Skipped without Debian's distcc package (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import SAMPLE, CliRunner, sample_inputs

pytestmark = [
    pytest.mark.skipif(shutil.which("distcc") is None or shutil.which("distccd") is None,
                       reason="distcc not installed (apt-get install distcc)"),
    pytest.mark.skipif(shutil.which("g++") is None, reason="no g++"),
]  # fmt: skip
BROKEN = ("stack_mean_backward(grad, dim, tensors.size())", "stack_mean_backward(grad, dim, tensors.sizee())")


@dataclass(frozen=True)
class Server:
    port: int
    log: Path

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}/2"

    def jobs(self) -> list[tuple[str, str]]:
        """(outcome, source file) of every job the server ran, from its log."""
        text = self.log.read_text(encoding="utf-8", errors="replace")
        return re.findall(r"\(dcc_job_summary\) client: 127\.0\.0\.1:\d+ (COMPILE_\w+) .* (\S+)$", text, re.M)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def distccd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A distccd on 127.0.0.1 (allowing only 127.0.0.1), and DISTCC_HOSTS naming only it."""
    port, log = _free_port(), tmp_path / "distccd.log"
    command = ["distccd", "--no-detach", "--daemon", "--listen", "127.0.0.1", "--allow", "127.0.0.1",
               "--port", str(port), "--jobs", "2", "--log-stderr", "--log-level", "info"]  # fmt: skip
    with open(log, "wb") as err:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while "listening on 127.0.0.1" not in log.read_text(errors="replace"):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
        monkeypatch.setenv("DISTCC_HOSTS", f"127.0.0.1:{port}/2")  # no localhost: every job goes to the server
        monkeypatch.setenv("DISTCC_SKIP_LOCAL_RETRY", "1")  # a failing job is not compiled again locally
        (tmp_path / "distcc").mkdir()
        monkeypatch.setenv("DISTCC_DIR", str(tmp_path / "distcc"))  # the client's locks and state
        yield Server(port, log)
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and the children it forked (its own session)
        server.wait(timeout=10)


def _edited(tmp_path: Path) -> tuple[Path, int]:
    text = (SAMPLE / "derivatives.yaml").read_text(encoding="utf-8")
    path = tmp_path / "derivatives.yaml"
    path.write_text(text.replace(*BROKEN), encoding="utf-8")
    return path, text[: text.index(BROKEN[0])].count("\n") + 1


def _diagnostics(err: str) -> list[str]:
    return sorted(set(re.findall(r"^\S*derivatives\.yaml:\d+:\d+: error: .*$", err, re.M)))


def test_check_through_distccd_matches_a_local_run(run_cli: CliRunner, tmp_path: Path, distccd: Server) -> None:
    derivatives, line = _edited(tmp_path)
    args = ["check", *sample_inputs(SAMPLE, derivatives), "-I", str(SAMPLE / "include"), "--shards", "1"]
    args += ["--op", "stack_mean", "--op", "soft_quantize", "--no-pch", "--no-cache"]
    local = run_cli(*args, "--out", str(tmp_path / "local"))
    assert not distccd.jobs()
    remote = run_cli(*args, "--out", str(tmp_path / "remote"), "--launcher", "distcc")
    assert distccd.jobs() == [("COMPILE_ERROR", str(tmp_path / "remote/.vtgen-check/ops.cpp"))]  # compiled there
    assert local.code == remote.code == 1
    assert _diagnostics(remote.err) == _diagnostics(local.err) != []
    assert f"derivatives.yaml:{line}:" in remote.err
    assert re.search(r"^failing ops: stack_mean$", remote.err, re.M) and "failing ops: stack_mean\n" in local.err
    fixed = run_cli(*[a if a != str(derivatives) else str(SAMPLE / "derivatives.yaml") for a in args],
                    "--out", str(tmp_path / "remote"), "--launcher", "distcc")  # fmt: skip
    assert fixed.code == 0 and "OK, 0 errors" in fixed.out, fixed.err[-2000:]
    assert distccd.jobs()[-1] == ("COMPILE_OK", str(tmp_path / "remote/.vtgen-check/ops.cpp"))


@pytest.mark.slow
def test_cmake_launcher_distcc_compiles_the_generated_units_there(tmp_path: Path, distccd: Server) -> None:
    """The stub-mode sample with ``-DCMAKE_CXX_COMPILER_LAUNCHER=distcc``: its generated units go to the server."""
    from .test_cmake import ALL_TUS, ROOT, SHARDS, Build, _consumer_env, _copy_sample, _require

    _require("cmake", "ninja")
    env = {**_consumer_env(), **{k: os.environ[k] for k in ("DISTCC_HOSTS", "DISTCC_SKIP_LOCAL_RETRY", "DISTCC_DIR")}}
    tree = Build(_copy_sample(tmp_path / "sample"), tmp_path / "build", "Ninja", env)
    tree.configure(
        f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
        f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        f"-DVTSAMPLE_SHARDS={SHARDS}",
        "-DCMAKE_CXX_COMPILER_LAUNCHER=distcc",
    )
    _, compiled, log = tree.build()
    assert compiled >= ALL_TUS, log
    remote = {Path(source).name for outcome, source in distccd.jobs() if outcome == "COMPILE_OK"}
    assert remote >= ALL_TUS, distccd.log.read_text()[-3000:]
