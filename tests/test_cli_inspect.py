"""``vtgen-build inspect`` and ``--version``: in-process, through ``python -m`` and the console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from vtgen_build import __version__
from vtgen_build.cli import commands as cli

if TYPE_CHECKING:
    from tests.conftest import CliRunner, RealYaml, YamlWriter

NATIVE = """\
- func: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  variants: function, method
  dispatch:
    CPU: add
  tags: core
  autogen: add.out
"""
DERIVATIVES = """\
- name: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
  self: grad
  other: maybe_multiply(grad, alpha.conj())
"""
TAGS = """\
- tag: core
  desc: A core op.
- tag: generated
  desc: Derived by the loader.
"""


def _summary(text: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in text.splitlines())


def _console_script() -> str:
    name = "vtgen-build.exe" if os.name == "nt" else "vtgen-build"
    script = Path(sysconfig.get_path("scripts")) / name
    found = str(script) if script.is_file() else shutil.which("vtgen-build")
    if found is None:
        pytest.skip("the vtgen-build console script is not installed (pip install -e .)")
    return found


def _checkout(tmp_path: Path, tmp_yaml: YamlWriter) -> Path:
    """A tiny PyTorch source checkout: the three files where a checkout keeps them, and its release
    (without a version.txt the release is a guess, which `inspect` warns about)."""
    for rel, text in (
        ("aten/src/ATen/native/native_functions.yaml", NATIVE),
        ("aten/src/ATen/native/tags.yaml", TAGS),
        ("tools/autograd/derivatives.yaml", DERIVATIVES),
        ("version.txt", "2.13.0a0\n"),
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        tmp_yaml(rel, text)
    return tmp_path


def test_inspect_explicit_files(tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    result = run_cli(
        "inspect",
        "--native-functions",
        tmp_yaml("nf.yaml", NATIVE),
        "--derivatives",
        tmp_yaml("d.yaml", DERIVATIVES),
        "--tags",
        tmp_yaml("tags.yaml", TAGS),
    )
    assert (result.code, result.err) == (0, "")
    summary = _summary(result.out)
    assert summary["entries"] == "1"
    assert summary["native functions"] == "2"  # add.Tensor and the generated add.out
    assert summary["generated native functions"] == "1"
    assert summary["derivative entries"] == "1"
    assert summary["tags"] == "2"


def test_inspect_pytorch_checkout_layout(tmp_path: Path, tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    root = _checkout(tmp_path, tmp_yaml)
    result = run_cli("inspect", "--pytorch-root", str(root), "--json")
    assert (result.code, result.err) == (0, "")
    summary = json.loads(result.out)
    assert {k: summary[k] for k in ("entries", "native_functions", "derivative_entries", "tags")} == {
        "entries": 1,
        "native_functions": 2,
        "derivative_entries": 1,
        "tags": 2,
    }


def test_explicit_file_overrides_pytorch_root(tmp_path: Path, tmp_yaml: YamlWriter, run_cli: CliRunner) -> None:
    root = _checkout(tmp_path, tmp_yaml)
    empty = tmp_yaml("empty.yaml", "")
    result = run_cli("inspect", "--pytorch-root", str(root), "--derivatives", empty, "--json")
    assert result.code == 0
    assert json.loads(result.out)["derivative_entries"] == 0


@pytest.mark.torch
def test_inspect_installed_torchgen(real_yaml: RealYaml, run_cli: CliRunner) -> None:
    result = run_cli("inspect", "--pytorch-root", str(real_yaml.torchgen_dir))
    assert (result.code, result.err) == (0, "")
    summary = _summary(result.out)
    assert (summary["entries"], summary["native functions"], summary["derivative entries"]) == ("2584", "3101", "687")


@pytest.mark.torch
def test_inspect_json_from_site_packages(real_yaml: RealYaml, run_cli: CliRunner) -> None:
    # The directory holding the torchgen package works too.
    result = run_cli("inspect", "--pytorch-root", str(real_yaml.torchgen_dir.parent), "--json")
    assert (result.code, result.err) == (0, "")
    summary = json.loads(result.out)
    assert summary["entries"] == 2584
    assert summary["native_functions"] == 3101
    assert summary["generated_native_functions"] == 3101 - 2584
    assert summary["derivative_entries"] == 687


def test_version_in_process(run_cli: CliRunner) -> None:
    result = run_cli("--version")
    assert (result.code, result.out) == (0, f"vtgen-build {__version__}\n")


def test_usage_errors_exit_1_like_every_error(run_cli: CliRunner) -> None:
    """One convention: every error, argparse's usage errors included, exits 1 (argparse alone says 2)."""
    for args in (("generate",), ("generate", "--shards", "x", "--out", "o"), ("no-such-command",), ()):
        result = run_cli(*args)
        assert result.code == 1, (args, result)


def test_python_dash_m_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vtgen_build", "--version"], capture_output=True, text=True, check=False, timeout=60
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"vtgen-build {__version__}\n", "")


def test_console_script_version() -> None:
    done = subprocess.run([_console_script(), "--version"], capture_output=True, text=True, check=False, timeout=60)
    assert (done.returncode, done.stdout) == (0, f"vtgen-build {__version__}\n")


def test_console_script_inspect_json(tmp_path: Path, tmp_yaml: YamlWriter) -> None:
    root = _checkout(tmp_path, tmp_yaml)
    done = subprocess.run(
        [_console_script(), "inspect", "--pytorch-root", str(root), "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["native_functions"] == 2


def test_console_script_bad_input_has_no_traceback(tmp_path: Path, tmp_yaml: YamlWriter) -> None:
    root = _checkout(tmp_path, tmp_yaml)
    bad = tmp_yaml("aten/src/ATen/native/native_functions.yaml", "- func: add(Tensor self, Tnsor other) -> Tensor\n")
    done = subprocess.run(
        [sys.executable, "-m", "vtgen_build", "inspect", "--pytorch-root", str(root)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    message = "malformed schema: unknown type 'Tnsor'; did you mean 'Tensor'? (column 18)"
    assert done.stderr == f"{bad}:1: error: {message}\n"


def test_an_unwritable_output_is_an_error_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = Path(__file__).resolve().parents[1] / "sample_project"
    out = tmp_path / "out"
    (out / "Functions_0.cpp").mkdir(parents=True)  # a directory where a generated file must go
    args = ["generate", "--native-functions", str(sample / "native_functions.yaml"),
            "--derivatives", str(sample / "derivatives.yaml"), "--namespace", "vtsample",
            "--shards", "1", "--out", str(out)]  # fmt: skip
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert f"vtgen-build: error: cannot write {out / 'Functions_0.cpp'}: Is a directory" in err
    assert "Traceback" not in err


def test_inspect_describes_a_stable_library_in_its_own_words(run_cli: CliRunner) -> None:
    """A stable library has no C++ autograd: no VariableType kernel, Node, guard or SavedVariable; its
    Autograd kernel is the generated Python autograd (none for an out= variant)."""
    root = Path(__file__).resolve().parents[1] / "sample_stable"
    base = ["inspect", "--native-functions", str(root / "native_functions.yaml"), "--derivatives",
            str(root / "derivatives.yaml"), "--namespace", "vtstable", "--stable-abi", "2.10"]  # fmt: skip
    result = run_cli(*base, "--op", "affine", "--op", "softsign.out")
    assert result.code == 0, result.err
    for cpp in ("VariableType", "SavedVariable", "dispatch guard", "backward Node", "AutoDispatchBelow"):
        assert cpp not in result.out, result.out
    assert "  Autograd kernel: the generated Python autograd (_autograd.py), no C++ autograd (stable ABI)" in result.out
    assert "  kept on ctx for the backward:\n    weight = weight   because the formula for input" in result.out
    assert "  grad_fn: AffineBackward0" in result.out and "  Python autograd: autograd.Function" in result.out
    assert "vtstable::softsign.out  [Autograd]" in result.out
    assert "  Autograd kernel: none (the Python autograd leaves it out; no C++ autograd" in result.out
    summary = run_cli(*base)
    assert summary.code == 0 and "mode: stable-abi 2.10: no C++ autograd" in summary.out, summary.err
