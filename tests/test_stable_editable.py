"""The stable sample's formula loop in an editable install: regenerated, not rebuilt.

``pip install --no-build-isolation -e`` of a copy of sample_stable/ (scikit-build-core's
``editable.rebuild``, its pyproject.toml) into a fresh venv holding vtgen_build's wheel; then a
formula of derivatives.yaml is edited and the next ``import vtstable`` reruns the build: the
generator step rewrites the Python autograd module and no C++ file, so no unit compiles and the
library is not relinked (the object files and the library keep their modification times), and the
new formula is the one that runs (the gradient doubles, gradcheck fails).  The next import with
nothing changed runs nothing.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .conftest import ROOT, install_wheel, nested_venv, run_clean

pytestmark = [pytest.mark.slow, pytest.mark.torch]

_SOFTSIGN = "  self: softsign_backward(grad, self)"
_DOUBLED = "  self: 2 * softsign_backward(grad, self)"
# softsign's gradient over the formula's 1 / (1 + |x|)^2 (2 after the edit), and gradcheck's verdict
_CHECK = """
import json, torch, vtstable
x = torch.tensor([-1.5, 0.25, 2.0], dtype=torch.float64, requires_grad=True)
torch.ops.vtstable.softsign(x).sum().backward()
ratio = sorted({round(r, 9) for r in (x.grad * (1 + x.detach().abs()) ** 2).tolist()})
ok = torch.autograd.gradcheck(torch.ops.vtstable.softsign, (x,), raise_exception=False)
print(json.dumps({"ratio": ratio, "gradcheck": ok}))
"""


@dataclass(frozen=True)
class Editable:
    python: Path
    source: Path  # the copy of sample_stable the editable install builds from
    build_dir: Path  # scikit-build-core's build/<wheel tag>


@pytest.fixture(scope="module")
def editable_stable(wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Editable:
    pytest.importorskip("torch")
    pytest.importorskip("scikit_build_core")
    if shutil.which("ninja") is None:
        pytest.skip("ninja is not on PATH")
    tmp = tmp_path_factory.mktemp("stable_editable")
    source = Path(shutil.copytree(ROOT / "sample_stable", tmp / "sample", ignore=shutil.ignore_patterns("build")))
    python = nested_venv(tmp / "venv", tmp)
    install_wheel(python, wheelhouse, "vtgen_build", tmp)
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps"]
    code, log = run_clean([*pip, "--no-build-isolation", "-e", source], tmp)
    assert code == 0, log[-6000:]
    (build_dir,) = (source / "build").iterdir()
    return Editable(python, source, build_dir)


def _run(editable: Editable) -> tuple[dict[str, object], str]:
    """The check in a new process (the rebuild's output on stderr: SKBUILD_EDITABLE_VERBOSE)."""
    code, log = run_clean([editable.python, "-c", _CHECK], editable.source.parent, SKBUILD_EDITABLE_VERBOSE="1")
    assert code == 0, log
    found: dict[str, object] = json.loads(log.strip().splitlines()[-1])
    return found, log


def _compiled_outputs(build_dir: Path) -> dict[str, int]:
    """The object files and the op library, with their modification times (ns)."""
    files = [*build_dir.rglob("*.o"), *build_dir.glob("*.so")]
    return {str(p.relative_to(build_dir)): p.stat().st_mtime_ns for p in files}


def test_formula_edit_regenerates_the_python_autograd_and_compiles_nothing(editable_stable: Editable) -> None:
    found, log = _run(editable_stable)
    assert found == {"ratio": [1.0], "gradcheck": True}, log
    compiled = _compiled_outputs(editable_stable.build_dir)
    assert len([p for p in compiled if p.endswith(".o")]) == 4 and "_vtstable_ops.so" in compiled, compiled

    derivatives = editable_stable.source / "derivatives.yaml"
    text = derivatives.read_text()
    assert text.count(_SOFTSIGN + "\n") == 1
    derivatives.write_text(text.replace(_SOFTSIGN + "\n", _DOUBLED + "\n"))
    found, log = _run(editable_stable)
    assert found == {"ratio": [2.0], "gradcheck": False}, log  # the edited formula is the one that runs
    assert "vtgen_build: generating stable-ABI registrations" in log and "0 files written, 4 unchanged" in log, log
    assert "Building CXX" not in log and "Linking" not in log, log  # no compiler, no linker
    assert _compiled_outputs(editable_stable.build_dir) == compiled
    installed = editable_stable.build_dir / "install" / "platlib" / "vtstable" / "_autograd.py"
    assert "(2 * torch.ops.vtstable.softsign_backward(grad, self))" in installed.read_text()
    assert f"vtstable: regenerated {installed}" in log, log

    found, log = _run(editable_stable)  # nothing changed: nothing runs, nothing is said
    assert found == {"ratio": [2.0], "gradcheck": False}, log
    assert "ninja: no work to do." in log and "vtstable: regenerated" not in log, log


def test_autocast_policies_hold_in_the_editable_install(editable_stable: Editable) -> None:
    """The yaml's `autocast:` policies (sincos fp32, affine promote), run by the Python Autocast kernels
    the generated vtstable/_autograd.py registers, under torch.autocast("cpu", dtype=torch.bfloat16):
    tests/stable_matrix_child.py's ``autocast:`` checks (the matrix runs them on every release too)."""
    child = Path(__file__).resolve().parent / "stable_matrix_child.py"
    code, log = run_clean([editable_stable.python, child, "autocast:"], editable_stable.source.parent)
    assert code == 0, log
    report = json.loads(log.strip().splitlines()[-1])
    results = report["results"]
    assert sorted(results) == ["autocast:fp32 (sincos)", "autocast:keys", "autocast:promote (affine)"], results
    assert all(r["ok"] for r in results.values()), json.dumps(results, indent=1)
