"""Real ``pip`` runs in temporary venvs, build isolation on: ``pip install`` runs the code generation.

The isolated build environments get vtgen_build from a wheel of this checkout; pip resolves
every build requirement from one local wheelhouse (``--no-index --find-links``, the session
fixture ``wheelhouse`` of conftest.py).  ``--python`` points pip at each venv, so the venvs need no pip of their own.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest

from .conftest import run_clean

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_project"
FIXTURE = ROOT / "tests" / "packages" / "setuptools_ops"

pytestmark = pytest.mark.slow

# What the generator prints: a run that wrote files, and the no-op fast path.
_WROTE = re.compile(r"vtgen-build: .*; (\d+) files written")
_UP_TO_DATE = "vtgen-build: up to date (0 files written)"


def _run(args: list[str | Path], cwd: Path) -> tuple[int, str]:
    return run_clean(args, cwd)


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    path = tmp_path / "venv"
    code, log = _run([sys.executable, "-m", "venv", "--without-pip", path], tmp_path)
    assert code == 0, log
    return path


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _pip_install(venv: Path, house: Path, *args: str | Path) -> tuple[int, str]:
    """``pip install -v`` into ``venv`` with build isolation on, everything from ``house``."""
    return _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            _python(venv),
            "install",
            "-v",
            "--no-index",
            "--find-links",
            house,
            *args,
        ],
        house,
    )


def _in_venv(venv: Path, code: str) -> str:
    rc, out = _run([_python(venv), "-c", code], venv)
    assert rc == 0, out
    return out.strip()


def _installed_files(venv: Path, dist: str) -> set[str]:
    return set(
        _in_venv(venv, f"from importlib import metadata\nfor f in metadata.files({dist!r}): print(f)").splitlines()
    )


def _break(derivatives: Path, old: str, new: str) -> int:
    """Replace ``old`` (a whole line) by ``new``; return the line number."""
    lines = derivatives.read_text().splitlines()
    index = lines.index(old)
    lines[index] = new
    derivatives.write_text("\n".join(lines) + "\n")
    return index + 1


@pytest.fixture
def setuptools_project(tmp_path: Path) -> Path:
    """The fixture with ``check = false``: these tests are about generation (the check has its own)."""
    project = Path(shutil.copytree(FIXTURE, tmp_path / "setuptools_ops"))
    _set_check(project, False)
    return project


def _set_check(project: Path, on: bool) -> None:
    pyproject = project / "pyproject.toml"
    text, count = re.subn(r"(?m)^check = (true|false)$", f"check = {'true' if on else 'false'}", pyproject.read_text())
    assert count == 1, text
    pyproject.write_text(text)


def test_setuptools_install_runs_the_check(wheelhouse: Path, venv: Path, setuptools_project: Path) -> None:
    """``check = true``: the build compile-checks the generated kernels (``vtgen-build check``)."""
    _set_check(setuptools_project, True)
    code, log = _pip_install(venv, wheelhouse, setuptools_project)
    assert code == 0, log
    assert "vtgen_build: compile check: " in log, log


def test_setuptools_install_then_no_codegen(wheelhouse: Path, venv: Path, setuptools_project: Path) -> None:
    code, log = _pip_install(venv, wheelhouse, setuptools_project)
    assert code == 0, log
    assert "running build_vtgen" in log, log
    # 2 shards of VariableType, ADInplaceOrViewType, Functions (.cpp + .h), RegisterSchema.cpp,
    # Functions.h, FunctionsBase.h and the 3 stub declaration files.
    assert [int(n) for n in _WROTE.findall(log)] == [14], log
    files = _installed_files(venv, "setuptools_ops")
    generated = {f.split("/_autograd/", 1)[1] for f in files if "/_autograd/" in f}
    expected = {"Functions.h", "VariableType_0.cpp", "Functions_1.cpp", "Functions_1.h", "RegisterSchema.cpp"}
    assert expected | {"ADInplaceOrViewType_1.cpp"} <= generated, files
    assert ".vtgen-manifest.json" not in generated, files
    path = _in_venv(venv, "import setuptools_ops; print(setuptools_ops.generated_dir() / 'Functions.h')")
    assert Path(path).is_file() and Path(path).is_relative_to(venv), path

    # The same install again (setuptools' build/ in the project persists): no codegen.
    code, log = _pip_install(venv, wheelhouse, "--force-reinstall", "--no-deps", setuptools_project)
    assert code == 0, log
    assert _UP_TO_DATE in log and not _WROTE.search(log), log


def test_setuptools_editable_regenerates(wheelhouse: Path, venv: Path, setuptools_project: Path) -> None:
    code, log = _pip_install(venv, wheelhouse, "-e", setuptools_project)
    assert code == 0, log
    in_place = setuptools_project / "src" / "setuptools_ops" / "_autograd"
    found = _in_venv(venv, "import setuptools_ops; print(setuptools_ops.generated_dir())")
    assert Path(found).resolve() == in_place.resolve(), log
    assert (in_place / "Functions.h").is_file(), log

    # A formula edit, then the editable install again: the generator rewrites what changed, in place.
    derivatives = setuptools_project / "ops" / "derivatives.yaml"
    _break(derivatives, "  self: cube_backward(grad, self)", "  self: cube_backward(grad, self) * 2")
    before = {p.name: p.read_text() for p in in_place.glob("*.cpp")}
    code, log = _pip_install(venv, wheelhouse, "-e", setuptools_project)
    assert code == 0, log
    after = {p.name: p.read_text() for p in in_place.glob("*.cpp")}
    changed = {name for name in after if after[name] != before[name]}
    assert 1 <= len(changed) <= 2, log
    assert any("cube_backward(grad, self) * 2" in after[name] for name in changed), changed
    assert [int(n) for n in _WROTE.findall(log)] == [len(changed)], log


def test_setuptools_broken_formula(wheelhouse: Path, venv: Path, setuptools_project: Path) -> None:
    line = _break(
        setuptools_project / "ops" / "derivatives.yaml",
        "  end: scaled(grad, weight.toDouble())",
        "  ende: scaled(grad, weight.toDouble())",
    )
    for editable in ((), ("-e",)):
        code, log = _pip_install(venv, wheelhouse, *editable, setuptools_project)
        assert code != 0, log
        assert f"ops/derivatives.yaml:{line}: error: 'ende' is not an argument or output of 'lerp_to'" in log, log


# ---------------------------------------------------------------------------------------------
# sample_project (scikit-build-core + vtgen_generate())
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return Path(
        shutil.copytree(SAMPLE, tmp_path / "sample", ignore=shutil.ignore_patterns("build", "dist", "*.egg-info"))
    )


# Stub mode: these tests are about generation and packaging, which need no torch library
# (tests/test_sample_runtime.py installs the real one).  The sample's backend then leaves torch
# out of the isolated build environment; --no-deps: the fresh venv does not need the runtime
# torch either.  So no install copies the torch wheel.
_STUB = ("--no-deps", "-C", "cmake.define.VTSAMPLE_USE_TORCH=OFF")
_INSTALLED_TORCH = re.compile(r"(?m)^\s*Successfully installed .*\btorch-\d")


def test_sample_project_install_then_no_codegen(wheelhouse: Path, venv: Path, sample: Path) -> None:
    code, log = _pip_install(venv, wheelhouse, *_STUB, sample)
    assert code == 0, log
    assert "vtgen_build: generating autograd kernels for vtsample_autograd" in log, log
    assert not _INSTALLED_TORCH.search(log), log  # neither in the build environment nor in the venv
    files = _installed_files(venv, "vtsample")
    include = {f.split("vtsample/include/", 1)[1] for f in files if "vtsample/include/" in f}
    assert {"Functions.h", "FunctionsBase.h", "vtsample/helpers.h", "Functions_0.h"} <= include, files
    assert not [f for f in files if f.endswith((".cpp", ".so"))], files

    # Again, same persistent build dir (build/<wheel tag>): it builds, and the generator writes nothing.
    generated = sorted((sample / "build").rglob("VariableType_*.cpp"))
    assert generated, sorted((sample / "build").rglob("*"))
    before = {p: p.stat().st_mtime_ns for p in generated}
    code, log = _pip_install(venv, wheelhouse, "--force-reinstall", *_STUB, sample)
    assert code == 0, log
    assert "Building project with" in log, log  # a build ran (not a cached wheel)
    assert not _WROTE.search(log), log
    assert {p: p.stat().st_mtime_ns for p in generated} == before  # not one generated file rewritten


def test_sample_project_broken_formula(wheelhouse: Path, venv: Path, sample: Path) -> None:
    line = _break(
        sample / "derivatives.yaml",
        "  tensors: stack_mean_backward(grad, dim, tensors.size())",
        "  tensor: stack_mean_backward(grad, dim, tensors.size())",
    )
    code, log = _pip_install(venv, wheelhouse, *_STUB, sample)
    assert code != 0, log
    assert f"derivatives.yaml:{line}: error: 'tensor' is not an argument or output of 'stack_mean'" in log, log


def test_sample_project_formula_typo_fails_at_its_yaml_line(wheelhouse: Path, venv: Path, sample: Path) -> None:
    """A formula that does not compile: the compiler's error names derivatives.yaml, not the
    generated file (the CMake function passes --line-directives)."""
    line = _break(
        sample / "derivatives.yaml",
        "  tensors: stack_mean_backward(grad, dim, tensors.size())",
        "  tensors: stack_mean_backward(grad.no_such_method(), dim, tensors.size())",
    )
    code, log = _pip_install(venv, wheelhouse, *_STUB, sample)
    assert code != 0, log
    assert re.search(rf"derivatives\.yaml:{line}:\d+: error: .*no_such_method", log), log
