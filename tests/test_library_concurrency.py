"""Concurrent ``check --gradcheck --library`` runs on one ``--out`` (a ``--watch`` and a manual run, two CI
steps sharing a cache): each gets its own verdict, with and without a warm worker (three rounds of four runs at
once, two of a wrong kernel and two of a right one: two rounds without a worker, one with).

The runs once shared the schema request and results files of ``--out`` without the check lock: the run of a
correct kernel FAILED with the other's Jacobian mismatch.  The vehicle is tests/packages/py_autograd (Python
kernels, the generated Python autograd: no C++ build), its softsign kernel made wrong by an environment
variable, so that two runs of one package differ only in their verdict.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_python_autograd import _copy

pytestmark = [pytest.mark.slow, pytest.mark.torch]

WRONG = "VTGEN_TEST_WRONG_SOFTSIGN"
_KERNEL = "    return self / (1 + self.abs())\n"
_WRONG_KERNEL = f"    return self / (1 + self.abs()) * (3 if os.environ.get({WRONG!r}) else 1)\n"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pkg = _copy(tmp_path_factory.mktemp("concurrent"))
    kernels = pkg / "pyag" / "kernels.py"
    text = kernels.read_text()
    assert text.count(_KERNEL) == 1
    kernels.write_text(text.replace(_KERNEL, _WRONG_KERNEL))
    return pkg


def _env(pkg: Path, wrong: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != WRONG}
    env["PYTHONPATH"] = os.pathsep.join([str(pkg), os.environ.get("PYTHONPATH", "")])
    return {**env, WRONG: "1"} if wrong else env


def _check(pkg: Path, out: Path, wrong: bool) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "vtgen_build", "check", "--gradcheck", "--library", "pyag", "--op", "softsign",
           "--native-functions", "native_functions.yaml", "--derivatives", "derivatives.yaml", "--namespace", "pyag",
           "--out", str(out), "--allow-unverified"]  # fmt: skip
    return subprocess.Popen(cmd, cwd=pkg, env=_env(pkg, wrong), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip


@pytest.fixture
def worker_out(package: Path, tmp_path: Path) -> Iterator[Path]:
    out = tmp_path / "out"
    start = [sys.executable, "-m", "vtgen_build", "worker", "start", "--out", str(out)]
    done = subprocess.run(start, cwd=package, env=_env(package, False), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    yield out
    subprocess.run([sys.executable, "-m", "vtgen_build", "worker", "stop", "--out", str(out)], cwd=package,
                   capture_output=True, timeout=120)  # fmt: skip


def _rounds(pkg: Path, out: Path, rounds: int) -> None:
    for i in range(rounds):
        runs = [(wrong, _check(pkg, out, wrong)) for wrong in (True, False, True, False)]
        for wrong, run in runs:
            log, _ = run.communicate(timeout=600)
            if wrong:
                assert run.returncode == 1, f"round {i}: a wrong kernel's run:\n{log}"
                assert "gradcheck failed for softsign (schema samples)" in log, log
            else:
                assert run.returncode == 0, f"round {i}: a correct kernel's run got:\n{log}"
                assert log.strip().endswith("OK: 2 ops verified"), log  # softsign and softsign_


def test_concurrent_runs_without_a_worker_each_get_their_own_verdict(package: Path, tmp_path: Path) -> None:
    _rounds(package, tmp_path / "out", 2)


def test_concurrent_runs_through_one_worker_each_get_their_own_verdict(package: Path, worker_out: Path) -> None:
    _rounds(package, worker_out, 1)
