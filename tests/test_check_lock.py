"""Two ``check`` runs on one ``--out``: each compiles what it generated and reports its own result."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vtgen_build.check.run import CHECK_LOCK

from . import faulty
from .conftest import copy_sample, sample_inputs

pytestmark = pytest.mark.slow


def _check(root: Path, out: Path, pause: Path | None = None) -> subprocess.Popen[str]:
    args = ["check", *sample_inputs(root), "-I", str(root / "include"), "--shards", "1", "-j", "1", "--out", str(out)]
    cli = [sys.executable, "-m", "vtgen_build", *args]
    if pause:
        cli = faulty.command(args, pause=f"check generated:{pause}")
    return subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(proc: subprocess.Popen[str], pause: Path) -> None:
    """Until ``proc`` stands at its pause point (it creates ``pause`` there), or has ended."""
    while not pause.exists():
        if proc.poll() is not None:
            pytest.fail(f"the run ended before its pause point: {proc.communicate()}")
        os.sched_yield()


def test_a_check_holds_its_directory_from_generating_to_compiling_and_reports_its_own_inputs(tmp_path: Path) -> None:
    good, bad = copy_sample(tmp_path / "good"), copy_sample(tmp_path / "bad")
    text = (bad / "derivatives.yaml").read_text(encoding="utf-8")
    (bad / "derivatives.yaml").write_text(text.replace("softsign_backward(grad, self)", "grad.no_such_method()"))
    out, pause = tmp_path / "out", tmp_path / "paused"

    broken = _check(bad, out, pause)  # stops after generating, before compiling anything
    try:
        _wait_for(broken, pause)
        with open(out / CHECK_LOCK, "a+b") as handle, pytest.raises(BlockingIOError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # the paused check still holds --out
        correct = _check(good, out)  # must wait: it would rewrite the files the first one is about to compile
        pause.unlink()
        broken_out, broken_err = broken.communicate(timeout=600)
        correct_out, correct_err = correct.communicate(timeout=600)
    finally:
        broken.kill()  # a failed assertion must not leave it paused (no-op when it has ended)

    assert broken.returncode == 1, broken_out + broken_err
    assert f"{bad / 'derivatives.yaml'}:10:" in broken_err and "no_such_method" in broken_err, broken_err
    assert correct.returncode == 0, correct_out + correct_err
    assert "OK" in correct_out and "error" not in correct_err, correct_out + correct_err
