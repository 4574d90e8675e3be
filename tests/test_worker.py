"""The warm gradcheck worker (vtgen_build/worker) and ``check --gradcheck --watch``.

The protocol tests start a worker that imports only ``json`` and runs stand-in scripts (no torch):
each child is forked from a clean parent, so a crash, a hang, an ``exit`` or a leaked global costs
that child only.  The last test watches the real yaml with the real torch: an edit, then its
revert, give FAILED then OK.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import edited_checkout, vtgen
from tests.test_supervise import FAKE, Asked
from vtgen_build.base.errors import VtgenError
from vtgen_build.gradcheck.records import Entry, read_entries
from vtgen_build.gradcheck.supervise import Child, run_to_end
from vtgen_build.worker import Worker, WorkerGone, client, find, manage, server, start, stop

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
    child = Child(sys.executable, (str(script),), *paths, "the stand-in process", "entry", 1, worker=warm)
    run_to_end(child, lambda skip: Asked({"entries": ["a", "die-7", "b"], "skip": skip}))
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
    monkeypatch.setattr(manage, "package_digest", lambda: "another version")
    assert find(tmp_path / "out", sys.executable) is None
    assert "was stale (vtgen_build changed since it started): stopped" in capsys.readouterr().err
    assert not (warm.directory / "socket").exists()


def test_versions_are_read_once_for_their_holder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A run (or a watch loop) holds one ``Versions``: vtgen_build's digest is read at its first ask and kept
    (the version the process runs); torch's installation digest again only when a file's signature changed.
    Nothing is kept between holders: a new run reads both again."""
    reads: list[str] = []
    monkeypatch.setattr(manage, "package_digest", lambda: reads.append("package") or f"v{len(reads)}")
    real = server._digest_of
    monkeypatch.setattr(server, "_digest_of", lambda *key: reads.append("torch") or real(*key))
    package = tmp_path / "torch"
    package.mkdir()
    (package / "__init__.py").write_text("version = 1\n", encoding="utf-8")
    held = manage.Versions()
    first = (held.package, held.installation(str(package)))
    assert (held.package, held.installation(str(package))) == first and reads == ["package", "torch"]
    (package / "__init__.py").write_text("version = 22\n", encoding="utf-8")  # another size: another signature
    assert held.installation(str(package)) != first[1] and reads == ["package", "torch", "torch"]
    assert held.package_changed() and held.package == first[0]  # still the version this process runs
    fresh = manage.Versions()
    assert fresh.package != first[0] and fresh.installation(str(package)) == held.installation(str(package))
    assert reads.count("torch") == 3 and not manage.Versions().package_changed()  # asked nothing yet


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
    monkeypatch.setattr(manage.os, "getuid", lambda: os.geteuid() + 1)
    with pytest.raises(VtgenError, match="belongs to user"):
        find(tmp_path / "out", sys.executable)


def test_a_leftover_socket_of_a_dead_worker_reads_as_none(tmp_path: Path) -> None:
    worker = start(tmp_path / "out", sys.executable, ("json",), tmp_path)
    os.kill(worker.pid, signal.SIGKILL)
    time.sleep(0.2)
    assert find(tmp_path / "out", sys.executable) is None
    assert not (worker.directory / "socket").exists()


def _gone(pid: int, limit: float) -> bool:
    """Process ``pid`` ended (a zombie counts: nobody may have reaped it yet) within ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from vtgen_build.cli.entry import main

    code = main(list(args))
    said = capsys.readouterr()
    return code, said.out + said.err


def test_an_edit_of_any_module_the_worker_imported_makes_it_stale_and_a_new_one_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A private package deep in what the worker preloads (as torch/autograd/gradcheck.py or the OpInfo
    database is in torch): an edit is seen, the worker is replaced, and its children run the new code."""
    deep = tmp_path / "site" / "vtpriv" / "inner" / "deep.py"
    deep.parent.mkdir(parents=True)
    for init in (deep.parent / "__init__.py", deep.parent.parent / "__init__.py"):
        init.write_text("", encoding="utf-8")
    deep.write_text("VALUE = 1\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path / 'site'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    (tmp_path / "show.py").write_text("import vtpriv.inner.deep as d\nprint(d.VALUE)\n", encoding="utf-8")
    out = tmp_path / "out"
    said = tmp_path / "said.txt"
    try:
        worker = start(out, sys.executable, ("vtpriv.inner.deep",), tmp_path)
        assert worker.spawn([str(tmp_path / "show.py")], said, {}).wait(timeout=60) == 0
        assert said.read_text(encoding="utf-8") == "1\n"
        assert find(out, sys.executable) is not None  # a look at the files: the next one is FRESH seconds later
        deep.write_text("VALUE = 2\n", encoding="utf-8")  # the same size: only its time and inode tell
        time.sleep(server.FRESH)
        assert find(out, sys.executable) is None
        assert f"({deep} changed since it imported it): stopped" in capsys.readouterr().err
        worker = start(out, sys.executable, ("vtpriv.inner.deep",), tmp_path)
        assert worker.spawn([str(tmp_path / "show.py")], said, {}).wait(timeout=60) == 0
        assert said.read_text(encoding="utf-8") == "2\n"
    finally:
        stop(out)


def test_a_silent_worker_is_reported_bypassed_and_killed_by_stop(
    warm: Worker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker that does not answer (SIGSTOP: stuck, swapped out, under a debugger): status says so,
    a check notes it and runs without it, and ``stop`` kills it and says so, never "stopped"."""
    monkeypatch.setattr(client, "ANSWER", 1.0, raising=False)
    monkeypatch.setattr(manage, "ANSWER", 1.0, raising=False)
    out = tmp_path / "out"
    os.kill(warm.pid, signal.SIGSTOP)
    try:
        code, said = _cli(capsys, "worker", "status", "--out", str(out))
        assert code == 3 and f"(process {warm.pid}) does not answer" in said and "error" not in said, said
        assert find(out, sys.executable) is None
        assert "does not answer" in capsys.readouterr().err
        output = tmp_path / "fallback.txt"  # a check that found it before it went silent
        assert client.run_python(warm, sys.executable, [str(tmp_path / "script.py"), "ok"], output) == 0
        note = capsys.readouterr().err
        assert f"note: the gradcheck worker in {warm.directory} did not start the child (no answer within 1s)" in note
        assert "going on without it" in note and "error" not in note and output.read_text(encoding="utf-8")
        code, said = _cli(capsys, "worker", "stop", "--out", str(out))
        assert code == 0 and f"killed the gradcheck worker of {out} (process {warm.pid}) with SIGKILL" in said, said
        assert _gone(warm.pid, 10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(warm.pid, signal.SIGKILL)


SPIN_ONCE = """
import json, os, sys
request = json.load(open(sys.argv[1]))
marker = os.path.join(os.path.dirname(sys.argv[1]), "spun.txt")
with open(sys.argv[2], "a") as out:
    for name in request["entries"]:
        if name in request["skip"]:
            continue
        out.write(json.dumps({"start": name}) + "\\n")
        out.flush()
        if name == "spin" and not os.path.exists(marker):  # the first time only, in the worker
            with open(marker + ".tmp", "w") as m:
                m.write(str(os.getpid()))
            os.rename(marker + ".tmp", marker)
            while True:
                pass
        out.write(json.dumps({"entry": name, "checks": []}) + "\\n")
"""


def test_a_worker_killed_mid_check_takes_its_child_along_and_the_check_goes_on_without_it(
    warm: Worker, tmp_path: Path
) -> None:
    """``kill -9`` of the worker while its child spins: the child dies with it (not past any limit), and
    the supervisor runs the entries again in a new Python: no error, no entry blamed."""
    script = tmp_path / "spin_once.py"
    script.write_text(SPIN_ONCE, encoding="utf-8")
    paths = (tmp_path / "request.json", tmp_path / "results.jsonl", tmp_path / "stderr.txt")
    child = Child(sys.executable, (str(script),), *paths, "the stand-in process", "entry", 60, worker=warm)
    marker = tmp_path / "spun.txt"

    def kill_the_worker_once_it_spins() -> None:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(warm.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_the_worker_once_it_spins)
    killer.start()
    started = time.monotonic()
    run_to_end(child, lambda skip: Asked({"entries": ["a", "spin", "b"], "skip": skip}))
    killer.join()
    assert read_entries(child.results) == [Entry("a"), Entry("spin"), Entry("b")]
    assert time.monotonic() - started < 30  # not the entry's 60 s limit: the loss was seen at once
    assert _gone(int(marker.read_text(encoding="utf-8")), 5)  # the spinning child died with its worker


def test_a_client_that_goes_takes_its_child_along(warm: Worker, tmp_path: Path) -> None:
    """The check process killed (its connection closes): the worker kills the child it ran for it."""
    process = warm.spawn([str(tmp_path / "script.py"), "hang"], tmp_path / "hang.txt", {})
    process.conn.close()
    assert _gone(process.pid, 10)
    assert _run(warm, tmp_path, "ok")[0] == 0


def test_stop_during_a_check_keeps_its_diagnosis_and_other_checks_go_on_without_the_worker(
    warm: Worker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``worker stop`` while a check's child hangs: the worker takes no new work at once (its socket goes),
    so a second check runs without it (no connection error); the hanging entry is still diagnosed as
    hung, the entries after it run in a new Python, and ``stop`` reports the worker's end only once it left."""
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE, encoding="utf-8")
    paths = (tmp_path / "request.json", tmp_path / "results.jsonl", tmp_path / "stderr.txt")
    child = Child(sys.executable, (str(script),), *paths, "the stand-in process", "entry", 1, worker=warm)
    checking = threading.Thread(
        target=run_to_end, args=(child, lambda skip: Asked({"entries": ["a", "hang", "b"], "skip": skip}))
    )
    checking.start()
    _wait_for_text(child.results, '"start": "hang"', 60)
    stopped: list[object] = []
    stopping = threading.Thread(target=lambda: stopped.append(stop(tmp_path / "out")))
    stopping.start()
    _wait_for_gone(warm.directory / "socket", 10)
    assert find(tmp_path / "out", sys.executable) is None  # a second check: no worker, no error
    output = tmp_path / "second.txt"
    assert client.run_python(warm, sys.executable, [str(tmp_path / "script.py"), "ok"], output) == 0
    checking.join(60)
    stopping.join(60)
    hung = "the process hung in sample 3: no result within the per-entry limit of 1s (--timeout); killed"
    assert read_entries(child.results) == [Entry("a"), Entry("hang", aten="HANG", error=hung, fatal=True), Entry("b")]
    assert _gone(warm.pid, 10)
    assert [getattr(s, "how", s) for s in stopped] == ["stopped"]


def _wait_for_text(path: Path, text: str, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(encoding="utf-8"):
            return
        time.sleep(0.05)
    raise AssertionError(f"no {text!r} in {path} within {limit}s")


def _wait_for_gone(path: Path, limit: float) -> None:
    deadline = time.monotonic() + limit
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not path.exists(), f"{path} still there after {limit}s"


def test_the_worker_leaves_with_its_directory_and_takes_its_children_along(warm: Worker, tmp_path: Path) -> None:
    """``rm -rf`` of --out (a clean, a cache reset): no orphan daemon, no orphan child."""
    process = warm.spawn([str(tmp_path / "script.py"), "hang"], tmp_path / "hang.txt", {})
    shutil.rmtree(tmp_path / "out")
    assert _gone(warm.pid, 10)
    assert _gone(process.pid, 10)
    with pytest.raises(WorkerGone, match="ended while its child ran"):
        process.wait(timeout=10)


def test_an_idle_worker_leaves(tmp_path: Path) -> None:
    worker = start(tmp_path / "out", sys.executable, ("json",), tmp_path, idle=1)
    assert _gone(worker.pid, 15)
    assert find(tmp_path / "out", sys.executable) is None
    assert not (worker.directory / "pid").exists()


def test_an_interpreter_that_dies_at_once_is_reported_at_once_with_its_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = tmp_path / "oldpy.sh"
    old.write_text("#!/bin/sh\necho 'SyntaxError: this interpreter is too old' >&2\nexit 1\n", encoding="utf-8")
    old.chmod(0o755)
    monkeypatch.setattr(manage, "STARTUP", 30)  # before the fix: a failure in 30 s, not a hang of 300
    started = time.monotonic()
    with pytest.raises(VtgenError, match="exited with status 1:\nSyntaxError: this interpreter is too old"):
        start(tmp_path / "out", str(old), ("json",), tmp_path)
    assert time.monotonic() - started < 10


def test_a_pid_file_read_before_it_is_written_is_waited_for(tmp_path: Path) -> None:
    """The state a loaded machine shows: the pid file there, still empty, while the worker starts."""
    slow = tmp_path / "slowpy.sh"
    slow.write_text(f'#!/bin/sh\n: > "$2/pid"\nsleep 1\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    slow.chmod(0o755)
    (tmp_path / "script.py").write_text(SCRIPT, encoding="utf-8")
    out = tmp_path / "out"
    worker = start(out, str(slow), ("json",), tmp_path)
    try:
        assert (worker.directory / "pid").read_text(encoding="utf-8") == str(worker.pid)
        assert _run(worker, tmp_path, "ok")[0] == 0
    finally:
        stop(out)
    assert _gone(worker.pid, 10)


def test_a_start_that_fails_leaves_no_worker_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "slowimport.py").write_text("import time\ntime.sleep(120)\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setattr(manage, "STARTUP", 2)
    out = tmp_path / "out"
    with pytest.raises(VtgenError, match="did not start within 2s"):
        start(out, sys.executable, ("slowimport",), tmp_path)
    assert _gone(int((out / ".vtgen-worker" / "pid").read_text(encoding="utf-8")), 10)


@pytest.mark.parametrize(
    "line",
    [
        b'{"run": {"argv": 5}}',
        b'{"run": {"argv": [], "stderr": "x", "env": {}, "cwd": "/"}}',
        b'{"run": {"argv": [5], "stderr": "x", "env": {}, "cwd": "/"}}',
        b'{"run": {"argv": ["x"], "stderr": "x", "env": {"A": 1}, "cwd": "/"}}',
        b'{"run": {"argv": ["x"], "stderr": "x\\u0000", "env": {}, "cwd": "/"}}',
        b'{"run": {"argv": ["x"], "stderr": "x", "env": {}, "cwd": "/", "more": 1}}',
        b'{"run": 5}',
        b'{"launch": 1}',
        b"[1, 2]",
        b"not json",
    ],
)
def test_a_malformed_request_is_refused_and_the_worker_serves_on(warm: Worker, tmp_path: Path, line: bytes) -> None:
    conn = client.connect(warm.directory)
    with conn:
        conn.sendall(line + b"\n")
        conn.settimeout(10)
        answer = conn.recv(4096)
    assert answer.startswith(b'{"error": '), answer
    assert _run(warm, tmp_path, "ok") == (0, "child ok yes\n")


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
    """``check --gradcheck --watch --op sin --tier both``: OK, then a wrong formula (cos -> sin) FAILED at
    its line, the Python tier's verdict first (marked), then the compiled tier's; then the revert OK again;
    Ctrl-C ends it with 130 and stops the worker it started.  Then the wrong formula one-shot and through a
    worker: the same errors, the same exit status."""
    text = real_yaml.derivatives.read_text(encoding="utf-8")
    right = "self: grad * self.cos().conj()"
    assert text.count(right) == 1
    line = text[: text.index(right)].count("\n") + 1
    checkout = edited_checkout(real_yaml, tmp_path / "pt", ())
    out, log = tmp_path / "out", tmp_path / "watch.txt"
    args = ["check", "--pytorch-root", str(checkout.root), "--out", str(out), "--gradcheck", "--watch", "--op", "sin"]
    both = [*args, "--tier", "both"]
    with open(log, "w", encoding="utf-8") as said:
        process = subprocess.Popen([sys.executable, "-m", "vtgen_build", *both], stdout=said, stderr=said, text=True)
    try:
        ok = _wait_for(log, "watch: OK", 1, process, 900)
        assert ok.index("[python tier] sin: passed") < ok.index("vtgen-build check --gradcheck: ") < ok.index("watch:")
        assert find(out, sys.executable) is not None  # the worker it started is up
        checkout.derivatives.write_text(text.replace(right, "self: grad * self.sin().conj()"), encoding="utf-8")
        failed = _wait_for(log, "watch: FAILED", 1, process, 900)
        python = failed.index(f"derivatives.yaml:{line}: error: [python tier] gradcheck failed for sin")
        assert python < failed.index(f"derivatives.yaml:{line}: error: gradcheck failed for sin"), failed[-3000:]
        assert "stopped at the first failure confirmed as ours" in failed  # the verdict did not wait for the rest
        assert "not reached: the run stopped at the first failure" in failed  # sin_, never "no OpInfo entry"
        checkout.derivatives.write_text(text, encoding="utf-8")
        reverted = _wait_for(log, "watch: OK", 2, process, 900)
        assert reverted.count("[python tier] sin: passed") == 2, reverted[-3000:]
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


_STARTER = """
import sys, time
from pathlib import Path
from vtgen_build.worker import start
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.001)
print(start(Path(sys.argv[2]), sys.executable, ("slowstart",), Path(sys.argv[3])).pid, flush=True)
"""


def _workers_of(directory: Path) -> list[int]:
    """The live (not zombie) server processes of worker directory ``directory``."""
    found = []
    for entry in Path("/proc").iterdir():
        pid = int(entry.name) if entry.name.isdigit() else 0
        if pid and manage._alive(pid) and manage._is_worker(pid, directory):
            found.append(pid)
    return found


def test_two_starts_at_one_instant_leave_one_worker_both_name(tmp_path: Path) -> None:
    """Two `worker start` on one --out at the same instant (a start is a second long: its module takes
    that to import): exactly one worker lives, and both starts name it.  Three rounds."""
    (tmp_path / "slowstart.py").write_text("import time\ntime.sleep(1)\n", encoding="utf-8")
    (tmp_path / "starter.py").write_text(_STARTER, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).parents[1])])}
    for round_ in range(3):
        out, go = tmp_path / f"out{round_}", tmp_path / f"go{round_}"
        argv = [sys.executable, str(tmp_path / "starter.py"), str(go), str(out), str(tmp_path)]
        starters = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        time.sleep(0.5)  # both wait at the line
        go.touch()
        said = [s.communicate(timeout=60)[0].strip() for s in starters]
        try:
            assert [s.returncode for s in starters] == [0, 0], said
            assert said[0] == said[1] and said[0].isdigit(), said
            assert _workers_of(out / ".vtgen-worker") == [int(said[0])], said
        finally:
            stop(out)
            for pid in _workers_of(out / ".vtgen-worker"):  # a second worker, before the fix
                os.kill(pid, signal.SIGKILL)
