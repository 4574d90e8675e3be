"""`generate` on the real yaml: deterministic output, no-op reruns, minimal rewrites after an edit."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from vtgen_build.cli.commands import main
from vtgen_build.engine.generate import GenerateOptions, default_shards, generate
from vtgen_build.model import Inputs, Model

from .conftest import SAMPLE, sample_inputs

pytestmark = pytest.mark.torch


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).parts[0].startswith(".vtgen")  # manifest, cache
    }


def _texts(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.suffix in (".h", ".cpp")}


def _run_cli(args: list[str], cwd: Path, seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run(
        [sys.executable, "-m", "vtgen_build", "generate", *args], cwd=cwd, env=env, check=True, capture_output=True
    )


def test_output_is_identical_across_hash_seeds_and_directories(real_yaml, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    a, b = tmp_path / "a", tmp_path / "elsewhere" / "b"
    b.parent.mkdir()
    common = ["--pytorch-root", str(real_yaml.torchgen_dir), "--shards", "3"]
    _run_cli([*common, "--out", str(a)], tmp_path, "1")
    _run_cli([*common, "--out", "b"], b.parent, "4242")
    digest = _tree_digest(a)
    assert digest == _tree_digest(b)
    declared = "".join(
        digest_text for p, digest_text in _texts(a).items() if p.startswith("Functions_") and p.endswith(".h")
    )
    assert declared.count("struct TORCH_API ") == 711
    text = (a / "VariableType_0.cpp").read_text()
    assert str(tmp_path) not in text and str(real_yaml.torchgen_dir) not in text


def _copy_inputs(real_yaml, tmp_path: Path) -> Inputs:  # type: ignore[no-untyped-def]
    native, deriv, tags = (tmp_path / n for n in ("native_functions.yaml", "derivatives.yaml", "tags.yaml"))
    shutil.copy(real_yaml.native_functions, native)
    shutil.copy(real_yaml.derivatives, deriv)
    shutil.copy(real_yaml.tags, tags)
    return Inputs(str(native), str(deriv), str(tags))


def test_rerun_is_a_no_op_and_one_formula_edit_rewrites_one_file(real_yaml, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inputs = _copy_inputs(real_yaml, tmp_path)
    options = GenerateOptions(str(tmp_path / "out"))
    first = generate(inputs, options)
    # VariableType, Functions .cpp and .h, ADInplaceOrViewType: 10 each; Functions(Base).h, RegisterSchema.cpp
    assert first.plan is not None and len(first.written) == 10 + 10 + 10 + 10 + 3
    again = generate(inputs, options)
    assert again.plan is None and again.written == ()
    os.utime(inputs.derivatives)  # touched, same content: still nothing to do
    assert generate(inputs, options).written == ()
    deriv = Path(inputs.derivatives)
    text = deriv.read_text()
    # dot has its own forward formula and no _foreach_ twin, so only DotBackward0's apply changes.
    # (sin's kernel would change too: its auto_element_wise JVP is derived from the backward formula.)
    old = "  self: grad * tensor.conj()\n"
    assert text.count(old) == 1
    edited = text.replace(old, "  self: grad * tensor.conj() * 1\n")
    assert edited != text
    deriv.write_text(edited)
    after = generate(inputs, options)
    assert after.plan is not None
    assert len(after.written) == 1 and after.written[0].startswith("Functions_")
    assert "grad * tensor.conj() * 1" in (tmp_path / "out" / after.written[0]).read_text()
    # sin's kernels (sin, sin_, sin.out, _foreach_sin...) share one shard, its Nodes another:
    # its auto_element_wise JVP follows the backward formula, so exactly those two files change.
    text = deriv.read_text()
    sin = "  self: grad * self.cos().conj()\n"
    assert text.count(sin) == 1
    deriv.write_text(text.replace(sin, "  self: grad * self.cos().conj() * 1\n"))
    sin_edit = generate(inputs, options)
    assert sorted(f.split("_")[0] for f in sin_edit.written) == ["Functions", "VariableType"]


def test_bad_formula_is_reported_at_its_line_and_nothing_is_written(real_yaml, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from vtgen_build.cli import commands as cli

    inputs = _copy_inputs(real_yaml, tmp_path)
    deriv = Path(inputs.derivatives)
    lines = deriv.read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if line.startswith("- name: sin(Tensor self)"))
    lines.insert(index + 1, "  selff: grad\n")
    deriv.write_text("".join(lines))
    out = tmp_path / "out"
    code = cli.main(
        [
            "generate",
            "--native-functions",
            inputs.native_functions,
            "--derivatives",
            inputs.derivatives,
            "--tags",
            str(inputs.tags),
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert f"{inputs.derivatives}:{index + 2}: error: 'selff' is not an argument or output of 'sin'" in err
    assert "did you mean 'self'?" in err
    assert "Traceback" not in err
    assert not list(out.glob("*.cpp"))


def test_cli_shards_follow_the_librarys_size_like_cmake_and_setuptools(tmp_path: Path) -> None:
    """No --shards: one shard per 32 entries of native_functions.yaml (default_shards), the count
    vtgen_generate() and the setuptools hook give; the sample's 12 entries get one per kind."""
    assert default_shards((SAMPLE / "native_functions.yaml").read_text()) == 1
    assert main(["generate", *sample_inputs(), "--out", str(tmp_path / "out")]) == 0
    units = sorted(p.name for p in (tmp_path / "out").glob("VariableType_*.cpp"))
    assert units == ["VariableType_0.cpp"]
    assert main(["generate", *sample_inputs(), "--shards", "3", "--out", str(tmp_path / "three")]) == 0
    assert len(list((tmp_path / "three").glob("VariableType_*.cpp"))) == 3


def test_depfile_lists_the_generators_own_modules(tmp_path: Path) -> None:
    """The depfile a build system reads (CMake's vtgen.d) names the yaml, the templates and data, and
    every module of vtgen_build: an upgrade of the generator in place reruns the generate step."""
    import vtgen_build
    from vtgen_build.compile import parse_depfile

    depfile = tmp_path / "vtgen.d"
    args = ["generate", *sample_inputs(), "--out", str(tmp_path / "out"), "--depfile", str(depfile)]
    assert main(args) == 0
    deps = parse_depfile(depfile.read_text(encoding="utf-8"))
    package = Path(vtgen_build.__file__).resolve().parent
    modules = sorted(str(p) for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    assert str(package / "emit" / "files.py") in deps and str(package / "engine" / "generate.py") in deps
    assert set(modules) <= set(deps), sorted(set(modules) - set(deps))[:5]
    assert str(package / "templates" / "VariableType.cpp") in deps
    assert str((SAMPLE / "derivatives.yaml").resolve()) in deps


def test_a_foreach_op_without_its_entry_applies_a_saved_call_element_by_element(real_model: Model) -> None:
    """Found deleting 2.13's _foreach_mm entry: mm's saved value strides_or_error(mat2, "mat2") was looked up as
    an argument named by the text before its first dot, and generate crashed with a KeyError traceback.  Each
    argument the saved value names is its element, spelled as a backward formula spells it (strides_or_error is
    declared only where the forward kernels are); a saved value naming none of the _foreach_ op's arguments is
    an error at the per-tensor formula's line.  Planned from the session's model of the real yaml, reduced to mm,
    _foreach_mm and mm's entry (the whole yaml's plan is seconds; its other ops play no part)."""
    from vtgen_build.base.errors import Location, VtgenError
    from vtgen_build.plan.formulas import SavedValue
    from vtgen_build.plan.infos import Backward
    from vtgen_build.plan.kernel import build_plan
    from vtgen_build.plan.match import _foreach_backward
    from vtgen_build.plan.policy import load_policy

    ops = {"mm", "_foreach_mm"}
    native = tuple(f for f in real_model.native_functions if f.name.name in ops)
    entries = tuple(e for e in real_model.derivatives if str(e.schema.name.name) == "mm")
    assert {str(f.func.name) for f in native} >= {"mm", "_foreach_mm"} and entries
    plan = build_plan(replace(real_model, native_functions=native, derivatives=entries), load_policy())
    (info,) = [i for i in plan.infos if str(i.func.name) == "_foreach_mm"]
    formulas = " ".join(b.formula for b in info.backward)
    assert "mat2[i].sym_strides()" in formulas and "self[i].sym_strides()" in formulas and "strides_or" not in formulas
    assert {v.name for b in info.backward for v in b.saved_inputs} == {"self", "mat2"}

    saved = SavedValue("x_strides", "std::vector<int64_t>", 'strides_or_error(x, "x")')
    orphan = Backward(("self",), "f(grad, x_strides)", "f(grad, x.strides())", (saved,), (), frozenset(),
                      Location("derivatives.yaml", 7))  # fmt: skip
    with pytest.raises(VtgenError) as caught:
        _foreach_backward(orphan, {"self": info.func.func.arguments.non_out[0]}, info.func)
    assert caught.value.location == Location("derivatives.yaml", 7) and "'x'" not in str(caught.value)
    assert "names none of its arguments" in str(caught.value)
