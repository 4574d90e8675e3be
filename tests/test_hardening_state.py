"""Untrusted state in the output directory (issue 15, defects 1, 2, 6, 7 and 8).

A CI cache restores build directories between branches, so the cache, the manifest and the
no-op record are read as hostile: reading them never runs code, a damaged one is "no cache" (a
clean regeneration whose bytes equal a fresh run's), a tampered manifest deletes nothing outside
``--out`` nor anything the generator could not have written, and what a run writes describes
exactly its own outputs even when another run interleaves.
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import faulty
from vtgen_build.base import store, write
from vtgen_build.cli import entry
from vtgen_build.engine import noop as quick
from vtgen_build.engine.generate import MANIFEST

CACHE = ".vtgen-cache"

NATIVE = """\
- func: sin(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CPU: sin

- func: cos(Tensor self) -> Tensor
  variants: function, method
  dispatch:
    CPU: cos

- func: mul.Tensor(Tensor self, Tensor other) -> Tensor
  variants: function, method
  dispatch:
    CPU: mul
"""
DERIVATIVES = """\
- name: sin(Tensor self) -> Tensor
  self: grad * self.cos()
  result: auto_element_wise

- name: cos(Tensor self) -> Tensor
  self: grad * -self.sin()
  result: auto_element_wise

- name: mul.Tensor(Tensor self, Tensor other) -> Tensor
  self: grad * other
  other: grad * self
  result: other_t * self_p + self_t * other_p
"""
EDITED = DERIVATIVES.replace("grad * self.cos()", "grad * self.cos() * 2")


class Dir:
    """Inputs and an output directory under ``root``; ``run`` is the console entry point, in-process."""

    def __init__(self, root: Path, derivatives: str = DERIVATIVES, *extra: str) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root, self.out = root, root / "out"
        (root / "native_functions.yaml").write_text(NATIVE)
        self.edit(derivatives)
        self.args = ["generate", "--native-functions", str(root / "native_functions.yaml"), "--derivatives",
                     str(root / "derivatives.yaml"), "--out", str(self.out), *extra]  # fmt: skip

    def edit(self, text: str) -> None:
        (self.root / "derivatives.yaml").write_text(text)

    def run(self, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
        code = entry.main([*self.args, *extra])
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        return code, captured.out + captured.err

    def outputs(self) -> dict[str, bytes]:
        return {
            str(p.relative_to(self.out)): p.read_bytes()
            for p in self.out.rglob("*")
            if p.is_file() and not p.relative_to(self.out).parts[0].startswith(".")
        }

    def state_files(self) -> list[Path]:
        return sorted([self.out / MANIFEST, self.out / quick.RECORD, *(self.out / CACHE).iterdir()])


def _clean(root: Path, capsys: pytest.CaptureFixture[str], derivatives: str, *extra: str) -> dict[str, bytes]:
    d = Dir(root, derivatives, *extra)
    assert d.run(capsys)[0] == 0
    return d.outputs()


class _Trap:
    """Unpickling one of these creates ``marker``: proof that reading the cache ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_hostile_pickles_in_the_cache_are_never_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = Dir(tmp_path / "d")
    assert d.run(capsys)[0] == 0
    marker = tmp_path / "pwned"
    trap = pickle.dumps(_Trap(marker))
    for name in ("index.pickle", "functions.pickle", *(f"shard_{k}.pickle" for k in range(10))):
        (d.out / CACHE / name).write_bytes(trap)
    (d.out / ".vtgen-cache.pickle").write_bytes(trap)
    exits = pickle.dumps(SystemExit)  # a class: loads to SystemExit itself
    for name in ("index", "functions_0", "shard_0"):
        (d.out / CACHE / name).write_bytes(store.dumps("cache_index", {"token": exits.hex()}))
    d.edit(EDITED)
    code, said = d.run(capsys, "--explain")
    assert code == 0, said
    assert not marker.exists()
    assert d.outputs() == _clean(tmp_path / "clean", capsys, EDITED)


def test_a_well_hashed_but_wrong_cache_is_no_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Right hash, wrong shapes (a forger, or a future format): every field is checked, none trusted."""
    d = Dir(tmp_path / "d")
    assert d.run(capsys)[0] == 0
    cache = d.out / CACHE
    for path in [d.out / MANIFEST, d.out / quick.RECORD, cache / "index", cache / "functions_0", cache / "shard_0"]:
        head = path.read_bytes().partition(b" ")[2].partition(b" ")[2].partition(b" ")[0].decode()
        for payload in ([], {"token": 1}, {"kernels": [[1, 2]]}):
            path.write_bytes(store.dumps(head, payload))
            d.edit(EDITED)
            assert d.run(capsys)[0] == 0
            assert d.outputs() == _clean(tmp_path / "clean", capsys, EDITED)
            d.edit(DERIVATIVES)
            assert d.run(capsys)[0] == 0


STATE_FILE = st.sampled_from(["manifest", "record", "index", "functions", "shard"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.lists(STATE_FILE, min_size=1, max_size=3), flips=st.lists(st.integers(0, 10**6), max_size=6),
       edit=st.booleans(), cut=st.booleans())  # fmt: skip
def test_flipped_bytes_in_any_state_file_give_a_clean_runs_output(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    which: list[str],
    flips: list[int],
    edit: bool,
    cut: bool,
) -> None:
    root = tmp_path_factory.mktemp("flip")
    d = Dir(root / "d")
    assert d.run(capsys)[0] == 0
    names = {"manifest": d.out / MANIFEST, "record": d.out / quick.RECORD, "index": d.out / CACHE / "index"}
    pieces = {
        "shard": sorted((d.out / CACHE).glob("shard_*")),
        "functions": sorted((d.out / CACHE).glob("functions_*")),
    }
    for i, name in enumerate(which):
        path = names.get(name) or pieces[name][(flips[0] if flips else i) % len(pieces[name])]
        data = bytearray(path.read_bytes())
        for at in flips:
            data[at % len(data)] ^= 1 << (at % 8)
        path.write_bytes(bytes(data[: len(data) // 2] if cut else data))
    text = EDITED if edit else DERIVATIVES
    d.edit(text)
    code, said = d.run(capsys)
    assert code == 0, said
    assert d.outputs() == _clean(root / "clean", capsys, text)


def test_the_function_codec_round_trips_every_real_native_function(real_model) -> None:  # type: ignore[no-untyped-def]
    from vtgen_build.engine.cache import decode_function, encode_function, native_fields_covered

    assert native_fields_covered()
    for f in real_model.native_functions:
        back = decode_function(json.loads(json.dumps(encode_function(f))))
        assert back == f and back.text == f.text


def _tamper_manifest(out: Path, extra: list[str]) -> None:
    """Add ``extra`` to the manifest's files, in whichever format the manifest has (hash kept valid)."""
    data = (out / MANIFEST).read_bytes()
    payload = store.loads(data, "manifest")
    if isinstance(payload, dict):
        files = payload["files"]
        assert isinstance(files, list)
        files += [[rel, 1, "0" * 64, "-"] for rel in extra]
        (out / MANIFEST).write_bytes(store.dumps("manifest", payload))
    else:  # the JSON manifest before store files
        old = json.loads(data)
        old["files"].update({rel: [1, "0" * 64] for rel in extra})
        (out / MANIFEST).write_text(json.dumps(old))


def test_a_tampered_manifest_deletes_nothing_outside_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = Dir(tmp_path / "d")
    assert d.run(capsys)[0] == 0
    victims = tmp_path / "victims"
    victims.mkdir()
    (victims / "victim.txt").write_text("keep")
    (victims / "Functions.h").write_text("keep")
    (d.out / "notes.txt").write_text("keep: the generator never writes a .txt")
    (d.out / "linked").symlink_to(victims)
    extra = ["../../victims/victim.txt", str(victims / "victim.txt"), "linked/Functions.h", "notes.txt"]
    _tamper_manifest(d.out, extra)
    assert d.run(capsys, "--shards", "3")[0] == 0  # other settings: a clean run, which removes stale outputs
    assert (victims / "victim.txt").read_text() == "keep"
    assert (victims / "Functions.h").read_text() == "keep"
    assert (d.out / "notes.txt").exists()
    clean = _clean(tmp_path / "clean", capsys, DERIVATIVES, "--shards", "3")
    assert {rel: data for rel, data in d.outputs().items() if rel in clean} == clean
    # (the rejected manifest no longer tells which old outputs are stale: those stay, harmlessly)


def test_removing_outputs_checks_names_and_containment(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    (out / "vtgen_decls").mkdir(parents=True)
    elsewhere.mkdir()
    for p in (out / "Functions_3.cpp", out / "vtgen_decls" / "ops.inc", elsewhere / "Functions.h", out / "a.txt"):
        p.write_text("x")
    (out / "sub").symlink_to(elsewhere)
    asked = ["Functions_3.cpp", "vtgen_decls/ops.inc", "sub/Functions.h", "../elsewhere/Functions.h", "a.txt",
             "/etc/passwd", "vtgen_decls/../../elsewhere/Functions.h"]  # fmt: skip
    assert write.remove_outputs(out, asked) == ("Functions_3.cpp", "vtgen_decls/ops.inc")
    assert (elsewhere / "Functions.h").exists() and (out / "a.txt").exists()


def test_the_stale_temporary_sweep_does_not_follow_links(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = Dir(tmp_path / "d")
    assert d.run(capsys)[0] == 0
    user = tmp_path / "user"
    user.mkdir()
    for name in (".notes.tmp", ".Functions.h.vtgen.tmp", ".x.1.ab.vtgen.tmp"):
        (user / name).write_text("mine")
    (d.out / "link").symlink_to(user)
    (d.out / ".Functions.h.123.deadbeef.vtgen.tmp").write_text("stale")  # a killed run's
    d.edit(EDITED)
    assert d.run(capsys)[0] == 0
    assert sorted(p.name for p in user.iterdir()) == [".Functions.h.vtgen.tmp", ".notes.tmp", ".x.1.ab.vtgen.tmp"]
    assert not (d.out / ".Functions.h.123.deadbeef.vtgen.tmp").exists()


def test_a_same_size_hand_edit_of_an_output_is_repaired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = Dir(tmp_path / "d")
    assert d.run(capsys)[0] == 0
    good = d.outputs()
    target = next(p for p in sorted(d.out.glob("VariableType_*.cpp")) if b"sin" in p.read_bytes())
    data = target.read_bytes()
    target.write_bytes(data.replace(b"sin", b"nis", 1))  # same size
    assert target.stat().st_size == len(data)
    code, said = d.run(capsys)
    assert code == 0 and "up to date" not in said, said
    assert d.outputs() == good
    assert "up to date" in d.run(capsys)[1]  # and the run after that is a no-op again


def test_the_no_op_record_describes_this_runs_outputs_even_when_another_run_interleaves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run A finishes generating; before it could write its record (old code: after the lock), run B,
    with other options, regenerates the same directory.  A's next run must not call B's files up to date."""
    from vtgen_build.cli import commands as cli

    d = Dir(tmp_path / "d")
    real_generate, interleaved = cli.generate, []

    def generate_then_b(*args: object, **kwargs: object) -> object:
        result = real_generate(*args, **kwargs)  # type: ignore[arg-type]
        if not interleaved:
            interleaved.append(True)
            assert cli.main([*d.args, "--shards", "3"]) == 0  # run B, between A's lock and A's record
        return result

    monkeypatch.setattr(cli, "generate", generate_then_b)
    assert d.run(capsys)[0] == 0
    monkeypatch.setattr(cli, "generate", real_generate)
    code, said = d.run(capsys)
    assert code == 0 and "up to date" not in said, said
    assert d.outputs() == _clean(tmp_path / "clean", capsys, DERIVATIVES)


def test_two_writers_of_one_file_never_share_a_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs writing one depfile: the second starts while the first is between write and rename."""
    target = tmp_path / "dep.d"
    real_fault_point, nested = write.fault_point, []

    def second_writer_at_rename(where: str) -> None:
        if where == "write" and not nested:
            nested.append(True)
            write.write_atomic(target, "b: y\n")
        real_fault_point(where)

    monkeypatch.setattr(write, "fault_point", second_writer_at_rename)
    write.write_atomic(target, "a: x\n")  # old code: "cannot write dep.d: No such file or directory"
    assert target.read_text() == "a: x\n"
    assert [p.name for p in tmp_path.iterdir()] == ["dep.d"]


def test_interrupted_record_write_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    out.mkdir()

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(quick.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        quick.record(["generate", "--out", str(out)], str(out), "", [], [])
    monkeypatch.undo()
    assert list(out.iterdir()) == []


def test_a_depfile_cannot_overwrite_an_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = Dir(tmp_path / "d")
    for depfile in (d.out / "Functions.h", d.out / MANIFEST, d.out / "vtgen_decls" / "ops.inc"):
        code, said = d.run(capsys, "--depfile", str(depfile))
        assert code == 1, said
        assert said == f"vtgen-build: error: --depfile {depfile}: that is a file the generator writes in --out\n"
    assert d.run(capsys, "--depfile", str(d.out / "deps.d"))[0] == 0


def test_a_line_break_in_an_input_path_is_refused_for_the_depfile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = Dir(tmp_path / "odd\ndir")
    code, said = d.run(capsys, "--depfile", str(tmp_path / "dep.d"))
    assert code == 1, said
    assert said.startswith("vtgen-build: error: --depfile: a depfile cannot name a path holding a line break")
    assert not (tmp_path / "dep.d").exists()
    assert d.run(capsys)[0] == 0  # without a depfile such a path is fine


def test_record_and_depfile_are_written_under_the_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything a run writes happens while it holds the output directory's lock."""
    import fcntl

    from vtgen_build.cli import commands as cli

    d = Dir(tmp_path / "d")
    seen: list[str] = []
    real_record, real_depfile = quick.record, cli.write_depfile

    def held() -> bool:
        with open(d.out / ".vtgen.lock", "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False

    def record(*args: object) -> None:
        seen.append(f"record locked={held()}")
        real_record(*args)  # type: ignore[arg-type]

    def depfile(*args: object) -> None:
        seen.append(f"depfile locked={held()}")
        real_depfile(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(quick, "record", record)
    monkeypatch.setattr(cli, "write_depfile", depfile)
    assert cli.main([*d.args, "--depfile", str(tmp_path / "dep.d")]) == 0
    assert seen == ["depfile locked=True", "record locked=True"]
    assert os.path.exists(tmp_path / "dep.d")


def test_a_run_waiting_for_the_lock_sees_the_whole_of_the_other_run(tmp_path: Path) -> None:
    """Real processes: A pauses (test hook) holding the lock after writing its outputs and cache; B, with
    other options, starts and waits; A finishes (manifest, record), then B.  A's command rerun afterwards
    must regenerate A's files, not call B's up to date."""
    import subprocess
    import sys
    import time

    d = Dir(tmp_path / "d")
    gate = tmp_path / "gate"
    command = [sys.executable, "-m", "vtgen_build", *d.args]
    a = subprocess.Popen(faulty.command(d.args, pause=f"cache written:{gate}"), stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not gate.exists() and a.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gate.exists(), "run A never reached its pause point"
    b = subprocess.Popen([*command, "--shards", "3"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    assert b.poll() is None, "run B did not wait for A's lock"
    gate.unlink()
    assert a.wait(timeout=60) == 0 and b.wait(timeout=60) == 0
    again = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60)
    assert "up to date" not in again.stdout, again.stdout
    clean = Dir(tmp_path / "clean")
    subprocess.run([sys.executable, "-m", "vtgen_build", *clean.args], check=True, capture_output=True, timeout=60)
    assert d.outputs() == clean.outputs()
