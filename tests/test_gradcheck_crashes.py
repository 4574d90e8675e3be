"""``check --gradcheck --library`` when the user's kernel misbehaves: it crashes, spins in C++, exits, or
runs out of memory.  Each is a failure of that op at the sample it hit (exit 1), whatever the flags, and
the check ends by itself.

The library is tests/packages/bad_kernels (conftest's ``bad_kernels``, built once per session): real
CPU kernels registered with torch, loaded by the check's child as a user's library is.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import BAD_KERNELS

pytestmark = [pytest.mark.slow, pytest.mark.torch]

LIMIT = 3  # --timeout: seconds per op


def _check(library: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    """The check in a fresh process: exit status, stdout, stderr (it must end: 120 s at most)."""
    args = [sys.executable, "-m", "vtgen_build", "check", "--namespace", "vtbad"]
    args += ["--native-functions", str(BAD_KERNELS / "native_functions.yaml")]
    args += ["--derivatives", str(BAD_KERNELS / "derivatives.yaml"), "--out", str(out)]
    args += ["--gradcheck", "--library", str(library), "--timeout", str(LIMIT), *extra]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False, cwd=out.parent)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def every_op(bad_kernels: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, object], str]:
    """One run over every op, as a CI job runs it: JSON on stdout, with --allow-unverified (which must not
    turn a crash into a pass)."""
    out = tmp_path_factory.mktemp("every_op") / "out"
    code, stdout, stderr = _check(bad_kernels, out, "--format", "json", "--allow-unverified")
    return code, json.loads(stdout), stderr


def _errors(document: dict[str, object]) -> dict[str, str]:
    """op -> the message of its error diagnostic."""
    rows = document["diagnostics"]
    assert isinstance(rows, list)
    return {d["message"].split(" ", 1)[0]: d["message"] for d in rows if d["severity"] == "error"}


def test_a_crashing_kernel_fails_its_op_at_the_sample_whatever_the_flags(
    every_op: tuple[int, dict[str, object], str],
) -> None:
    code, document, text = every_op
    assert code == 1, text
    assert document["ok"] is False and document["summary"] == "FAILED: 5 failing checks", document
    crash = "crash (schema samples): the process died of SIGSEGV (segmentation fault) in sample 0 (float64) of "
    assert _errors(document)["crash"] == crash + "the backward check of crash", document
    assert f"vtgen-build: error: {crash}" in text and "FAILED: 5 failing checks" in text, text
    assert "not verified: crash" not in text and "no sample yet" not in text.replace("greedy: no sample yet", "")
    assert "OpInfo" not in json.dumps(document) and "OpInfo" not in text  # an op library has no OpInfo entries


def test_through_a_worker_the_same_failures_and_the_worker_serves_on(
    every_op: tuple[int, dict[str, object], str], bad_kernels: Path, tmp_path: Path
) -> None:
    """The crashing, exiting and out-of-memory kernels run in children a warm worker forks: the same
    errors and exit status as one-shot, and the worker is still up and serving afterwards."""
    from vtgen_build.worker import find, start, stop

    out = tmp_path / "out"
    worker = start(out, sys.executable)
    try:
        code, stdout, stderr = _check(bad_kernels, out, "--format", "json", "--allow-unverified")
        assert (code, _errors(json.loads(stdout))) == (every_op[0], _errors(every_op[1])), stderr[-3000:]
        assert find(out, sys.executable) == worker  # the same worker, serving on
        assert "run " in (out / ".vtgen-worker" / "worker-stderr.txt").read_text(encoding="utf-8")
    finally:
        stop(out)


def test_a_kernel_calling_exit_0_fails_its_op(every_op: tuple[int, dict[str, object], str]) -> None:
    _, document, _ = every_op
    errors = _errors(document)
    for op in ("quit", "quit_now"):  # std::exit(0) and _exit(0)
        assert errors[op] == (
            f"{op} (schema samples): the process exited (status 0) in sample 0 (float64) of the backward "
            f"check of {op} before writing the entry's result"
        ), document


def test_running_out_of_memory_says_bad_alloc(every_op: tuple[int, dict[str, object], str]) -> None:
    _, document, text = every_op
    assert _errors(document)["hog"].endswith(
        "the process died of SIGABRT (aborted) in sample 0 (float64) of the backward check of hog: "
        "terminate called after throwing an instance of 'std::bad_alloc' what(): std::bad_alloc"
    ), document
    # the op that raises it (a MemoryError in Python) rejected its sample: not verified, and why
    assert "not verified: greedy: no sample yet: the op rejects the sample: std::bad_alloc" in text, text


def test_a_spinning_kernel_is_killed_at_its_limit_and_fails(bad_kernels: Path, tmp_path: Path) -> None:
    """A C++ loop holds off the child's own alarm: the parent ends the entry at --timeout plus a grace
    (measured from the entry's start line to its error row), and the check fails at the op."""
    from vtgen_build.gradcheck.supervise import GRACE

    out = tmp_path / "out"
    args = [sys.executable, "-m", "vtgen_build", "check", "--namespace", "vtbad", "--out", str(out)]
    args += ["--native-functions", str(BAD_KERNELS / "native_functions.yaml")]
    args += ["--derivatives", str(BAD_KERNELS / "derivatives.yaml"), "--gradcheck", "--library", str(bad_kernels)]
    args += ["--timeout", str(LIMIT), "--op", "spin"]
    results = out / ".vtgen-gradcheck" / "schema-results.jsonl"
    seen: dict[str, float] = {}
    with subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as check:
        deadline = time.monotonic() + 120
        while check.poll() is None and time.monotonic() < deadline:
            text = results.read_text() if results.exists() else ""
            for key, mark in (("start", '"start": "spin'), ("ended", '"fatal": true')):
                if mark in text:
                    seen.setdefault(key, time.monotonic())
            time.sleep(0.05)
        if check.poll() is None:
            check.kill()
        stdout, stderr = check.communicate()
    assert check.returncode == 1, stdout + stderr
    assert LIMIT <= seen["ended"] - seen["start"] < LIMIT + GRACE + 2, seen  # 2 s: polling on a busy machine
    hung = "spin (schema samples): the process hung in sample 0 (float64) of the backward check of spin: "
    assert f"vtgen-build: error: {hung}no result within the per-entry limit of {LIMIT}s" in stderr, stderr
    assert stderr.rstrip().endswith("FAILED: 1 failing checks"), stderr
