"""The gradcheck children are run to the end past the entries that crash them (gradcheck/supervise.py).

A stand-in child (plain Python, no torch) speaks the children's protocol: a start line before
each entry, a row after it; entries named ``die-N`` kill it with exit code N after their start.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.gradcheck.records import Entry, read_entries
from vtgen_build.gradcheck.supervise import Child, run_to_end

FAKE = """
import json, os, sys
request = json.load(open(sys.argv[1]))
with open(sys.argv[2], "a") as out:
    with open(os.path.join(os.path.dirname(sys.argv[1]), "starts.txt"), "a") as log:
        log.write("start\\n")
    if request["entries"] == ["never"]:
        print("no torch here", file=sys.stderr)
        sys.exit(4)
    for name in request["entries"]:
        if name in request["skip"]:
            continue
        out.write(json.dumps({"start": name}) + "\\n")
        out.flush()
        if name.startswith("die-"):
            os._exit(int(name[4:]))
        out.write(json.dumps({"entry": name, "checks": []}) + "\\n")
if request.get("exit"):
    print("crashed at exit", file=sys.stderr)
    sys.exit(request["exit"])
"""


def _child(tmp_path: Path) -> Child:
    script = tmp_path / "fake_child.py"
    script.write_text(FAKE, encoding="utf-8")
    paths = (tmp_path / "request.json", tmp_path / "results.jsonl", tmp_path / "stderr.txt")
    return Child(sys.executable, script, *paths, "the stand-in process", "entry")


def test_each_crashing_entry_gets_an_error_row_and_the_rest_still_run(tmp_path: Path) -> None:
    child = _child(tmp_path)
    child.results.write_text('{"entry": "stale", "checks": []}\n', encoding="utf-8")  # a previous run's
    entries = ["a", "die-7", "b", "die-9", "c"]
    run_to_end(child, lambda skip: {"entries": entries, "skip": skip})
    assert read_entries(child.results) == [
        Entry("a"),
        Entry("die-7", error="the process died (exit 7)"),
        Entry("b"),
        Entry("die-9", error="the process died (exit 9)"),
        Entry("c"),
    ]
    assert (tmp_path / "starts.txt").read_text(encoding="utf-8").count("start") == 3  # two restarts


def test_a_child_that_dies_before_any_entry_is_an_error_with_what_it_printed(tmp_path: Path) -> None:
    child = _child(tmp_path)
    with pytest.raises(VtgenError, match=r"the stand-in process failed \(exit 4\) before running any entry:\nno torch"):
        run_to_end(child, lambda skip: {"entries": ["never"], "skip": skip})


def test_a_child_that_dies_after_its_last_entry_is_an_error_not_a_restart_loop(tmp_path: Path) -> None:
    child = _child(tmp_path)
    with pytest.raises(VtgenError, match=r"failed \(exit 6\) after its last entry, with none left:\ncrashed at exit"):
        run_to_end(child, lambda skip: {"entries": ["a", "b"], "skip": skip, "exit": 6})
    assert read_entries(child.results) == [Entry("a"), Entry("b")]  # its results stay readable


def test_the_childs_loop_writes_a_start_then_rows_or_one_error_row(tmp_path: Path) -> None:
    import io
    import json
    import time

    from vtgen_build.gradcheck.child_loop import run_entries

    def fails() -> list[dict[str, object]]:
        raise ValueError("no\n  such   sample")

    def sleeps() -> list[dict[str, object]]:
        time.sleep(5)
        return [{"entry": "slow", "checks": []}]

    out = io.StringIO()
    entries = [("ok", lambda: [{"entry": "ok", "checks": []}]), ("bad", fails), ("slow", sleeps)]
    run_entries(out, entries, timeout=1)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"start": "ok"},
        {"entry": "ok", "checks": []},
        {"start": "bad"},
        {"entry": "bad", "error": "ValueError: no such sample"},
        {"start": "slow"},
        {"entry": "slow", "error": "timed out after 1s"},
    ]
