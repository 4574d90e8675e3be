"""Options checked before anything runs, and the torch probe that must not import the caller's torch/."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import CliRunner, sample_inputs
from vtgen_build.torchlib import locate_torch


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["-j", "-1"], "-j/--jobs must be between 0 (one per core) and 1024, got -1"),
        (["-j", "5000"], "-j/--jobs must be between 0 (one per core) and 1024, got 5000"),
        (["--gradcheck", "--max-samples", "-1"], "--max-samples must be 0 (every sample) or more, got -1"),
        (["--max-samples", "3"], "--max-samples applies to --gradcheck only"),
        (["--python", sys.executable], "--python applies to --gradcheck only"),
        (["--no-bind-hidden"], "--no-bind-hidden applies to --gradcheck only"),
        (["--library", "lib.so"], "--library applies to --gradcheck only"),
        (["--hints", "hints.yaml"], "--hints applies to --gradcheck only"),
        (["--coverage", "cov.json"], "--coverage applies to --gradcheck only"),
        (["--allow-unverified"], "--allow-unverified applies to --gradcheck only"),
        (["--no-batched-grad"], "--no-batched-grad applies to --gradcheck only"),
        (["--shard", "1/2"], "--shard applies to --gradcheck only"),
        (["--gradcheck", "--shard", "3/2"], "--shard 3/2: expected K/N with 1 <= K <= N <= 1024 (e.g. --shard 2/4)"),
        (
            ["--gradcheck", "--library", "x.so", "--shard", "1/2"],
            "--shard: parts of a run of PyTorch's yaml (or an op set) only, not of --library",
        ),
    ],
    ids=[
        "jobs-negative",
        "jobs-huge",
        "samples-negative",
        "samples-alone",
        "python-alone",
        "bind-alone",
        "library-alone",
        "hints-alone",
        "coverage-alone",
        "allow-unverified-alone",
        "batched-alone",
        "shard-alone",
        "shard-out-of-range",
        "shard-library",
    ],
)
def test_check_options_out_of_range_are_errors(
    run_cli: CliRunner, tmp_path: Path, extra: list[str], message: str
) -> None:
    out = tmp_path / "out"
    result = run_cli("check", *sample_inputs(), "--out", str(out), *extra)
    assert result.code == 1
    assert result.err.strip() == f"vtgen-build: error: {message}"
    assert not out.exists()  # refused before generating anything


def _fake_torch_checkout(root: Path) -> Path:
    """A directory holding a torch/ package that leaves a mark and fails when imported."""
    mark = root / "imported"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text(
        f"open({str(mark)!r}, 'w').close()\nraise ImportError('the checkout torch/ was imported')\n", encoding="utf-8"
    )
    return mark


def test_torch_probe_never_imports_the_working_directorys_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = _fake_torch_checkout(tmp_path)
    monkeypatch.chdir(tmp_path)
    install = locate_torch(sys.executable)
    assert not mark.exists()
    assert (install.root / "__init__.py").is_file() and install.root != tmp_path / "torch"
    assert install.missing == ()  # this Python has numpy and expecttest


def test_gradcheck_without_numpy_says_what_to_install(run_cli: CliRunner, tmp_path: Path) -> None:
    # a Python whose numpy cannot be imported (a package raising ModuleNotFoundError shadows it)
    blocked = tmp_path / "blocked"
    (blocked / "numpy").mkdir(parents=True)
    (blocked / "numpy" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'numpy'\")\n")
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={blocked} exec {sys.executable} "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    out = tmp_path / "out"
    result = run_cli("check", *sample_inputs(), "--out", str(out), "--gradcheck", "--python", str(python))
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    assert lines[0] == (
        f"vtgen-build: error: --python {python} cannot import numpy, which PyTorch's OpInfo tests need: "
        "pip install 'vtgen_build[gradcheck]' there"
    )
    assert not (out / ".vtgen-gradcheck" / "lib").exists()  # nothing was built


def test_generate_refuses_to_replace_files_it_did_not_write(run_cli: CliRunner, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    mine = {"RegisterSchema.cpp": "// my registration\n", "Functions.h": "// my own header\n", "kernels.cpp": "//\n"}
    for name, text in mine.items():
        (src / name).write_text(text, encoding="utf-8")
    args = ["generate", *sample_inputs(), "--shards", "1", "--out", str(src)]
    result = run_cli(*args)
    assert result.code == 1
    assert result.err == (
        f"vtgen-build: error: --out {src}: holds Functions.h, RegisterSchema.cpp, which vtgen-build did not write "
        "(no .vtgen-manifest.json there) and would replace; move them away, or pass --allow-overwrite\n"
    )
    assert {name: (src / name).read_text(encoding="utf-8") for name in mine} == mine
    assert not (src / ".vtgen-manifest.json").exists() and not (src / "VariableType_0.cpp").exists()
    assert run_cli(*args, "--allow-overwrite").code == 0
    assert (src / "kernels.cpp").read_text(encoding="utf-8") == "//\n"  # a name it does not write: untouched
    assert "my own" not in (src / "Functions.h").read_text(encoding="utf-8")
    assert run_cli(*args).code == 0  # its own files now (the manifest says so)


def test_files_a_killed_first_run_left_are_not_foreign(run_cli: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["generate", *sample_inputs(), "--shards", "1", "--out", str(out)]
    assert run_cli(*args).code == 0
    (out / ".vtgen-manifest.json").unlink()  # as if killed before its last write: same content, no manifest
    assert run_cli(*args).code == 0
    (out / ".vtgen-manifest.json").write_text("{damaged")  # a damaged manifest is still ours
    (out / "Functions.h").write_text("// edited by hand\n")
    assert run_cli(*args).code == 0
    assert "edited by hand" not in (out / "Functions.h").read_text(encoding="utf-8")
