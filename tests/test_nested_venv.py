"""The nested venvs of the sample tests (conftest.nested_venv, conftest.install_wheel) import the
wheel under test, also when the suite itself runs in a venv holding an editable install of it.

That is what the README's test command gives in a fresh venv: vtgen_build installed editable
(a dist-info plus an import hook run by a ``.pth`` line) in the venv whose site-packages a nested
venv joins as a plain path.  Here a fake "parent" site-packages is built the same way (the
dist-info of ``vtfake`` and no importable ``vtfake``; an importable ``vtparent`` beside it) and a
hand-made ``vtfake`` wheel is installed: the nested venv must import its own copy, and still see
the parent's packages.  No build, no index: a few seconds of pip.  And CI runs the README's
test command that way: in a venv it makes anew (.ci/run).
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT, install_wheel, nested_venv, run_clean

_METADATA = "Metadata-Version: 2.1\nName: vtfake\nVersion: 1.0\n"
_WHEEL = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def _fake_wheel(house: Path) -> None:
    files = {
        "vtfake/__init__.py": b"WHERE = 'wheel'\n",
        "vtfake-1.0.dist-info/METADATA": _METADATA.encode(),
        "vtfake-1.0.dist-info/WHEEL": _WHEEL.encode(),
    }
    record = "".join(_record_line(name, data) for name, data in files.items()) + "vtfake-1.0.dist-info/RECORD,,\n"
    house.mkdir()
    with zipfile.ZipFile(house / "vtfake-1.0-py3-none-any.whl", "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("vtfake-1.0.dist-info/RECORD", record)


def _parent_site(site: Path) -> None:
    """An editable install's traces as a nested venv sees them: the dist-info, an import hook in a
    ``.pth`` file (never run from a plain path), no package; and one ordinary package."""
    dist = site / "vtfake-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(_METADATA)
    (dist / "RECORD").write_text("")
    (dist / "INSTALLER").write_text("pip\n")
    (site / "__editable__.vtfake-1.0.pth").write_text("import sys; sys.exit('the hook ran')\n")
    (site / "vtparent.py").write_text("SEEN = True\n")


@pytest.mark.slow  # pip
def test_the_nested_venv_imports_the_wheel_beside_an_editable_parent(tmp_path: Path) -> None:
    _fake_wheel(tmp_path / "house")
    _parent_site(tmp_path / "parent")
    python = nested_venv(tmp_path / "venv", tmp_path, parents=[str(tmp_path / "parent")])
    install_wheel(python, tmp_path / "house", "vtfake", tmp_path)
    code, out = run_clean([python, "-c", "import vtfake, vtparent; print(vtfake.WHERE, vtparent.SEEN)"], tmp_path)
    assert (code, out.strip()) == (0, "wheel True"), out


def test_ci_runs_the_readme_test_command_in_a_fresh_venv() -> None:
    """.ci/run makes a new venv outside the repo, activates it, then runs the README's second
    set-up command verbatim (the first code block's second line)."""
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert block is not None
    command = block.group(1).splitlines()[1]
    assert command.startswith("pip install -e '.[test,gradcheck]'"), command
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    made = script.index('venv_dir="$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/vtgen-ci-venv.XXXXXX")"')
    created = script.index('python -m venv "$venv_dir"')
    activated = script.index('. "$venv_dir/bin/activate"')
    run = next(i for i, line in enumerate(script) if line.startswith(command + " ||"))
    assert made < created < activated < run, script
    assert """trap 'rm -rf "$venv_dir"' EXIT""" in script
