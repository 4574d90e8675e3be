"""The gradcheck children are run to the end past the entries that crash them (gradcheck/supervise.py).

A stand-in child (plain Python, no torch) speaks the children's protocol: a start line before
each entry, a row after it; entries named ``die-N`` kill it with exit code N after their start,
``hang`` never ends, ``quit`` exits with status 0, ``oom`` dies as C++ does of an uncaught
``std::bad_alloc``.  (tests/test_gradcheck_crashes.py does the same with real kernels.)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.gradcheck.records import Entry, read_entries
from vtgen_build.gradcheck.supervise import Child, run_to_end


class Asked:
    """A test child's request: a record whose JSON form is this object."""

    def __init__(self, data: dict[str, object]) -> None:
        self.data = data

    def to_json(self) -> dict[str, object]:
        return self.data


FAKE = """
import json, os, sys
request = json.load(open(sys.argv[1]))
with open(sys.argv[2], "a") as out:
    with open(os.path.join(os.path.dirname(sys.argv[1]), "starts.txt"), "a") as log:
        log.write("start\\n")
    if request["entries"] == ["stall"]:
        while True:
            pass
    if request["entries"] == ["never"]:
        print("no torch here", file=sys.stderr)
        sys.exit(4)
    for name in request["entries"]:
        if name in request["skip"]:
            continue
        out.write(json.dumps({"start": name, "aten": name.upper()}) + "\\n")
        out.write(json.dumps({"at": "sample 3"}) + "\\n")
        out.flush()
        if name.startswith("die-"):
            os._exit(int(name[4:]))
        if name == "hang":
            while True:
                pass
        if name == "quit":
            os._exit(0)
        if name == "oom":
            print("terminate called after throwing an instance of 'std::bad_alloc'", file=sys.stderr)
            print("  what():  std::bad_alloc", file=sys.stderr, flush=True)
            os.abort()
        out.write(json.dumps({"entry": name, "checks": []}) + "\\n")
if request.get("exit"):
    print("crashed at exit", file=sys.stderr)
    sys.exit(request["exit"])
"""


def _child(tmp_path: Path) -> Child:
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE, encoding="utf-8")
    paths = (tmp_path / "request.json", tmp_path / "results.jsonl", tmp_path / "stderr.txt")
    return Child(sys.executable, (str(script),), *paths, "the stand-in process", "entry", 1)


def test_each_crashing_entry_gets_an_error_row_and_the_rest_still_run(tmp_path: Path) -> None:
    child = _child(tmp_path)
    child.results.write_text('{"entry": "stale", "checks": []}\n', encoding="utf-8")  # a previous run's
    entries = ["a", "die-7", "b", "die-9", "c"]
    run_to_end(child, lambda skip: Asked({"entries": entries, "skip": skip}))
    ended = "before writing the entry's result"
    assert read_entries(child.results) == [
        Entry("a"),
        Entry("die-7", aten="DIE-7", error=f"the process exited (status 7) in sample 3 {ended}", fatal=True),
        Entry("b"),
        Entry("die-9", aten="DIE-9", error=f"the process exited (status 9) in sample 3 {ended}", fatal=True),
        Entry("c"),
    ]
    assert (tmp_path / "starts.txt").read_text(encoding="utf-8").count("start") == 3  # two restarts


def test_a_child_that_dies_before_any_entry_is_an_error_with_what_it_printed(tmp_path: Path) -> None:
    child = _child(tmp_path)
    with pytest.raises(VtgenError, match=r"the stand-in process failed \(exit 4\) before running any entry:\nno torch"):
        run_to_end(child, lambda skip: Asked({"entries": ["never"], "skip": skip}))


def test_a_child_that_dies_after_its_last_entry_is_an_error_not_a_restart_loop(tmp_path: Path) -> None:
    child = _child(tmp_path)
    with pytest.raises(VtgenError, match=r"failed \(exit 6\) after its last entry, with none left:\ncrashed at exit"):
        run_to_end(child, lambda skip: Asked({"entries": ["a", "b"], "skip": skip, "exit": 6}))
    assert read_entries(child.results) == [Entry("a"), Entry("b")]  # its results stay readable


def test_the_childs_loop_writes_a_start_then_rows_or_one_error_row(tmp_path: Path) -> None:
    import io
    import json

    from vtgen_build.gradcheck_child.child_loop import Run, run_entries

    def fails() -> list[Entry]:
        raise ValueError("no\n  such   sample")

    def sleeps() -> list[Entry]:
        time.sleep(5)
        return [Entry("slow")]

    out = io.StringIO()
    entries: list[tuple[str, Run]] = [("ok", lambda: [Entry("ok")]), ("bad", fails), ("slow", sleeps)]
    run_entries(out, entries, timeout=1, ops={"slow": "slow_op"})
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"start": "ok"},
        {"entry": "ok"},
        {"start": "bad"},
        {"entry": "bad", "error": "ValueError: no such sample"},
        {"start": "slow", "aten": "slow_op"},
        {"entry": "slow", "aten": "slow_op", "error": "timed out after 1s (the per-entry limit)", "fatal": True},
    ]


def test_an_entry_that_hangs_outside_python_is_killed_by_the_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in has no alarm of its own (as a kernel spinning in C++ holds off the child's): the parent
    kills it at the limit (1 s here) plus the grace, and the entry after it still runs."""
    from vtgen_build.gradcheck import supervise

    monkeypatch.setattr(supervise, "GRACE", 0.5)
    child = _child(tmp_path)
    start = time.monotonic()
    run_to_end(child, lambda skip: Asked({"entries": ["a", "hang", "b"], "skip": skip}))
    assert time.monotonic() - start < 10
    hung = "the process hung in sample 3: no result within the per-entry limit of 1s (--timeout); killed"
    assert read_entries(child.results) == [Entry("a"), Entry("hang", aten="HANG", error=hung, fatal=True), Entry("b")]


def test_a_child_that_exits_0_inside_an_entry_fails_that_entry(tmp_path: Path) -> None:
    child = _child(tmp_path)
    run_to_end(child, lambda skip: Asked({"entries": ["quit", "b"], "skip": skip}))
    quit = "the process exited (status 0) in sample 3 before writing the entry's result"
    assert read_entries(child.results) == [Entry("quit", aten="QUIT", error=quit, fatal=True), Entry("b")]


def test_a_child_dying_of_bad_alloc_says_so(tmp_path: Path) -> None:
    child = _child(tmp_path)
    run_to_end(child, lambda skip: Asked({"entries": ["oom"], "skip": skip}))
    (entry,) = read_entries(child.results)
    assert entry.fatal and entry.error == (
        "the process died of SIGABRT (aborted) in sample 3: "
        "terminate called after throwing an instance of 'std::bad_alloc' what(): std::bad_alloc"
    )


def test_a_child_that_hangs_before_any_entry_is_killed_and_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library whose loading spins (a static initializer in C++): start-up has a limit too."""
    from vtgen_build.gradcheck import supervise

    monkeypatch.setattr(supervise, "STARTUP", 1)
    child = _child(tmp_path)
    with pytest.raises(VtgenError, match=r"the stand-in process was killed, silent past its time limit, before run"):
        run_to_end(child, lambda skip: Asked({"entries": ["stall"], "skip": skip}))
