"""``check --gradcheck --watch`` ends on Ctrl-C with 130, the status the README lists (as a shell says)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vtgen_build.cli.watch import watch
from vtgen_build.worker import Versions, manage


def _interrupted() -> int:
    raise KeyboardInterrupt


def test_watch_returns_130_on_ctrl_c(tmp_path: Path) -> None:
    watched = tmp_path / "d.yaml"
    watched.write_text("")
    assert watch([str(watched)], tmp_path / "out", sys.executable, _interrupted, False, Versions()) == 130


def test_watch_stops_when_vtgen_builds_own_files_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The watching process runs the version it started with: once vtgen_build's files differ from it, the
    next run would mix old and new code (and its worker was started for the old one), so watching stops."""
    watched = tmp_path / "d.yaml"
    watched.write_text("v1")
    digests = iter(["version 1", "version 1", "version 2"])  # at start, before run 1, before run 2
    monkeypatch.setattr(manage, "package_digest", lambda: next(digests))
    runs: list[str] = []

    def run() -> int:
        runs.append(watched.read_text())
        if len(runs) > 1:  # a second run: watching went on with the old version (Ctrl-C ends the test)
            raise KeyboardInterrupt
        watched.write_text("v2")  # a save: the loop runs again, after its look at vtgen_build's files
        return 0

    assert watch([str(watched)], tmp_path / "out", sys.executable, run, False, Versions()) == 1
    assert runs == ["v1"]
    err = capsys.readouterr().err
    assert "watch: OK" in err and "vtgen_build's own files" in err and "changed since this watch started" in err


def test_the_watching_command_exits_130_on_sigint(tmp_path: Path) -> None:
    """The command as a user runs it: a first run that fails at once (a yaml error: watching goes on),
    then SIGINT while it waits for a change."""
    native = tmp_path / "nf.yaml"
    native.write_text("- func: twice(Tensor self) -> Tensor\n")
    derivatives = tmp_path / "d.yaml"
    derivatives.write_text("- name: twice(Tensor self) -> Tensor\n  slef: grad * 2\n")
    args = [sys.executable, "-m", "vtgen_build", "check", "--native-functions", str(native), "--derivatives",
            str(derivatives), "--namespace", "wt", "--out", str(tmp_path / "out"), "--gradcheck", "--watch",
            "--no-worker"]  # fmt: skip
    log = tmp_path / "log.txt"
    with open(log, "w", encoding="utf-8") as said:
        process = subprocess.Popen(args, stdout=said, stderr=said, cwd=Path(__file__).parents[1])
    try:
        deadline = time.monotonic() + 120
        while "watch: FAILED" not in log.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.2)
        assert "watch: FAILED (exit 1)" in log.read_text(), log.read_text()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
