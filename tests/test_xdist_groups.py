"""The suite's shared builds stay on one worker: ``--dist loadgroup`` (pyproject.toml's addopts) keeps
every test of an ``xdist_group`` (tests/conftest.py adds them) on one pytest-xdist worker.

pytest 9.2 stores node ids in a way pytest-xdist 3.8 cannot append the group to
(pytest-dev/pytest-xdist#1386): nothing fails, the groups are just spread over the workers, and
each worker builds the sample once more (in a fresh venv, which resolves the newest pytest, the
sample tests ran twice as long and hit the 20-minute limit).  Here a small project, grouped the
way conftest.py groups, runs on two workers with the pytest and xdist this environment has.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from .conftest import run_clean

pytest.importorskip("xdist")

_CONFTEST = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group("build:" + item.path.stem))
"""
_TESTS = """
import pytest

@pytest.mark.parametrize("i", range(6))
def test_shared(i):
    pass
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(_CONFTEST)
    (tmp_path / "test_one.py").write_text(_TESTS)
    (tmp_path / "test_two.py").write_text(_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    args = ["-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider", "-p", "no:randomly"]
    code, out = run_clean([sys.executable, *args], tmp_path)
    assert code == 0, out
    workers: dict[str, set[str]] = {}
    for worker, module in re.findall(r"^\[(gw\d)\] .*PASSED (test_\w+)\.py::", out, re.MULTILINE):
        workers.setdefault(module, set()).add(worker)
    assert sorted(workers) == ["test_one", "test_two"], out
    assert all(len(found) == 1 for found in workers.values()), f"a group ran on several workers: {workers}\n{out}"
