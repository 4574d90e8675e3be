"""The typed Python API of an op library (``generate --python-api DIR``).

No torch build: the API is generated from yaml, type-checked with ``mypy --strict`` against the
installed torch's own annotations, imported in a torch process (``help()``), and called on ops
defined in Python with ``torch.library`` under the same schemas (the calling convention:
positional and keyword-only arguments, overloads through the packet).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.engine.planned import plan_inputs
from vtgen_build.engine.python_api import write_python_api
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.policy import load_policy

from .conftest import CliRunner, YamlWriter

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_project"
GOLDEN = Path(__file__).parent / "golden" / "python_api_sample.txt"

NATIVE = """
# Twists a tensor.
# Twice as fast as untwisting it.
- func: twist(Tensor self, int turns=1, *, float scale=0.5) -> Tensor

- func: twist.out(Tensor self, int turns=1, *, float scale=0.5, Tensor(a!) out) -> Tensor(a!)

# Keeps its input alive.

- func: pair(Tensor self, Tensor? other=None, int[2] stride=1, SymInt[] size=[]) -> (Tensor, Tensor)
  dispatch:
    CPU: pair

- func: many(Tensor[] tensors, Scalar alpha, ScalarType? dtype=None, bool flag=True, str mode="sum") -> Tensor[]

- func: bump_(Tensor(a!) self, Tensor(b!)[] others, int from) -> ()
"""

DERIVATIVES = """
- name: twist(Tensor self, int turns=1, *, float scale=0.5) -> Tensor
  self: grad * scale

- name: bump_(Tensor(a!) self, Tensor(b!)[] others, int from) -> ()
  self: grad
"""


def _inputs(tmp_yaml: YamlWriter, native: str = NATIVE) -> Inputs:
    return Inputs(tmp_yaml("native_functions.yaml", native), tmp_yaml("derivatives.yaml", DERIVATIVES), None, "myops")


def _api(tmp_yaml: YamlWriter, tmp_path: Path, native: str = NATIVE) -> str:
    write_python_api(plan_inputs(_inputs(tmp_yaml, native), load_policy()), str(tmp_path / "myops_api"))
    return (tmp_path / "myops_api" / "__init__.py").read_text()


def _torch() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")


def test_signatures_follow_the_schema(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    text = _api(tmp_yaml, tmp_path)
    assert (tmp_path / "myops_api" / "py.typed").read_text() == ""
    assert "@overload\ndef twist(self: Tensor, turns: int = 1, *, scale: float = 0.5) -> Tensor: ..." in text
    assert "def twist(self: Tensor, turns: int = 1, *, scale: float = 0.5, out: Tensor) -> Tensor: ..." in text
    assert "def twist(*args: Any, **kwargs: Any) -> Any:" in text
    pair = "def pair(self: Tensor, other: Optional[Tensor] = None, stride: Union[int, Sequence[int]] = 1, "
    assert pair + "size: Sequence[Union[int, SymInt]] = ()) -> tuple[Tensor, Tensor]:" in text
    many = "def many(tensors: Sequence[Tensor], alpha: Number, dtype: Optional[torch.dtype] = None, flag: bool = True, "
    assert many + "mode: str = 'sum') -> list[Tensor]:" in text
    assert "def bump_(self: Tensor, others: Sequence[Tensor], from_: int) -> None:" in text
    assert "    _ops_myops.bump_.default(self, others, from_)\n" in text  # returns nothing
    assert 'return cast("tuple[Tensor, Tensor]", _ops_myops.pair.default(self, other, stride, size))' in text


def test_docstrings_hold_schema_comment_and_gradients(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    text = _api(tmp_yaml, tmp_path)
    assert '"""myops::twist(Tensor self, int turns=1, *, float scale=0.5) -> Tensor\n\n' in text
    assert "    Twists a tensor.\n    Twice as fast as untwisting it.\n\n" in text
    assert "    Autograd: differentiable with respect to self.\n" in text
    assert "Keeps its input alive" not in text  # a blank line separates that comment from `pair`
    assert "Autograd: differentiable with respect to self. Mutates self, others in place." in text
    assert "Autograd: differentiable through the ops it is composed of." in text  # many: CompositeImplicitAutograd
    assert "Autograd: no derivative formula; backward through it raises." in text  # pair: a kernel, no formula


def test_an_unspellable_default_is_an_error_at_its_line(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    native = NATIVE + "\n- func: odd(Tensor self, int dim=some_constant) -> Tensor\n"
    with pytest.raises(VtgenError) as raised:
        _api(tmp_yaml, tmp_path, native)
    assert "the default 'some_constant' of 'dim' has no Python spelling" in raised.value.message
    assert raised.value.location is not None and raised.value.location.line == 17


def test_golden_api_of_the_sample(tmp_path: Path, update_golden: bool) -> None:
    inputs = Inputs(
        str(SAMPLE / "native_functions.yaml"), str(SAMPLE / "derivatives.yaml"), str(SAMPLE / "tags.yaml"), "vtsample"
    )
    write_python_api(plan_inputs(inputs, load_policy()), str(tmp_path / "ops"), batching_rules=True)  # as generate does
    text = (tmp_path / "ops" / "__init__.py").read_text()
    if update_golden:
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), f"{GOLDEN.name} differs: review, then rerun with --update-golden"


def test_generate_writes_and_keeps_the_api(tmp_yaml: YamlWriter, tmp_path: Path, run_cli: CliRunner) -> None:
    inputs = _inputs(tmp_yaml)
    api = tmp_path / "pkg" / "ops"
    args = ["generate", "--native-functions", inputs.native_functions, "--derivatives", inputs.derivatives]
    args += ["--namespace", "myops", "--shards", "1", "--out", str(tmp_path / "out"), "--python-api", str(api)]
    assert run_cli(*args).code == 0
    first = (api / "__init__.py").stat().st_mtime_ns
    done = run_cli(*args)
    assert done.code == 0 and "up to date" in done.out
    assert (api / "__init__.py").stat().st_mtime_ns == first  # nothing rewritten
    (api / "py.typed").unlink()
    assert run_cli(*args).code == 0 and (api / "py.typed").is_file()  # a missing file is written again
    aten = tmp_yaml("aten.yaml", "- func: sin(Tensor self) -> Tensor\n")
    done = run_cli("generate", "--native-functions", aten, "--derivatives", tmp_yaml("d.yaml", "[]\n"), "--out",
                   str(tmp_path / "out2"), "--python-api", str(tmp_path / "none"))  # fmt: skip
    assert done.code == 1 and "--python-api: no operator outside 'aten'" in done.err


_GOOD = """
import torch

import myops_api

x = torch.randn(3)
y: torch.Tensor = myops_api.twist(x)
z: torch.Tensor = myops_api.twist(x, 2, scale=1.5, out=y)
first, second = myops_api.pair(x, stride=(1, 2), size=[2, 3])
parts: list[torch.Tensor] = myops_api.many([x, x], 2.5, dtype=torch.float64)
myops_api.bump_(x, [x], 3)
"""


@pytest.mark.slow
def test_mypy_strict_accepts_right_calls_and_rejects_wrong_ones(
    tmp_yaml: YamlWriter, tmp_path: Path
) -> None:  # fmt: skip
    _torch()
    _api(tmp_yaml, tmp_path)
    (tmp_path / "good.py").write_text(_GOOD)
    (tmp_path / "wrong_type.py").write_text("import torch\n\nimport myops_api\n\nmyops_api.pair(torch.randn(3), 2)\n")
    (tmp_path / "missing.py").write_text("import myops_api\n\nmyops_api.many(alpha=1)\n")
    cmd = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "good.py", "wrong_type.py", "missing.py"]
    done = subprocess.run([*cmd, "myops_api"], cwd=tmp_path, capture_output=True, text=True, check=False)
    errors = sorted(line for line in done.stdout.splitlines() if ": error:" in line)
    assert len(errors) == 2, done.stdout + done.stderr  # nothing in good.py nor in the generated module
    assert errors[0].startswith('missing.py:3: error: Missing positional argument "tensors" in call to "many"')
    assert errors[1].startswith('wrong_type.py:5: error: Argument 2 to "pair" has incompatible type "int"')


_CALLS = """
import pydoc, sys
import torch
sys.path.insert(0, sys.argv[1])
import myops_api

print(pydoc.render_doc(myops_api.pair, renderer=pydoc.plaintext))
lib = torch.library.Library("myops", "DEF")
lib.define("twist(Tensor self, int turns=1, *, float scale=0.5) -> Tensor")
lib.define("twist.out(Tensor self, int turns=1, *, float scale=0.5, Tensor(a!) out) -> Tensor(a!)")
lib.define("pair(Tensor self, Tensor? other=None, int[2] stride=1, SymInt[] size=[]) -> (Tensor, Tensor)")
lib.impl("twist", lambda x, turns=1, scale=0.5: x * turns * scale, "CompositeExplicitAutograd")
lib.impl("twist.out", lambda x, turns=1, *, scale=0.5, out: out.copy_(x * turns * scale), "CompositeExplicitAutograd")
lib.impl("pair", lambda x, other=None, stride=1, size=(): (x + 1, x - 1), "CompositeExplicitAutograd")
x = torch.ones(2)
assert myops_api.twist(x, 3, scale=2.0).tolist() == [6.0, 6.0]
out = torch.empty(2)
myops_api.twist(x, out=out)
assert out.tolist() == [0.5, 0.5]
a, b = myops_api.pair(x, None, [1, 1], [2])
assert a.tolist() == [2.0, 2.0] and b.tolist() == [0.0, 0.0]
print("CALLS-OK")
"""


@pytest.mark.slow
def test_help_shows_the_schema_and_calls_reach_the_ops(tmp_yaml: YamlWriter, tmp_path: Path) -> None:
    _torch()
    _api(tmp_yaml, tmp_path)
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_CALLS), str(tmp_path)], capture_output=True,
                          text=True, check=False, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0 and "CALLS-OK" in done.stdout, done.stdout + done.stderr
    assert "pair(self: 'Tensor', other: 'Optional[Tensor]' = None" in done.stdout, done.stdout
    assert "myops::pair(Tensor self, Tensor? other=None, int[2] stride=1, SymInt[] size=[]) -> (Tensor, Tensor)" in (
        done.stdout
    )
    assert "Autograd: no derivative formula; backward through it raises." in done.stdout


def _cmake(src: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cmake", *map(str, args)], cwd=src, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_cmake_generates_and_installs_the_api(tmp_path: Path) -> None:
    """``vtgen_generate(... PYTHON_API mypkg/ops)``: the generator step writes it, ``cmake --install`` puts it there."""
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("cmake or ninja is not on PATH")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("native_functions.yaml", "derivatives.yaml", "tags.yaml"):
        shutil.copy2(SAMPLE / name, src / name)
    call = "vtgen_generate(lib NATIVE_FUNCTIONS native_functions.yaml DERIVATIVES derivatives.yaml TAGS tags.yaml "
    body = (
        "cmake_minimum_required(VERSION 3.20)\nproject(api LANGUAGES CXX)\nfind_package(vtgen_build CONFIG REQUIRED)\n"
    )
    body += "add_library(lib OBJECT)\n" + call + "NAMESPACE vtsample SHARDS 1 PYTHON_API {dest})\n"
    defines = [f"-Dvtgen_build_DIR={ROOT / 'cmake'}", f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}"]
    (src / "CMakeLists.txt").write_text(body.format(dest="/abs/ops"))
    done = _cmake(src, "-S", src, "-B", src / "bad", "-G", "Ninja", *defines)
    assert done.returncode != 0 and "vtgen_generate(): PYTHON_API must be a relative install destination" in (
        " ".join(done.stderr.split())
    ), done.stderr
    (src / "CMakeLists.txt").write_text(body.format(dest="mypkg/ops"))
    assert _cmake(src, "-S", src, "-B", src / "build", "-G", "Ninja", *defines).returncode == 0
    stamp = "CMakeFiles/lib.dir/vtgen.stamp"  # the generator step alone: no compile needed here
    ninja = subprocess.run(["ninja", "-C", str(src / "build"), stamp], capture_output=True, text=True, check=False)
    assert ninja.returncode == 0, ninja.stdout + ninja.stderr
    done = _cmake(src, "--install", src / "build", "--prefix", tmp_path / "prefix")
    assert done.returncode == 0, done.stdout + done.stderr
    installed = tmp_path / "prefix" / "mypkg" / "ops"
    assert (installed / "__init__.py").read_text() == GOLDEN.read_text()
    assert (installed / "py.typed").is_file()


# An element-wise op named like the module's torch import, its rule spelled through the renamed import.
_RULED_YAML = """\
- func: torch(Tensor self, Tensor other, *, float alpha=1) -> Tensor
  vmap: elementwise
  dispatch:
    CPU: k
- func: rows(Tensor self) -> Tensor
  dispatch:
    CPU: k2
"""
_RULED_CALLS = """
import sys, torch
lib = torch.library.Library("ruled", "DEF")
lib.define("torch(Tensor self, Tensor other, *, float alpha=1) -> Tensor")
lib.define("rows(Tensor self) -> Tensor")
lib.impl("torch", lambda x, y, alpha=1: x + alpha * y, "CompositeExplicitAutograd")
lib.impl("rows", lambda x: x * 2, "CompositeExplicitAutograd")
sys.path.insert(0, sys.argv[1])
import api
api.install_batching_rules()
api.install_batching_rules()  # once: a second call registers nothing again
functorch = torch._C._functorch
functorch._set_vmap_fallback_enabled(False)
x, y = torch.randn(4, 3), torch.randn(3)
got = torch.vmap(torch.ops.ruled.torch, in_dims=(0, None))(x, y, alpha=2.0)
assert torch.allclose(got, x + 2.0 * y), got
try:
    torch.vmap(torch.ops.ruled.rows)(x)
except RuntimeError as exc:
    assert "ruled::rows hit the vmap fallback" in str(exc), exc
else:
    raise AssertionError("rows has no rule: vmap needs the fallback")
print("RULED-OK")
"""


@pytest.mark.parametrize("stable", [False, True], ids=["classic", "stable"])
def test_the_classic_api_installs_the_batching_rules(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path, stable: bool
) -> None:
    """Classic mode: the typed API module lists the element-wise ops (``vmap: elementwise``) in BATCHING_RULES and
    ``install_batching_rules()`` registers their rule (one call of the op under vmap, with the fallback off); an
    op without the key keeps the fallback.  Stable mode: its Python autograd module registers them, the API none."""
    args = ["--native-functions", tmp_yaml("nf.yaml", _RULED_YAML), "--derivatives", tmp_yaml("d.yaml", "")]
    args += ["--namespace", "ruled", "--out", str(tmp_path / "out"), "--python-api", str(tmp_path / "api")]
    if stable:
        args += ["--register-backends", "CPU", "--stable-abi", "2.10"]
    result = run_cli("generate", *args)
    assert result.code == 0, result.err
    text = (tmp_path / "api" / "__init__.py").read_text()
    if stable:
        assert "BATCHING_RULES" not in text and "install_batching_rules" not in text
        return
    assert 'BATCHING_RULES: tuple[str, ...] = ("ruled::torch",)' in text, text
    assert "_torch.library.Library" in text and "functorch = _torch._C._functorch" in text
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    done = subprocess.run([sys.executable, "-c", _RULED_CALLS, str(tmp_path)], capture_output=True, text=True,
                          check=False, timeout=300, env={**os.environ, "PYTHONPATH": ""})  # fmt: skip
    assert done.returncode == 0 and "RULED-OK" in done.stdout, done.stdout + done.stderr[-3000:]


def test_an_op_named_like_the_batching_helper_is_refused(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", "- func: install_batching_rules(Tensor self) -> Tensor\n  vmap: elementwise\n")
    args = ["--native-functions", native, "--derivatives", tmp_yaml("d.yaml", ""), "--namespace", "lib"]
    result = run_cli("generate", *args, "--out", str(tmp_path / "out"), "--python-api", str(tmp_path / "api"))
    said = f"{native}:1: error: operator 'install_batching_rules' has the name of the typed API's batching helper"
    assert result.code == 1 and said in result.err, result.err
