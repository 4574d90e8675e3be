"""The test suite's own set-up: it runs without pytest-xdist, and a required test never skips.

Each test runs pytest in a subprocess with a package hidden: a directory first on ``PYTHONPATH``
holds a stand-in whose import fails, as if the package were not installed, and plugins are not
loaded from entry points (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``: an absent package has none).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT


def _pytest_without(package: str, tmp_path: Path, *args: str, **env: str) -> tuple[int, str]:
    hidden = tmp_path / "hidden"
    (hidden / package).mkdir(parents=True, exist_ok=True)
    (hidden / package / "__init__.py").write_text(f"raise ImportError('{package} is not installed (hidden)')\n")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hidden), str(ROOT)]), **env}
    environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    done = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300, check=False)
    return done.returncode, done.stdout + done.stderr


def test_the_readmes_one_process_run_needs_no_xdist(tmp_path: Path) -> None:
    """``python -m pytest -n0`` once ended in a usage error and an INTERNALERROR without pytest-xdist
    (pyproject.toml's addopts give ``-n 2 --dist loadgroup``, and conftest marks xdist groups)."""
    test = "tests/test_supervise.py::test_a_child_that_dies_before_any_entry_is_an_error_with_what_it_printed"
    code, log = _pytest_without("xdist", tmp_path, "-n0", test)
    assert code == 0 and "1 passed" in log, log
    code, log = _pytest_without("xdist", tmp_path, test)  # addopts' -n 2 alone: one process, and it says so
    assert code == 0 and "1 passed" in log, log
    assert "pytest-xdist is not installed (or -p no:xdist): -n 2 runs the tests in one process" in log, log


def test_a_required_2_14_run_fails_instead_of_skipping(tmp_path: Path) -> None:
    """``VTGEN_REQUIRE_TORCH_2_14=1``: without torchgen installed (the 2.14 tests used to import the 2.13
    module, whose importorskip skipped them all) and without the release, a test fails, saying why."""
    test = "tests/test_parity_2_14.py::test_parsed_lists_are_the_shipped_2_14_lists"
    required = {"VTGEN_REQUIRE_TORCH_2_14": "1", "VTGEN_TORCH_2_14": str(tmp_path / "none")}
    code, log = _pytest_without("torchgen", tmp_path, "-n0", "-rs", test, XDG_CACHE_HOME=str(tmp_path), **required)
    assert code == 1 and "1 error" in log and "skipped" not in log, log
    assert "required by VTGEN_REQUIRE_TORCH_2_14, but no unpacked torch 2.14.1" in log, log


def test_the_one_process_run_needs_no_pytest_timeout(tmp_path: Path) -> None:
    """pyproject.toml's addopts give ``--timeout=1200`` (pytest-timeout); without the plugin the option is
    accepted, the run goes on in one process and the header says no limit is set."""
    test = "tests/test_supervise.py::test_a_child_that_dies_before_any_entry_is_an_error_with_what_it_printed"
    code, log = _pytest_without("pytest_timeout", tmp_path, "-n0", test)
    assert code == 0 and "1 passed" in log, log
    assert "pytest-timeout is not installed (or -p no:timeout): --timeout=1200 sets no limit" in log, log


def test_a_test_past_the_limit_fails_and_the_slowest_are_listed(tmp_path: Path) -> None:
    """With pytest-timeout (the ``test`` extra), a hanging test fails at its limit instead of hanging CI,
    and ``--durations=15`` (addopts) lists it among the slowest."""
    pytest.importorskip("pytest_timeout")
    (tmp_path / "test_hangs.py").write_text("import time\n\n\ndef test_hangs():\n    time.sleep(60)\n")
    command = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
               "-p", "no:cacheprovider", "-n0", "--timeout=2", str(tmp_path / "test_hangs.py")]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    log = done.stdout + done.stderr
    assert done.returncode == 1 and "Timeout (>2.0s) from pytest-timeout" in log, log
    assert "slowest 15 durations" in log and "test_hangs.py::test_hangs" in log, log


def test_a_release_without_an_environment_is_a_skipped_case_not_a_missing_one(tmp_path: Path) -> None:
    """The torch 2.10 case of the Python autograd's library check is found as the stable matrix finds a
    release (``tools/torch_envs.py``'s cache, wherever it is): with no environment it is collected and
    skipped, saying why (it used to vanish from the run when one hard-coded path was missing)."""
    test = "tests/test_python_autograd.py::test_check_gradcheck_library_verifies_and_fails_at_the_yaml_line[torch-2.10]"
    environ = {k: v for k, v in os.environ.items() if k not in ("VTGEN_TORCH_ENVS", "VTGEN_REQUIRE_STABLE_MATRIX")}
    environ |= {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n0", "-rs", test]
    done = subprocess.run(command, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300, check=False)
    log = done.stdout + done.stderr
    assert done.returncode == 0 and "1 skipped" in log, log
    assert "no environment with torch 2.10.0 (python tools/torch_envs.py 2.10.0 makes one)" in log, log
