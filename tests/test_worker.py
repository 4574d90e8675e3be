"""The warm gradcheck worker (vtgen_build/worker) and ``check --gradcheck --watch``.

The protocol tests start a worker that imports only ``json`` and runs stand-in scripts (no torch):
each child is forked from a clean parent, so a crash, a hang, an ``exit`` or a leaked global costs
that child only.  The last test watches the real yaml with the real torch: an edit, then its
revert, give FAILED then OK.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import edited_checkout, vtgen
from tests.test_supervise import FAKE
from vtgen_build.base.errors import VtgenError
from vtgen_build.gradcheck.records import Entry, read_entries
from vtgen_build.gradcheck.supervise import Child, run_to_end
from vtgen_build.worker import Worker, client, find, start, stop

SCRIPT = """
import json, os, signal, sys, time
mode = sys.argv[1]
print("child", mode, os.environ.get("GIVEN"), flush=True)
if mode == "exit":
    sys.exit(3)
if mode == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
if mode == "hang":
    time.sleep(600)
if mode == "raise":
    raise ValueError("boom")
if mode == "leak":
    print("leaked" if hasattr(json, "planted") else "clean")
    json.planted = True
"""


@pytest.fixture
def warm(tmp_path: Path) -> Iterator[Worker]:
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    worker = start(tmp_path / "out", sys.executable, ("json",), tmp_path)
    yield worker
    stop(tmp_path / "out")


def _run(worker: Worker, tmp_path: Path, mode: str) -> tuple[int, str]:
    said = tmp_path / f"{mode}.txt"
    code = worker.spawn([str(tmp_path / "script.py"), mode], said, {"GIVEN": "yes"}).wait(timeout=60)
    return code, said.read_text(encoding="utf-8")


def test_each_child_ends_alone_and_the_worker_serves_on(warm: Worker, tmp_path: Path) -> None:
    assert _run(warm, tmp_path, "ok") == (0, "child ok yes\n")  # the environment given, not the worker's
    assert _run(warm, tmp_path, "exit")[0] == 3
    assert _run(warm, tmp_path, "crash")[0] == -signal.SIGSEGV
    code, said = _run(warm, tmp_path, "raise")
    assert code == 1 and "ValueError: boom" in said
    assert find(tmp_path / "out", sys.executable) == warm  # still up after all that


def test_no_state_leaks_from_one_child_to_the_next(warm: Worker, tmp_path: Path) -> None:
    assert _run(warm, tmp_path, "leak")[1].endswith("clean\n")
    assert _run(warm, tmp_path, "leak")[1].endswith("clean\n")  # forked again from the clean parent


def test_a_hanging_child_is_killed_from_outside(warm: Worker, tmp_path: Path) -> None:
    process = warm.spawn([str(tmp_path / "script.py"), "hang"], tmp_path / "hang.txt", {})
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.5)
    process.kill()
    assert process.wait(timeout=30) == -signal.SIGKILL
    assert _run(warm, tmp_path, "ok")[0] == 0


def test_only_scripts_under_the_allowed_directory_run(warm: Worker, tmp_path: Path) -> None:
    said = tmp_path / "refused.txt"
    assert warm.spawn([sys.executable], said, {}).wait(timeout=60) == 1
    assert "refused to run" in said.read_text(encoding="utf-8")


def test_the_supervisor_runs_its_children_through_the_worker(warm: Worker, tmp_path: Path) -> None:
    """The restart loop of tests/test_supervise.py, each start a fork of the worker."""
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE, encoding="utf-8")
    paths = (tmp_path / "request.json", tmp_path / "results.jsonl", tmp_path / "stderr.txt")
    child = Child(sys.executable, script, *paths, "the stand-in process", "entry", 1, worker=warm)
    run_to_end(child, lambda skip: {"entries": ["a", "die-7", "b"], "skip": skip})
    ended = "the process exited (status 7) in sample 3 before writing the entry's result"
    assert read_entries(child.results) == [
        Entry("a"),
        Entry("die-7", aten="DIE-7", error=ended, fatal=True),
        Entry("b"),
    ]
    assert "run " in (warm.directory / "worker-stderr.txt").read_text(encoding="utf-8")  # the worker forked them


def test_a_worker_of_another_vtgen_build_is_stale_and_stopped(
    warm: Worker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(client, "package_digest", lambda: "another version")
    assert find(tmp_path / "out", sys.executable) is None
    assert "was stale (vtgen_build changed since it started): stopped" in capsys.readouterr().err
    assert not (warm.directory / "socket").exists()


def test_a_worker_whose_torch_files_changed_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stand-in torch package the worker imports; an edit of one of its files makes the worker stale."""
    package = tmp_path / "site" / "torch"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("version = 1\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    start(tmp_path / "out", sys.executable, ("torch",), tmp_path)
    assert find(tmp_path / "out", sys.executable) is not None
    (package / "__init__.py").write_text("version = 2\n", encoding="utf-8")
    assert find(tmp_path / "out", sys.executable) is None
    assert "torch's files changed since it started" in capsys.readouterr().err


def test_a_worker_of_another_python_is_stale(warm: Worker, tmp_path: Path) -> None:
    other = tmp_path / "python"
    other.symlink_to("/bin/true")
    assert find(tmp_path / "out", str(other)) is None
    assert find(tmp_path / "out", sys.executable) is None  # it was stopped


def test_a_worker_directory_open_to_others_is_refused(warm: Worker, tmp_path: Path) -> None:
    os.chmod(warm.directory, 0o777)
    try:
        with pytest.raises(VtgenError, match="is open to other users"):
            find(tmp_path / "out", sys.executable)
    finally:
        os.chmod(warm.directory, 0o700)


def test_a_worker_directory_of_another_user_is_refused(
    warm: Worker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client.os, "getuid", lambda: os.geteuid() + 1)
    with pytest.raises(VtgenError, match="belongs to user"):
        find(tmp_path / "out", sys.executable)


def test_a_leftover_socket_of_a_dead_worker_reads_as_none(tmp_path: Path) -> None:
    worker = start(tmp_path / "out", sys.executable, ("json",), tmp_path)
    os.kill(worker.pid, signal.SIGKILL)
    time.sleep(0.2)
    assert find(tmp_path / "out", sys.executable) is None
    assert not (worker.directory / "socket").exists()


def _wait_for(path: Path, text: str, count: int, process: subprocess.Popen[str], limit: float) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        said = path.read_text(encoding="utf-8")
        if said.count(text) >= count:
            return said
        assert process.poll() is None, said
        time.sleep(0.5)
    raise AssertionError(f"no {count}x {text!r} within {limit}s:\n{path.read_text(encoding='utf-8')[-3000:]}")


@pytest.mark.slow
def test_watch_gives_failed_after_an_edit_and_ok_after_its_revert(real_yaml: RealYaml, tmp_path: Path) -> None:
    """``check --gradcheck --watch --op sin``: OK, then a wrong formula (cos -> sin) FAILED at its line,
    then the revert OK again; Ctrl-C ends it with 130 and stops the worker it started.  Then the wrong
    formula one-shot and through a worker: the same errors, the same exit status."""
    text = real_yaml.derivatives.read_text(encoding="utf-8")
    right = "self: grad * self.cos().conj()"
    assert text.count(right) == 1
    line = text[: text.index(right)].count("\n") + 1
    checkout = edited_checkout(real_yaml, tmp_path / "pt", text, {"sin": line})
    out, log = tmp_path / "out", tmp_path / "watch.txt"
    args = ["check", "--pytorch-root", str(checkout.root), "--out", str(out), "--gradcheck", "--watch", "--op", "sin"]
    with open(log, "w", encoding="utf-8") as said:
        process = subprocess.Popen([sys.executable, "-m", "vtgen_build", *args], stdout=said, stderr=said, text=True)
    try:
        _wait_for(log, "watch: OK", 1, process, 900)
        assert find(out, sys.executable) is not None  # the worker it started is up
        checkout.derivatives.write_text(text.replace(right, "self: grad * self.sin().conj()"), encoding="utf-8")
        failed = _wait_for(log, "watch: FAILED", 1, process, 900)
        assert f"derivatives.yaml:{line}: error: gradcheck failed for sin" in failed
        assert "stopped at the first failure confirmed as ours" in failed  # the verdict did not wait for the rest
        assert "not reached: the run stopped at the first failure" in failed  # sin_, never "no OpInfo entry"
        checkout.derivatives.write_text(text, encoding="utf-8")
        _wait_for(log, "watch: OK", 2, process, 900)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 130
    finally:
        if process.poll() is None:
            process.kill()
    assert find(out, sys.executable) is None
    # the same verdict one-shot and through a worker (the wrong unit is compiled: neither run compiles)
    checkout.derivatives.write_text(text.replace(right, "self: grad * self.sin().conj()"), encoding="utf-8")
    once = vtgen(*args[:-3], "--op", "sin", "--no-worker")
    start(out, sys.executable)
    try:
        warm = vtgen(*args[:-3], "--op", "sin")
    finally:
        stop(out)
    errors = [[line for line in r.stderr.splitlines() if ": error: " in line] for r in (once, warm)]
    assert once.returncode == warm.returncode == 1 and errors[0] == errors[1] and errors[0], once.stderr[-3000:]
    assert len(errors[0]) == 1, errors  # the entry stopped at its first failed check (its float64 backward)
