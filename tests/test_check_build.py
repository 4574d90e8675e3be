"""How ``vtgen-build check`` compiles: precompiled headers, a real ccache, the C++ standard of the target torch."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from vtgen_build.compile import default_std, torch_version

from .conftest import SAMPLE, CliRunner, installed_torch_include, sample_inputs

CXX = os.environ.get("CXX") or shutil.which("g++")


def _args(root: Path, out: Path, *more: str) -> list[str]:
    return ["check", *sample_inputs(root), "-I", str(root / "include"), "--shards", "2", "--out", str(out), *more]


def _logging_compiler(path: Path, log: Path, run: bool = True) -> Path:
    """A compiler that appends its command line to ``log``, then compiles (or, with ``run=False``, only says so)."""
    real = f'exec {CXX} "$@"' if run else 'case "$*" in *--version*) exec ' + f'{CXX} "$@";; esac; exit 0'
    path.write_text(f'#!/bin/sh\necho "$@" >> {shlex.quote(str(log))}\n{real}\n', encoding="utf-8")
    path.chmod(0o755)
    return path


# -- precompiled headers -------------------------------------------------------------------------
@pytest.mark.skipif(CXX is None, reason="no g++")
def test_the_precompiled_header_is_built_once_and_used(run_cli: CliRunner, tmp_path: Path) -> None:
    log = tmp_path / "log"
    cxx = _logging_compiler(tmp_path / "cxx", log)
    out = tmp_path / "check"
    args = _args(SAMPLE, out, "--cxx", str(cxx), "--op", "stack_mean", "--no-cache")
    first = run_cli(*args)
    assert first.code == 0, first.err[-3000:]
    assert "invalid-pch" not in first.err and "not used because" not in first.err
    (gch,) = out.glob(".vtgen-check/cache/*/prefix.h.gch")
    built = gch.stat().st_mtime_ns
    compiles = [line for line in log.read_text().splitlines() if "ops.cpp" in line]
    assert compiles and f"-include {gch.with_suffix('')}" in compiles[-1]
    assert run_cli(*args).code == 0
    assert gch.stat().st_mtime_ns == built  # reused, not rebuilt
    assert sum("c++-header" in line for line in log.read_text().splitlines()) == 1


def _pch_builds(log: Path) -> int:
    return sum("c++-header" in line for line in log.read_text().splitlines())


@pytest.mark.slow
@pytest.mark.skipif(CXX is None, reason="no g++")
def test_the_precompiled_header_is_rebuilt_when_a_header_in_it_changes(run_cli: CliRunner, tmp_path: Path) -> None:
    """The Nodes' prefix holds the sample's helper header; the kernels' prefix does not."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("build*"))
    log = tmp_path / "log"
    args = _args(root, tmp_path / "check", "--cxx", str(_logging_compiler(tmp_path / "cxx", log)), "--no-cache")
    assert run_cli(*args).code == 0
    # one per unit kind: since check compiles the backend registrations too, seven kinds (the CPU
    # registrations include autocast's header besides: the sample's `autocast:` policies are CPU ops')
    assert _pch_builds(log) == 7
    helpers = root / "include" / "vtsample" / "helpers.h"
    helpers.write_text(helpers.read_text(encoding="utf-8") + "\n// edited\n", encoding="utf-8")
    assert run_cli(*args).code == 0
    assert _pch_builds(log) == 8  # the Nodes' one again
    helpers.write_text("#error the prefix changed\n", encoding="utf-8")
    changed = run_cli(*args)
    assert changed.code == 1 and "the prefix changed" in changed.err


@pytest.mark.skipif(shutil.which("clang++") is None, reason="no clang++")
def test_clang_uses_its_own_precompiled_header(run_cli: CliRunner, tmp_path: Path) -> None:
    """And clang's -Werror passes the code: softsign_'s forward formula reads the old self, not self_t."""
    out = tmp_path / "check"
    ops = ("--op", "stack_mean", "--op", "soft_quantize", "--op", "softsign_")
    result = run_cli(*_args(SAMPLE, out, "--cxx", "clang++", *ops))
    assert result.code == 0, result.err[-3000:]
    assert list(out.glob(".vtgen-check/cache/*/prefix.h.pch"))


# -- a real compiler cache -----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ccache") is None or CXX is None, reason="no ccache (apt-get install ccache)")
def test_ccache_hits_on_a_second_build(run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "ccache"))
    args = _args(SAMPLE, tmp_path / "check", "--launcher", "ccache", "--op", "stack_mean", "--no-cache")

    def stats() -> dict[str, int]:
        done = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, check=True)
        return {k: int(v) for k, v in (line.split("\t") for line in done.stdout.splitlines() if "\t" in line)}

    assert run_cli(*args).code == 0
    before = stats()
    assert before["direct_cache_hit"] + before.get("preprocessed_cache_hit", 0) == 0
    assert before["cache_miss"] >= 1 and before["could_not_use_precompiled_header"] == 0
    again = run_cli(*args)
    assert again.code == 0, again.err[-2000:]
    after = stats()
    assert after["direct_cache_hit"] + after.get("preprocessed_cache_hit", 0) >= 1
    assert after["cache_miss"] == before["cache_miss"]


# -- the C++ standard of the target torch --------------------------------------------------------
def _fake_torch(root: Path, major: int, minor: int, guard: str = "201703L") -> Path:
    include = root / "include"
    (include / "ATen").mkdir(parents=True)
    (include / "torch").mkdir()
    (include / "ATen" / "ATen.h").write_text(
        f"#pragma once\n#if __cplusplus < {guard}\n#error C++ too old\n#endif\n", encoding="utf-8"
    )
    (include / "torch" / "version.h").write_text(
        f"#pragma once\n#define TORCH_VERSION_MAJOR {major}\n#define TORCH_VERSION_MINOR {minor}\n", encoding="utf-8"
    )
    return include


def test_default_standard_follows_the_torch_headers(tmp_path: Path) -> None:
    assert default_std(None) == "c++17"
    assert default_std(_fake_torch(tmp_path / "a", 2, 13)) == "c++17"
    assert default_std(_fake_torch(tmp_path / "b", 2, 14)) == "c++20"
    assert default_std(_fake_torch(tmp_path / "c", 3, 0)) == "c++20"
    assert default_std(_fake_torch(tmp_path / "d", 2, 13, guard="202002L")) == "c++20"  # the headers' own guard
    assert torch_version(_fake_torch(tmp_path / "e", 2, 14)) == (2, 14)
    assert torch_version(tmp_path) is None


@pytest.mark.torch
def test_default_standard_of_the_installed_torch() -> None:
    """Read from the headers, without importing torch; the version from its distribution's metadata."""
    include = installed_torch_include()
    major, minor = (int(x) for x in importlib.metadata.version("torch").split(".")[:2])
    assert torch_version(include) == (major, minor)
    assert default_std(include) == ("c++20" if (major, minor) >= (2, 14) else "c++17")


@pytest.mark.skipif(CXX is None, reason="no g++")
def test_check_picks_cxx20_for_a_torch_that_needs_it(run_cli: CliRunner, tmp_path: Path) -> None:
    log = tmp_path / "log"
    cxx = _logging_compiler(tmp_path / "cxx", log, run=False)
    base = _args(SAMPLE, tmp_path / "check", "--cxx", str(cxx), "--op", "stack_mean", "--no-pch")
    include = _fake_torch(tmp_path / "torch214", 2, 14)
    assert run_cli(*base, "--torch-include", str(include)).code == 0
    assert "-std=c++20" in log.read_text() and "-std=c++17" not in log.read_text()
    log.unlink()
    assert run_cli(*base, "--torch-include", str(include), "--std", "c++17", "--no-cache").code == 0
    assert "-std=c++17" in log.read_text()  # --std still decides
    log.unlink()
    assert run_cli(*base, "--torch-include", str(_fake_torch(tmp_path / "torch213", 2, 13))).code == 0
    assert "-std=c++17" in log.read_text()
