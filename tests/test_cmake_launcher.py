"""The CMake function's generated sources: ``CMAKE_CXX_COMPILER_LAUNCHER`` (a real ccache), ``PRECOMPILE_HEADERS``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .test_cmake import ROOT, SHARDS, Build, _consumer_env, _copy_sample, _require


@pytest.mark.slow
def test_ccache_as_cmake_launcher_hits_on_a_rebuild(tmp_path: Path) -> None:
    """A clean rebuild compiles every generated unit again, each a ccache hit."""
    _require("cmake", "ninja", "ccache")
    env = {**_consumer_env(), "CCACHE_DIR": str(tmp_path / "ccache")}
    tree = Build(_copy_sample(tmp_path / "sample"), tmp_path / "build", "Ninja", env)
    tree.configure(
        f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
        f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        f"-DVTSAMPLE_SHARDS={SHARDS}",
        "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
    )

    def hits() -> int:
        done = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True, env=env, check=True)
        stats = dict(line.split("\t") for line in done.stdout.splitlines() if "\t" in line)
        return int(stats["direct_cache_hit"]) + int(stats.get("preprocessed_cache_hit", "0"))

    tree.build()
    assert hits() == 0
    commands = subprocess.run(
        ["ninja", "-C", str(tree.binary), "-t", "commands"], capture_output=True, text=True, env=env, check=True
    ).stdout
    generated = [line for line in commands.splitlines() if re.search(r"vtgen/\w+/(VariableType|Functions)_\d", line)]
    assert generated and all(re.match(r"\S*ccache ", line) for line in generated), generated[:2]
    subprocess.run(["ninja", "-C", str(tree.binary), "-t", "clean"], capture_output=True, env=env, check=True)
    _, compiled, log = tree.build()
    assert {f"{kind}_{k}.cpp" for kind in ("VariableType", "Functions") for k in range(SHARDS)} <= compiled, log
    assert hits() >= 2 * SHARDS


@pytest.mark.slow
def test_precompile_headers_option(tmp_path: Path) -> None:
    """``vtgen_generate(... PRECOMPILE_HEADERS)``: one precompiled header, used by every generated unit."""
    _require("cmake", "ninja")
    source = _copy_sample(tmp_path / "sample")
    lists = source / "CMakeLists.txt"
    text = lists.read_text(encoding="utf-8")
    assert text.count("${_vtsample_torch})") == 1
    lists.write_text(text.replace("${_vtsample_torch})", "${_vtsample_torch} PRECOMPILE_HEADERS)"), encoding="utf-8")
    tree = Build(source, tmp_path / "build", "Ninja", _consumer_env())
    tree.configure(
        f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
        f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        f"-DVTSAMPLE_SHARDS={SHARDS}",
    )
    _, compiled, log = tree.build()
    assert {f"{kind}_{k}.cpp" for kind in ("VariableType", "Functions") for k in range(SHARDS)} <= compiled, log
    assert list(tree.binary.rglob("cmake_pch.hxx.gch")) or list(tree.binary.rglob("cmake_pch.hxx.pch")), log
    commands = subprocess.run(
        ["ninja", "-C", str(tree.binary), "-t", "commands"], capture_output=True, text=True, check=True
    ).stdout
    generated = [line for line in commands.splitlines() if re.search(r"vtgen/\w+/(VariableType|Functions)_\d", line)]
    assert generated and all("cmake_pch.hxx" in line for line in generated)
