"""The compiled-artifact cache: every artifact verified by content before use, bounded, one depfile parser.

Real g++ compiles of tiny units against a stand-in torch (empty libraries of torch's names):
forged and truncated objects and libraries are rebuilt, a planted library's constructor never
runs, damaged and stale precompiled headers are rebuilt, paths with spaces work, the cache evicts.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vtgen_build.base import store
from vtgen_build.compile import ArtifactCache, FileDigests, first_error, identify, parse_depfile
from vtgen_build.compile.artifacts import INDEX, KIND
from vtgen_build.compile.jobs import Processes
from vtgen_build.compile.pch import PchBuilder
from vtgen_build.torchlib import BuildSettings, TorchInstall, compile_objects, link_library
from vtgen_build.torchlib.build import CACHE, Session, _precompiled

from .conftest import default_ctrl_c

GXX = shutil.which("g++")
needs_gxx = pytest.mark.skipif(GXX is None, reason="needs g++")

_CONSTRUCTOR = """
#include <cstdio>
__attribute__((constructor)) static void planted() {
  if (FILE* f = std::fopen(MARKER, "w")) { std::fputs("ran", f); std::fclose(f); }
}
extern "C" int vtgen_planted() { return 1; }
"""


def _torch(root: Path) -> TorchInstall:
    """A stand-in torch: an include directory and empty libtorch_cpu/c10/torch libraries."""
    (root / "include").mkdir(parents=True, exist_ok=True)
    (root / "lib").mkdir(exist_ok=True)
    empty = root / "empty.cpp"
    empty.write_text('extern "C" int vtgen_stand_in() { return 0; }\n')
    for name in ("torch_cpu", "c10", "torch"):
        subprocess.run(["g++", "-shared", "-fPIC", str(empty), "-o", str(root / "lib" / f"lib{name}.so")], check=True)
    return TorchInstall(sys.executable, "0.0", root, (root / "include",), root / "lib", True)


def _settings(root: Path, torch: TorchInstall, *flags: str) -> BuildSettings:
    return BuildSettings(identify(GXX or "g++"), torch, root / "build", extra_flags=flags, jobs=2)


_UNITS = [
    ("a", '#include "h.h"\nextern "C" int vtgen_a() { return h(); }\n'),
    ("b", 'extern "C" int vtgen_b() { return 2; }\n'),
]


@needs_gxx
def test_forged_and_truncated_objects_are_rebuilt(tmp_path: Path) -> None:
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.h").write_text("inline int h() { return 1; }\n")
    settings = _settings(tmp_path, _torch(tmp_path / "torch"), f"-isystem{tmp_path / 'inc'}")
    first = compile_objects(settings, _UNITS)
    a, b = (u.object for u in first)
    assert a is not None and b is not None and a != b
    a.write_bytes(a.read_bytes()[:100])  # truncated
    b.write_bytes(a.read_bytes())  # replaced by another file
    again = compile_objects(settings, _UNITS)
    assert [u.compiled for u in again] == [True, True]
    assert [store.file_sha256(u.object) for u in again if u.object] == [u.digest for u in again]
    assert [u.compiled for u in compile_objects(settings, _UNITS)] == [False, False]


@needs_gxx
def test_a_forged_truncated_or_planted_library_is_never_used(tmp_path: Path) -> None:
    """A library with a constructor planted where the cached library was never runs: it is relinked."""
    torch = _torch(tmp_path / "torch")
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.h").write_text("inline int h() { return 1; }\n")
    settings = _settings(tmp_path, torch, f"-I{tmp_path / 'inc'}")
    objects = compile_objects(settings, _UNITS)
    lib, linked = link_library(settings, objects, ["vtgen_a"], "t")
    assert linked and link_library(settings, objects, ["vtgen_a"], "t") == (lib, False)
    good = lib.read_bytes()

    lib.write_bytes(good[: len(good) // 3])  # truncated
    assert link_library(settings, objects, ["vtgen_a"], "t") == (lib, True) and lib.read_bytes() == good

    marker = tmp_path / "constructor-ran"
    planted = tmp_path / "planted.so"
    (tmp_path / "planted.cpp").write_text(_CONSTRUCTOR)
    compile_planted = ["g++", "-shared", "-fPIC", f'-DMARKER="{marker}"', str(tmp_path / "planted.cpp")]
    subprocess.run([*compile_planted, "-o", str(planted)], check=True)
    load = "import ctypes, sys; ctypes.CDLL(sys.argv[1]); print('loaded')"
    # the marker works: loading the planted library runs its constructor
    assert subprocess.run([sys.executable, "-c", load, str(planted)], check=True, capture_output=True).stdout
    assert marker.read_text() == "ran"
    marker.unlink()

    shutil.copy(planted, lib)
    path, linked = link_library(settings, objects, ["vtgen_a"], "t")
    assert (path, linked) == (lib, True) and path.read_bytes() == good
    done = subprocess.run([sys.executable, "-c", load, str(path)], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "loaded" and not marker.exists()


@needs_gxx
def test_a_header_in_a_path_with_spaces_is_tracked(tmp_path: Path) -> None:
    root = tmp_path / "a dir with spaces"
    (root / "my inc").mkdir(parents=True)
    header = root / "my inc" / "h.h"
    header.write_text("inline int h() { return 1; }\n")
    settings = _settings(root, _torch(root / "tor ch"), f"-isystem{root / 'my inc'}")
    assert [u.compiled for u in compile_objects(settings, _UNITS)] == [True, True]
    assert [u.compiled for u in compile_objects(settings, _UNITS)] == [False, False]
    header.write_text("inline int h() { return 2; }\n")
    assert [u.compiled for u in compile_objects(settings, _UNITS)] == [True, False]
    header.write_text("inline int h() { return nope; }\n")
    (failed, _) = compile_objects(settings, _UNITS)
    assert failed.object is None and first_error(failed.diagnostics).startswith(f"{header}:1: error: ")


def test_the_depfile_parser_reads_escapes() -> None:
    text = "o.o: a\\ b.cpp /x/my\\ inc/h.h \\\n  /y/c\\#d.h /z/e$$f.h\n"
    assert parse_depfile(text) == ["a b.cpp", "/x/my inc/h.h", "/y/c#d.h", "/z/e$f.h"]


def test_first_error() -> None:
    assert first_error("x.cpp: In function 'f':\nx.cpp:3:7: error: boom\nx.cpp:4:1: error: later\n") == (
        "x.cpp:3: error: boom"
    )
    assert first_error("/usr/bin/ld: error: cannot find -lfoo\ncollect2: error\n") == (
        "/usr/bin/ld: error: cannot find -lfoo"
    )
    assert first_error("") == "error: (the compiler said nothing)"


def _artifact(cache: ArtifactCache, key: str, files: FileDigests, size: int = 10) -> Path:
    path = cache.place(key, "unit.o")
    path.write_bytes(b"x" * size)
    assert cache.record(key, [], files, path) is not None
    return path


def test_the_cache_is_bounded_least_recently_used_first(tmp_path: Path) -> None:
    files = FileDigests()
    keys = [f"{i:032x}" for i in range(5)]
    cache = ArtifactCache.open(tmp_path, limit=2)
    for key in keys[:3]:
        _artifact(cache, key, files)
    assert len(cache.entries) == 3  # all used by this process: none evicted under it
    later = ArtifactCache.open(tmp_path, limit=2)
    assert later.lookup(keys[0], files) is not None  # now the most recent
    _artifact(later, keys[3], files)
    later.save()
    kept = sorted(d.name for d in tmp_path.iterdir() if d.is_dir())
    assert kept == sorted([keys[0], keys[3]]) and sorted(later.entries) == kept
    small = ArtifactCache.open(tmp_path, limit=10, max_bytes=25)
    _artifact(small, keys[4], files, size=20)
    small.save()
    assert sorted(d.name for d in tmp_path.iterdir() if d.is_dir()) == [keys[4]]  # bytes bound too


def test_a_damaged_or_forged_index_is_no_cache(tmp_path: Path) -> None:
    files = FileDigests()
    cache = ArtifactCache.open(tmp_path)
    _artifact(cache, "a" * 32, files)
    index = tmp_path / INDEX
    data = bytearray(index.read_bytes())
    data[-5] ^= 1
    index.write_bytes(bytes(data))
    assert ArtifactCache.open(tmp_path).entries == {}
    outside = tmp_path.parent / "precious"
    outside.mkdir(exist_ok=True)
    forged = {"paths": [], "entries": {"../precious": {"deps": [], "digest": "", "name": "x", "sha256": "0",
                                                        "size": 0, "used": 1}}}  # fmt: skip
    store.write(index, KIND, forged)
    assert ArtifactCache.open(tmp_path).entries == {}
    assert outside.is_dir()


def _pch(tmp_path: Path, header: Path) -> tuple[PchBuilder, tuple[str, ...]]:
    flags = ("-std=c++17", f"-I{header.parent}")
    cache = ArtifactCache.open(tmp_path / "cache")
    return PchBuilder(identify(GXX or "g++"), flags, "2.13", cache, FileDigests(), Processes()), ('#include "h.h"',)


@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_a_prefix_that_does_not_precompile_is_noted_once_for_two_units(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    builder, _ = _pch(tmp_path, tmp_path / "h.h")
    session = Session(builder.cache, builder.files, builder.processes, builder)
    prefix = ('#include "no_such_header.h"',)  # the real compiler fails on it
    assert _precompiled(session, prefix) == ((), ())  # the first unit
    assert _precompiled(session, prefix) == ((), ())  # the second: no new note
    assert capsys.readouterr().err.count("did not precompile") == 1


def _compile_with(builder: PchBuilder, prefix: tuple[str, ...], value: int, tmp_path: Path) -> str:
    """Compile a unit asserting ``h() == value`` through the precompiled header; g++'s -H output."""
    unit = tmp_path / "unit.cpp"
    unit.write_text(f'#include "h.h"\nstatic_assert(h() == {value}, "the header as it is now");\n')
    argv = [builder.compiler.path, *builder.paths(prefix)[2], "-Werror", *builder.flags, "-H", "-fsyntax-only"]
    done = subprocess.run([*argv, str(unit)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stderr


@needs_gxx
def test_damaged_and_stale_precompiled_headers_are_rebuilt(tmp_path: Path) -> None:
    """A truncated .gch and one built from a header since edited keeping its size and mtime: rebuilt, not used."""
    (tmp_path / "inc").mkdir()
    header = tmp_path / "inc" / "h.h"
    header.write_text("#pragma once\nconstexpr int h() { return 1; }\n")
    builder, prefix = _pch(tmp_path, header)
    first = builder.get(prefix)
    _, gch, _ = builder.paths(prefix)
    assert first is not None and str(header) in first.deps
    assert f"! {gch}" in _compile_with(builder, prefix, 1, tmp_path)  # the precompiled header was used
    built = gch.stat()
    again, _ = _pch(tmp_path, header)
    assert again.get(prefix) == first and gch.stat().st_mtime_ns == built.st_mtime_ns  # reused

    gch.write_bytes(gch.read_bytes()[: built.st_size // 2])  # truncated
    healed, _ = _pch(tmp_path, header)
    assert healed.get(prefix) is not None and gch.stat().st_size > built.st_size * 0.9  # whole again
    assert f"! {gch}" in _compile_with(healed, prefix, 1, tmp_path)

    stat = header.stat()
    header.write_text("#pragma once\nconstexpr int h() { return 2; }\n")  # same size
    os.utime(header, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same mtime
    assert header.stat().st_size == stat.st_size and header.stat().st_mtime_ns == stat.st_mtime_ns
    stale, _ = _pch(tmp_path, header)
    assert stale.get(prefix) is not None
    assert f"! {gch}" in _compile_with(stale, prefix, 2, tmp_path)  # a stale one would fail the static_assert
    assert len(list((tmp_path / "cache").glob("*/prefix.h.gch"))) == 1


@needs_gxx
def test_a_precompiled_header_of_another_release_is_not_reused(tmp_path: Path) -> None:
    """The precompiled header is keyed by the one artifact-key rule, the target release included: a check
    for 2.14 never uses the one built for 2.13 from the same prefix, compiler and flags (it builds its own),
    and the 2.13 one stays for 2.13."""
    (tmp_path / "inc").mkdir()
    header = tmp_path / "inc" / "h.h"
    header.write_text("#pragma once\nconstexpr int h() { return 1; }\n")
    builder, prefix = _pch(tmp_path, header)
    first = builder.get(prefix)
    _, gch_13, _ = builder.paths(prefix)
    assert first is not None and gch_13.is_file()
    built = gch_13.stat().st_mtime_ns
    cache = ArtifactCache.open(tmp_path / "cache")
    other = PchBuilder(builder.compiler, builder.flags, "2.14", cache, FileDigests(), Processes())
    second = other.get(prefix)
    _, gch_14, _ = other.paths(prefix)
    assert second is not None and second.key != first.key and gch_14 != gch_13
    used = _compile_with(other, prefix, 1, tmp_path)
    assert f"! {gch_14}" in used and str(gch_13) not in used  # its own precompiled header, not 2.13's
    assert _pch(tmp_path, header)[0].get(prefix) == first and gch_13.stat().st_mtime_ns == built  # kept
    assert len(list((tmp_path / "cache").glob("*/prefix.h.gch"))) == 2


@needs_gxx
def test_a_gradcheck_cache_keeps_one_layout(tmp_path: Path) -> None:
    """Objects and libraries are entries of one cache directory: <cache_dir>/cache/<key>/<file>."""
    settings = _settings(tmp_path, _torch(tmp_path / "torch"))
    objects = compile_objects(settings, _UNITS[1:])
    lib, _ = link_library(settings, objects, ["vtgen_b"], "t")
    entries = ArtifactCache.open(tmp_path / "build" / CACHE).entries
    (tmp_path / "build" / "objects").mkdir()  # an earlier version's unverified cache
    (tmp_path / "build" / "objects" / "x.o").write_bytes(b"old")
    compile_objects(settings, _UNITS[1:])
    assert not (tmp_path / "build" / "objects").exists()
    assert sorted(e.name for e in entries.values() if e.name) == ["libt.so", "unit.o"]
    assert lib.parent.parent == tmp_path / "build" / CACHE


def test_a_planted_link_in_the_cache_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = ArtifactCache.open(tmp_path / "cache")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / ("b" * 32)).symlink_to(outside)
    path = cache.place("b" * 32, "unit.o")
    path.write_bytes(b"object")
    assert not path.parent.is_symlink() and list(outside.iterdir()) == []


_INTERRUPTED = """
import shutil, sys
from pathlib import Path
from vtgen_build.compile import identify
from vtgen_build.torchlib import BuildSettings, TorchInstall, compile_objects
root = Path(sys.argv[1])
torch = TorchInstall(sys.executable, "0.0", root, (root,), root, True)
settings = BuildSettings(identify(shutil.which("g++")), torch, root / "b", launcher=(sys.argv[2],), jobs=2)
compile_objects(settings, [("a", "int a;"), ("b", "int b;")])
"""


@needs_gxx
def test_ctrl_c_stops_every_compiler_of_a_library_build(tmp_path: Path) -> None:
    """SIGINT to the Python alone (not its process group): it kills the compilers it started."""
    launcher = tmp_path / "launcher"
    launcher.write_text(f'#!/bin/sh\necho $$ >> "{tmp_path}/pids"\nexec sleep 300\n')
    launcher.chmod(0o755)
    argv = [sys.executable, "-c", _INTERRUPTED, str(tmp_path), str(launcher)]
    proc = subprocess.Popen(argv, start_new_session=True, preexec_fn=default_ctrl_c)
    pids = tmp_path / "pids"
    try:
        for _ in range(1200):  # a deterministic wait: until both compiles have started
            if (pids.is_file() and len(pids.read_text().split()) == 2) or proc.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert len(pids.read_text().split()) == 2
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) != 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for pid in map(int, pids.read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_the_digest_memo_reads_a_file_again_only_when_its_stat_signature_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file unchanged since the last run (size, mtime, ctime, inode) is not read again; one rewritten to
    the same size and mtime is (its ctime moved); one modified in the last two seconds always is; a damaged
    memo is empty (every file is read)."""
    import vtgen_build.compile.artifacts as artifacts

    reads: list[str] = []
    real = store.file_sha256
    monkeypatch.setattr(artifacts.store, "file_sha256", lambda p: reads.append(str(p)) or real(p))
    header = tmp_path / "h.h"
    header.write_text("int a;\n")
    old = time.time_ns() - 10_000_000_000
    os.utime(header, ns=(old, old))
    time.sleep(2.1)  # its ctime is now: only a file unchanged for two seconds is remembered
    memo_file = tmp_path / "digests"
    first = artifacts.DigestMemo()
    digest = first.sha256(header)
    assert digest == real(header) and reads == [str(header)]
    first.save(memo_file)
    again = artifacts.DigestMemo.load(memo_file)
    assert again.sha256(header) == digest and reads == [str(header)]  # not read: remembered
    header.write_text("int b;\n")  # same size
    os.utime(header, ns=(old, old))  # same mtime: the ctime moved
    assert again.sha256(header) == real(header) != digest and len(reads) == 2
    fresh = tmp_path / "fresh.h"
    fresh.write_text("int c;\n")  # modified just now: its next edit may keep its mtime
    again.sha256(fresh)
    again.sha256(fresh)
    assert reads.count(str(fresh)) == 2
    memo_file.write_bytes(memo_file.read_bytes().replace(b'"files"', b'"filez"'))  # its hash no longer matches
    assert artifacts.DigestMemo.load(memo_file).known == {}


def test_clang_precompiles_the_templates_of_the_headers_and_its_key_says_so(tmp_path: Path) -> None:
    """clang++ 11+: a precompiled header carries the instantiations its headers' inline code needs (each unit
    otherwise repeats them: ~3 CPU s of torch's); g++ and an older clang have no such option."""
    from vtgen_build.compile import Compiler
    from vtgen_build.compile.pch import build_flags

    clang = Compiler("/usr/bin/clang++", "clang", "Debian clang version 14.0.6", "id")
    assert build_flags(clang) == ("-fpch-instantiate-templates",)
    assert build_flags(Compiler("c++", "clang", "Apple clang version 15.0.0 (clang-1500.1.0.2.5)", "id")) != ()
    assert build_flags(Compiler("clang++-10", "clang", "clang version 10.0.0-4ubuntu1", "id")) == ()
    assert build_flags(Compiler("g++", "gcc", "g++ (Debian 12.2.0-14+deb12u1) 12.2.0", "id")) == ()
    cache = ArtifactCache.open(tmp_path)
    with_flag = PchBuilder(clang, ("-std=c++17",), "2.13", cache, FileDigests(), Processes())
    without = PchBuilder(Compiler("/usr/bin/clang++", "clang", "clang version 10.0.0", "id"), ("-std=c++17",), "2.13",
                         cache, FileDigests(), Processes())  # fmt: skip
    assert with_flag.key(('#include "h.h"',)) != without.key(('#include "h.h"',))  # same path, identity, flags
