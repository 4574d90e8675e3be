"""The paths that are never wrong, only slower or less covered, each say so in one line (``note:``).

A precompiled header that failed to build (units compile without it), a unit compiled without a
depfile (never cached), a damaged cache index (read as empty), a failed write of the no-op record
(the next run checks in full), reach rows left out (their ops get no captured check).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from vtgen_build.gradcheck.reach import reach_rows

from .conftest import CliRunner, sample_inputs

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
ONE_OP = """\
- func: twice(Tensor self) -> Tensor
"""
ONE_FORMULA = """\
- name: twice(Tensor self) -> Tensor
  self: grad * 2
"""
# a compiler that cannot precompile a header and writes no depfile (as some launchers and wrappers);
# it answers every unit without compiling it: the notes are about what the run does around the
# compiler, and so the second run can take every unit (seven) for the cost of one
WRAPPER = """#!/bin/sh
case " $* " in *" c++-header "*) echo "no precompiled headers here" >&2; exit 1;; esac
exit 0
"""


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_a_check_says_when_it_takes_a_slower_path(run_cli: CliRunner, tmp_path: Path) -> None:
    native, derivatives = tmp_path / "nf.yaml", tmp_path / "d.yaml"
    native.write_text(ONE_OP)
    derivatives.write_text(ONE_FORMULA)
    out = tmp_path / "check"
    args = ["check", "--native-functions", str(native), "--derivatives", str(derivatives)]
    args += ["--namespace", "one", "--shards", "1", "--out", str(out), "--op", "twice"]  # one unit, compiled
    first = run_cli(*args)
    assert first.code == 0 and "note:" not in first.err, first.err  # the usual path says nothing
    (index,) = (out / ".vtgen-check" / "cache").glob("index")
    index.write_bytes(b"damaged")
    wrapper = tmp_path / "cxx"
    wrapper.write_text(WRAPPER)
    wrapper.chmod(0o755)
    second = run_cli(*args[:-2], "--cxx", str(wrapper))  # every unit: a note said per unit would show twice
    assert second.code == 0, second.err
    units = sorted(p.name for p in out.glob("*.cpp"))
    assert len(units) >= 2 and f"[{len(units)}/{len(units)}]" in second.out, (units, second.out)
    notes = [line for line in second.err.splitlines() if line.startswith("vtgen-build: note: ")]
    assert notes[0] == f"vtgen-build: note: the compile cache's index ({index.parent}) was damaged or old: " + (
        "every unit compiles again"
    )
    pch = "the shared includes did not precompile: units compile without the header (slower)"
    assert f"vtgen-build: note: {pch}" in notes
    no_depfile = ": the compiler wrote no depfile, so the unit is not cached"
    unit_notes = {n.removeprefix("vtgen-build: note: ").removesuffix(no_depfile) for n in notes if no_depfile in n}
    assert sorted(unit_notes) == units
    assert len(notes) == len(set(notes)) == len(units) + 2  # each said once, not once per unit


def test_a_failed_noop_record_is_said(run_cli: CliRunner, tmp_path: Path) -> None:
    from vtgen_build.engine.noop import RECORD

    out = tmp_path / "gen"
    (out / RECORD).mkdir(parents=True)  # where the record goes, a directory: it cannot be written
    result = run_cli("generate", *sample_inputs(), "--out", str(out))
    assert result.code == 0, result.err
    assert "vtgen-build: note: the no-op record was not written (" in result.err
    assert "): the next run checks in full" in result.err


def test_reach_rows_left_out_are_counted() -> None:
    rows: list[dict[str, object]] = [
        {"entry": "sin", "forward": ["sin"], "backward": ["cos", "mul"]},
        {"entry": "nn.functional.spin", "error": "the process hung in sample 0", "fatal": True},
        {"entry": "odd", "forward": "sin", "backward": []},  # the wrong shape
        {"start": "sin"},
        {"at": "sample 0"},
    ]
    found, left_out = reach_rows(rows)
    assert found == [["sin", ["sin"], ["cos", "mul"]]]
    assert left_out == "1 entries whose calls failed or ended the process (nn.functional.spin) and " + (
        "1 result rows of the wrong shape"
    )
    assert reach_rows(rows[:1]) == (found, "")
