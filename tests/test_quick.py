"""The no-op fast path (`cli/entry.py` over `engine/noop.py`): it answers only when nothing changed, stays light."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vtgen_build.engine import noop as quick

from .conftest import SAMPLE, sample_inputs


def _workspace(tmp_path: Path) -> list[str]:
    for name in ("native_functions.yaml", "derivatives.yaml", "tags.yaml"):
        shutil.copy(SAMPLE / name, tmp_path / name)
    return ["generate", *sample_inputs(Path()), "--out", "out", "--stamp", "gen.stamp"]


def _run(args: list[str], cwd: Path) -> str:
    """One CLI process; prints whether it got past the fast path (the full CLI imported)."""
    code = (
        "import sys; from vtgen_build.cli.entry import main; rc = main(sys.argv[1:]); "
        "print('FULL' if 'vtgen_build.cli.commands' in sys.modules else 'QUICK', 'yaml' in sys.modules); sys.exit(rc)"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout


def _bump(path: Path) -> None:
    """A new mtime and ctime with the same content."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_an_unchanged_rerun_imports_neither_the_cli_nor_yaml(tmp_path: Path) -> None:
    args = _workspace(tmp_path)
    assert "FULL" in _run(args, tmp_path)
    assert (tmp_path / "out" / quick.RECORD).is_file()
    stamp = tmp_path / "gen.stamp"
    before = stamp.stat().st_mtime_ns
    os.utime(stamp, ns=(0, 0))
    out = _run(args, tmp_path)
    assert "up to date (0 files written)" in out and "QUICK False" in out
    assert stamp.stat().st_mtime_ns >= before  # the fast path still touches --stamp


@pytest.mark.parametrize(
    "change",
    ["edit input", "touch input", "remove output", "edit output", "other option", "other directory"],
)
def test_any_change_falls_through_to_the_full_check(tmp_path: Path, change: str) -> None:
    args = _workspace(tmp_path)
    _run(args, tmp_path)
    cwd = tmp_path
    if change == "edit input":
        with open(tmp_path / "derivatives.yaml", "a") as handle:
            handle.write("# a comment\n")
    elif change == "touch input":
        _bump(tmp_path / "native_functions.yaml")
    elif change == "remove output":
        (tmp_path / "out" / "Functions_0.cpp").unlink()
    elif change == "edit output":
        (tmp_path / "out" / "VariableType_0.cpp").write_text("// edited by hand\n")
    elif change == "other option":
        args = [*args, "--shards", "3"]
    else:
        cwd = tmp_path / "elsewhere"
        cwd.mkdir()
        args = [a if not a.endswith(".yaml") and a not in ("out", "gen.stamp") else f"../{a}" for a in args]
    assert "FULL" in _run(args, cwd)
    assert "QUICK" in _run(args, cwd)  # the full run left a fresh record
    if change in ("remove output", "edit output"):
        assert "// edited by hand" not in (tmp_path / "out" / "VariableType_0.cpp").read_text()
        assert (tmp_path / "out" / "Functions_0.cpp").is_file()


def test_a_failed_run_leaves_no_record(tmp_path: Path) -> None:
    args = _workspace(tmp_path)
    _run(args, tmp_path)
    deriv = tmp_path / "derivatives.yaml"
    good = deriv.read_text()
    deriv.write_text(good + "- name: no_such_op(Tensor self) -> Tensor\n  self: grad\n")
    code = "import sys; from vtgen_build.cli.entry import main; sys.exit(main(sys.argv[1:]))"
    failed = subprocess.run([sys.executable, "-c", code, *args], cwd=tmp_path, capture_output=True, text=True)
    assert failed.returncode == 1 and "derivatives.yaml:" in failed.stderr
    assert not (tmp_path / "out" / quick.RECORD).exists()
    deriv.write_text(good)  # back to the inputs of the last good run: the full check, which finds nothing to do
    assert "FULL" in _run(args, tmp_path)


def test_a_changed_generator_file_is_noticed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    template = tmp_path / "template.cpp"
    template.write_text("one")
    monkeypatch.setattr(quick, "generator_files", lambda: [str(template)])
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    args = ["generate", "--out", str(out)]
    quick.record(args, str(out), "", [], quick.signatures([str(template)]))
    assert quick.up_to_date(args)
    assert not quick.up_to_date([*args, "--explain"])
    template.write_text("two")
    assert not quick.up_to_date(args)
    quick.record(args, str(out), "", [], quick.signatures([str(template)]))
    extra = tmp_path / "new_module.py"
    extra.write_text("")
    monkeypatch.setattr(quick, "generator_files", lambda: [str(template), str(extra)])
    assert not quick.up_to_date(args)  # a generator file appeared


def test_a_torn_or_foreign_record_is_ignored(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    args = ["generate", "--out", str(out)]
    for junk in ("", "vtgen-quick 0\0x", "\0" * 40, "vtgen-quick 1\0" + "\0".join(["a"] * 9)):
        (out / quick.RECORD).write_text(junk)
        assert not quick.up_to_date(args)
    assert not quick.up_to_date(["generate", "--out", str(out), "--out", str(out)])  # ambiguous: full CLI


def test_every_data_file_generation_reads_is_a_generator_file() -> None:
    """The shipped data that decides output (the policies, aten's operator names the AOTI shims step aside
    from) is fingerprinted: a refreshed list is never answered 'up to date' with the old decisions."""
    from vtgen_build.engine.noop import generator_files

    names = {Path(f).name for f in generator_files()}
    assert {"pytorch_policy.yaml", "aten_op_names.txt"} <= names, sorted(n for n in names if "." in n)[:20]
