"""``check --gradcheck`` trusts nothing it cached: an edited helper header recompiles and is checked.

One small op library (``sin`` and ``sin_`` of the real schema, whose backward formula calls a
helper of the user's header found through ``-I``) against the installed torch, two runs: the
helper is right and the checks pass; then the helper, passed with ``-I`` (which ``check`` hands
to the compiler as ``-isystem``), is edited to a wrong derivative: its unit is compiled again
and the check fails at the formula.  (Forged, truncated and planted objects and libraries:
``tests/test_artifact_cache.py``, with a real loader and a stand-in torch, in seconds.)
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import CliRunner, RealYaml, sample_inputs
from vtgen_build import gradcheck
from vtgen_build.base.errors import VtgenError
from vtgen_build.check import CheckOptions
from vtgen_build.compile import ArtifactCache, Compiler, identify
from vtgen_build.engine.generate import GenerateOptions
from vtgen_build.gradcheck import GradcheckOptions, Report, run
from vtgen_build.gradcheck.analyses import torch_key
from vtgen_build.gradcheck.formulas import formula_places
from vtgen_build.gradcheck.run import _target
from vtgen_build.gradcheck.units import Registration
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan import policy
from vtgen_build.plan.request import BuildRequest
from vtgen_build.plan.target import Target, resolve_target
from vtgen_build.torchlib import BuildSettings, TorchInstall, compile_objects
from vtgen_build.torchlib.build import Session

_NATIVE = """\
- func: sin(Tensor self) -> Tensor
  variants: function, method
  tags: [core, pointwise]

- func: sin_(Tensor(a!) self) -> Tensor(a!)
  variants: function, method
  tags: pointwise
"""
_DERIVATIVES = """\
- name: sin(Tensor self) -> Tensor
  self: my_sin_backward(grad, self)
  result: auto_element_wise
"""
_HELPER = """\
#pragma once
#include <ATen/ATen.h>
namespace my_helpers {
inline at::Tensor my_sin_backward(const at::Tensor& grad, const at::Tensor& self) { return %s; }
}  // namespace my_helpers
"""


def _vtgen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vtgen_build", *args], capture_output=True, text=True, check=False)


@pytest.mark.slow
@pytest.mark.torch
def test_gradcheck_recompiles_an_edited_helper_header(real_yaml: RealYaml, tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None or shutil.which("g++") is None:
        pytest.skip("needs torch and g++")
    root = tmp_path / "my ops"  # a path with a space
    (root / "include" / "my").mkdir(parents=True)
    (root / "native_functions.yaml").write_text(_NATIVE)
    (root / "derivatives.yaml").write_text(_DERIVATIVES)
    helper = root / "include" / "my" / "helpers.h"
    helper.write_text(_HELPER % "grad * self.cos().conj()")
    out = tmp_path / "out"
    args = ["check", "--native-functions", str(root / "native_functions.yaml"), "--derivatives"]
    args += [str(root / "derivatives.yaml"), "--tags", str(real_yaml.tags), "--out", str(out), "--shards", "1"]
    args += ["--manual-header", "my/helpers.h", "--using-namespace", "my_helpers", "-I", str(root / "include")]
    args += ["--gradcheck", "--op", "sin", "--max-samples", "1"]

    first = _vtgen(*args)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    assert "failed 0" in first.stdout and "OpInfo entries run: 0" not in first.stdout

    helper.write_text(_HELPER % "grad * self.sin()")  # wrong
    second = _vtgen(*args)
    assert second.returncode == 1, second.stdout + second.stderr[-3000:]
    # the unit including the header (sin's kernels and Nodes), nothing else: not the registrations (table, registrar)
    assert "(3 units, 1 compiled now, linked)" in second.stdout + second.stderr
    assert "derivatives.yaml:2: error: gradcheck failed for sin" in second.stderr


# -- the compile options of --gradcheck: honoured or rejected, never ignored ------------------------
def test_gradcheck_receives_the_compile_options(
    run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[GradcheckOptions] = []
    targets: list[Target] = []

    def fake(inputs: Inputs, gen_options: GenerateOptions, options: GradcheckOptions) -> Report:
        seen.append(options)
        targets.append(gen_options.request.target)
        return Report.nothing_to_do(0.0)

    monkeypatch.setattr(gradcheck, "run_gradcheck", fake)
    args = ["check", *sample_inputs(), "--out", str(tmp_path), "--gradcheck"]
    more = ["--std", "c++20", "--launcher", "ccache", "--no-cache", "--torch-include", "/x/include"]
    assert run_cli(*args, *more, "--torch-version", "2.13").code == 0
    (options,) = seen
    compiling = options.check  # the compile settings a check takes too, made once by the CLI
    assert (compiling.std, compiling.launcher, compiling.cache, compiling.pch) == ("c++20", "ccache", False, True)
    assert compiling.torch_include == "/x/include"
    assert (targets[0].found, targets[0].source) == ("2.13", "--torch-version")  # resolved once, by the CLI
    assert run_cli(*args, "--no-pch").code == 0 and not seen[-1].check.pch


def _torch(root: Path, version: str) -> TorchInstall:
    return TorchInstall(sys.executable, version, root, (root / "include",), root / "lib", True)


def test_gradcheck_targets_the_release_of_the_torch_that_loads_the_library(tmp_path: Path) -> None:
    torch = _torch(tmp_path, "2.13.0+cpu")

    def options(target: Target) -> GenerateOptions:
        return GenerateOptions(str(tmp_path), request=BuildRequest(target=target))

    plain = options(Target("2.13", "2.13.0", "torch/version.h"))
    running, note = _target(torch, GradcheckOptions(), plain)
    assert (running.release, running.found, note) == ("2.13", "2.13.0+cpu", None)
    running, note = _target(torch, GradcheckOptions(), options(Target("2.14", "2.14.1", "torch/version.h")))
    assert running.release == "2.13" and note is not None and "the inputs point at 2.14, from torch/version.h" in note
    with pytest.raises(VtgenError, match=r"--torch-version 2\.14: --gradcheck builds for the torch that runs"):
        _target(torch, GradcheckOptions(), options(resolve_target("2.14", None, None)))
    assert _target(torch, GradcheckOptions(), options(resolve_target("2.13.1", None, None)))[0].release == "2.13"
    with pytest.raises(VtgenError, match=r"--torch-include .*other: --gradcheck compiles against the headers"):
        _target(torch, GradcheckOptions(CheckOptions(torch_include=str(tmp_path / "other"))), plain)
    assert (
        _target(torch, GradcheckOptions(CheckOptions(torch_include=str(tmp_path / "include"))), plain)[0].release
        == "2.13"
    )


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_gradcheck_build_runs_the_launcher_with_the_standard_asked(tmp_path: Path) -> None:
    log = tmp_path / "launched"
    launcher = tmp_path / "launcher"
    launcher.write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "$@"\n')
    launcher.chmod(0o755)
    (tmp_path / "include").mkdir()
    compiler = identify(shutil.which("g++") or "g++")
    unit = [("u", "static_assert(__cplusplus >= 202002L);\nint u() { return 1; }\n")]
    settings = BuildSettings(
        compiler, _torch(tmp_path, "2.13.0"), tmp_path / "b", std="c++20", launcher=(str(launcher),)
    )
    assert compile_objects(settings, unit)[0].object is not None
    assert "-std=c++20" in log.read_text()
    again = compile_objects(replace(settings, use_cache=False), unit)  # --no-cache: compiled again
    assert again[0].compiled and len(log.read_text().splitlines()) == 2


def test_formula_places_follow_the_target_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The policy the places are planned with is the release's (or --pytorch-root's), and part of the key."""
    asked: list[tuple[str | None, str]] = []
    real = policy.policy_for

    def recording(root: str | None, release: str) -> policy.Policy:
        asked.append((root, release))
        return real(root, release)

    monkeypatch.setattr(policy, "policy_for", recording)
    args = sample_inputs()
    inputs = Inputs(args[1], args[3], args[5], "vtsample")
    first = formula_places(inputs, tmp_path, "2.13")
    assert formula_places(inputs, tmp_path, "2.13") == first and asked == [(None, "2.13")]  # cached
    assert formula_places(inputs, tmp_path, "2.14") == first and asked[-1] == (None, "2.14")  # not the 2.13 record


def test_an_edit_inside_a_formula_reuses_the_places_and_a_change_of_shape_plans_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The edit-verify loop edits a formula's text: the places stay (no re-plan of every op); a formula made
    ``not_implemented(...)`` or a moved line is a change of shape: planned again, the new places."""
    import vtgen_build.gradcheck.formulas as formulas

    args = sample_inputs()
    derivatives = tmp_path / "derivatives.yaml"
    text = Path(args[3]).read_text(encoding="utf-8")
    right = "  self: softsign_backward(grad, self)\n"
    derivatives.write_text(text, encoding="utf-8")
    inputs = Inputs(args[1], str(derivatives), args[5], "vtsample")
    first = formula_places(inputs, tmp_path, "2.13")
    planned: list[int] = []
    real = formulas._plan_places
    monkeypatch.setattr(formulas, "_plan_places", lambda *a: planned.append(1) or real(*a))
    derivatives.write_text(text.replace(right, "  self: 2 * softsign_backward(grad, self)\n"), encoding="utf-8")
    assert formula_places(inputs, tmp_path, "2.13") == first and planned == []
    assert formula_places(inputs, tmp_path, "2.13") == first and planned == []  # the record took the new content
    derivatives.write_text(text.replace(right, '  self: not_implemented("softsign")\n'), encoding="utf-8")
    assert formula_places(inputs, tmp_path, "2.13")["softsign"].differentiable == () and planned == [1]
    derivatives.write_text(text.replace(right, "\n" + right), encoding="utf-8")  # every line below moves
    moved = formula_places(inputs, tmp_path, "2.13")["softsign"]
    assert moved.backward_at(0) == replace(
        first["softsign"].backward_at(0), line=first["softsign"].backward_at(0).line + 1
    )
    assert planned == [1, 1]


_DAMAGED_PLACES = """
import json, sys
from pathlib import Path
from vtgen_build.base import store
from vtgen_build.gradcheck.formulas import formula_places
from vtgen_build.inputs.files import Inputs
inputs, cache = Inputs(*sys.argv[1:4], "vtsample"), Path(sys.argv[4])
formula_places(inputs, cache, "2.13")
data = store.read(cache / "formulas.json", "formula_places_v6")
if data is None:
    sys.exit("formulas.json did not read as formula_places_v6 (the state kind changed?)")
data["ops"]["softsign"]["arguments"] = "self"  # a well-formed file (its hash is right) holding a wrong shape
store.write(cache / "formulas.json", "formula_places_v6", data)
print(json.dumps(formula_places(inputs, cache, "2.13")["softsign"].arguments))
"""


def test_a_damaged_formula_row_is_no_cache_even_under_python_O(tmp_path: Path) -> None:
    """Rows read back from disk were checked with ``assert``, which ``python -O`` strips: the string "self"
    became the arguments s, e, l, f.  A row of the wrong shape now makes the whole record "no cache"."""
    args = sample_inputs()
    script = [sys.executable, "-O", "-c", _DAMAGED_PLACES, args[1], args[3], args[5], str(tmp_path)]
    done = subprocess.run(script, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == '["self"]'


def test_no_assert_checks_what_the_gradcheck_parent_reads() -> None:
    """``python -O`` strips ``assert``: the parent side of --gradcheck (which reads state files and the
    children's answers) checks with ``VtgenError`` and ifs.  The child scripts are not its business."""
    import ast

    children = {"child.py", "schema_child.py", "child_loop.py", "capture.py", "sample_sources.py"}
    folder = Path(gradcheck.__file__).parent
    found = [
        f"{path.name}:{node.lineno}"
        for path in sorted(folder.glob("*.py"))
        if path.name not in children
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert not found


def test_the_installed_schemas_are_keyed_by_content_not_by_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer of the installed torch (here: its schemas) is an artifact-cache entry verified by the
    content of the torch libraries: a library rewritten keeping its size and mtime is asked again."""
    torch = _torch(tmp_path, "2.13.0+cpu")
    torch.lib_dir.mkdir()
    for library in torch.libraries:
        library.write_bytes(b"A" * 64)
    settings = BuildSettings(Compiler("c++", "gcc", "c++ 1", "id"), torch, tmp_path / "work", release="2.13")
    asked: list[list[str]] = []

    def answer(worker: object, python: str, argv: list[str], said: Path) -> int:
        asked.append(json.loads(Path(argv[-2]).read_text()))
        Path(argv[-1]).write_text(json.dumps({"aten::sin": [["self"], [], ""]}))
        return 0

    monkeypatch.setattr(run, "run_python", answer)
    regs = [Registration("aten", "Autograd", "sin", "sin_kernel")]
    work = tmp_path / "work"
    work.mkdir()

    def schemas() -> object:
        found = run._installed_schemas(settings, Session(ArtifactCache.open(tmp_path / "cache")), regs, work, None)
        return found.to_json()

    assert schemas() == {"aten::sin": [["self"], [], ""]} and asked == [["aten::sin"]]
    assert schemas() == {"aten::sin": [["self"], [], ""]} and len(asked) == 1  # a new run: from the cache
    victim = torch.libraries[1]
    before = victim.stat()
    victim.write_bytes(b"B" * 64)
    os.utime(victim, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (victim.stat().st_size, victim.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert schemas() == {"aten::sin": [["self"], [], ""]} and len(asked) == 2  # other content: asked again
    assert schemas() is not None and len(asked) == 2
    other = replace(settings, torch=_torch(tmp_path, "2.13.1"))
    assert torch_key(run.SCHEMAS, other.torch, "2.13", "[]") != torch_key(run.SCHEMAS, torch, "2.13", "[]")


@pytest.mark.parametrize(
    "cached", [{"aten::sin": [["self"], []]}, {"aten::sin": [["self"], [], 3]}, ["aten::sin"], {"aten::sin": "x"}]
)
def test_a_cached_schemas_answer_of_another_form_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached: object
) -> None:
    """The one-key rule: the cached schemas answer is verified before use; a record of another form (an earlier
    version's, a damaged one) reads as no record, and torch is asked again."""
    torch = _torch(tmp_path, "2.13.0+cpu")
    settings = BuildSettings(Compiler("c++", "gcc", "c++ 1", "id"), torch, tmp_path / "work", release="2.13")
    asked: list[object] = []

    def answer(worker: object, python: str, argv: list[str], said: Path) -> int:
        asked.append(json.loads(Path(argv[-2]).read_text()))
        Path(argv[-1]).write_text(json.dumps({"aten::sin": [["self"], [], ""]}))
        return 0

    monkeypatch.setattr(run, "run_python", answer)
    monkeypatch.setattr(run, "recall", lambda session, key, kind: cached)
    monkeypatch.setattr(run, "remember", lambda *args: None)
    work = tmp_path / "work"
    work.mkdir()
    regs = [Registration("aten", "Autograd", "sin", "sin_kernel")]
    found = run._installed_schemas(settings, Session(ArtifactCache.open(tmp_path / "cache")), regs, work, None)
    assert asked == [["aten::sin"]]
    assert found == run.InstalledSchemas.from_json({"aten::sin": [["self"], [], ""]})
