"""The real CI tools on a throwaway git repository laid out like a PyTorch checkout: lintrunner, pre-commit.

Each compiles the sample's units against the stub headers (one shard, no precompiled
headers); a tool that is not installed skips its test (``pip install -e '.[test]'`` has both).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .ci_repo import DERIVATIVES, checkout_options, edit, git, make_checkout

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
pytestmark = [
    pytest.mark.skipif(CXX is None, reason="no C++ compiler"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git not installed"),
]
BROKEN = ("stack_mean_backward(grad, dim, tensors.size())", "stack_mean_backward(grad, dim, tensors.sizee())")


def _relative_options(repo: Path) -> list[str]:
    """The checkout's check options, spelled relative to the repository (as a config file there would)."""
    spelled = {str(repo): ".", str(repo / "include"): "include"}
    return [spelled.get(o, o) for o in checkout_options(repo)] + ["--shards", "1", "--no-pch"]


def _line_of(path: Path, text: str) -> int:
    return path.read_text(encoding="utf-8")[: path.read_text(encoding="utf-8").index(text)].count("\n") + 1


# -- lintrunner --------------------------------------------------------------------------------
def _lintrunner(repo: Path, data: Path, *options: str) -> list[dict[str, object]]:
    done = subprocess.run(
        ["lintrunner", "--all-files", "--output", "json", "--data-path", str(data), *options],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    # -a adds a last line of its own ("Successfully applied all patches.")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _lintrunner_checkout(tmp_path: Path) -> Path:
    """A checkout whose ``.lintrunner.toml`` runs the adapter on its yaml and helper header."""
    repo = make_checkout(tmp_path / "pytorch")
    command = [sys.executable, "-m", "vtgen_build.lintrunner", "--paths-file", "{{PATHSFILE}}"]
    command += [*_relative_options(repo), "--out", str(tmp_path / "check")]
    (repo / ".lintrunner.toml").write_text(
        "[[linter]]\ncode = 'VTGEN'\n"
        "include_patterns = ['aten/src/ATen/native/*.yaml', 'tools/autograd/derivatives.yaml', 'include/**/*.h']\n"
        f"command = {json.dumps(command)}\n",
        encoding="utf-8",
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "lintrunner")
    return repo


@pytest.mark.skipif(shutil.which("lintrunner") is None, reason="lintrunner not installed (pip install lintrunner)")
def test_lintrunner_reports_a_broken_formula_at_its_line(tmp_path: Path) -> None:
    repo = _lintrunner_checkout(tmp_path)
    assert _lintrunner(repo, tmp_path / "data") == []  # a clean tree: no message
    edit(repo / DERIVATIVES, *BROKEN)
    (message,) = _lintrunner(repo, tmp_path / "data")
    assert message["path"] == str(repo / DERIVATIVES) or message["path"] == DERIVATIVES
    assert message["line"] == _line_of(repo / DERIVATIVES, BROKEN[1])
    assert (message["code"], message["name"], message["severity"]) == ("VTGEN", "VTGEN-COMPILE", "error")
    assert "sizee" in str(message["description"])


KEY = ("output_differentiability: [True, False]", "output_differentiabilty: [True, False]")
COSS = ("softsign_backward(grad, self)", "softsign_backward(grad, self.coss())")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("lintrunner") is None, reason="lintrunner not installed (pip install lintrunner)")
def test_lintrunner_applies_the_did_you_means_of_a_misspelled_key_and_a_misspelled_call(tmp_path: Path) -> None:
    """The yaml's own did-you-mean, then the compiler's (g++/clang++ ``did you mean 'cos'?``), each applied by -a."""
    repo = _lintrunner_checkout(tmp_path)
    edit(repo / DERIVATIVES, *KEY)
    edit(repo / DERIVATIVES, *COSS)
    data = tmp_path / "data"
    (key,) = _lintrunner(repo, data)  # a yaml error stops the check before any compile
    assert (key["name"], key["line"]) == ("VTGEN-YAML", _line_of(repo / DERIVATIVES, KEY[1]))
    assert "did you mean 'output_differentiability'" in str(key["description"])
    assert key["replacement"] == str(key["original"]).replace(KEY[1], KEY[0])
    assert _lintrunner(repo, data, "-a") == []  # applied: nothing left unfixed to print
    original = (repo / DERIVATIVES).read_text(encoding="utf-8")
    assert _lintrunner(repo, data, "-a") == []  # now it compiles: the compiler's suggestion, applied
    assert (repo / DERIVATIVES).read_text(encoding="utf-8") == original.replace(COSS[1], COSS[1].replace("coss", "cos"))
    assert git(repo, "diff", "--", DERIVATIVES).count("\n+ ") == 1  # the key is back; one call edited
    assert _lintrunner(repo, data) == []  # the fixed yaml checks clean


# -- pre-commit --------------------------------------------------------------------------------
_PYPROJECT = """\
[tool.vtgen_build]
native-functions = "aten/src/ATen/native/native_functions.yaml"
derivatives = "tools/autograd/derivatives.yaml"
tags = "aten/src/ATen/native/tags.yaml"
output-dir = "src/vtsample/_autograd"
namespace = "vtsample"
shards = 1
manual-headers = ["vtsample/helpers.h"]
include-dirs = ["include"]
using-namespaces = ["torch::autograd::generated::details"]
"""


def _try_repo(repo: Path, tmp_path: Path) -> tuple[int, str]:
    """``pre-commit try-repo`` of this checkout's hook on ``repo``'s staged files (no network: a local path)."""
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # this vtgen_build
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        ["pre-commit", "try-repo", str(root), "vtgen-check", "--verbose"],
        cwd=repo, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.skipif(shutil.which("pre-commit") is None, reason="pre-commit not installed (pip install pre-commit)")
def test_pre_commit_hook_blocks_a_bad_formula_and_passes_a_good_one(tmp_path: Path) -> None:
    repo = make_checkout(tmp_path / "ops")
    (repo / "pyproject.toml").write_text(_PYPROJECT, encoding="utf-8")  # the hook's options, as a project has them
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "project")
    edit(repo / DERIVATIVES, *BROKEN)
    git(repo, "add", DERIVATIVES)
    code, output = _try_repo(repo, tmp_path)
    assert code == 1, output
    assert f"{DERIVATIVES}:{_line_of(repo / DERIVATIVES, BROKEN[1])}:" in output and "sizee" in output
    assert "failing ops: stack_mean" in output
    edit(repo / DERIVATIVES, BROKEN[1], BROKEN[1].replace("tensors.sizee()", "tensors.size() + 0"))
    git(repo, "add", DERIVATIVES)
    code, output = _try_repo(repo, tmp_path)
    assert code == 0, output
    assert "Passed" in output and "[1/1] ops.cpp: ok" in output  # only the edited op, in one small unit


def test_lintrunner_adapter_ignores_other_files_and_reports_its_own_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vtgen_build import lintrunner

    repo = make_checkout(tmp_path / "pytorch")
    assert lintrunner.main([*checkout_options(repo), "--", str(repo / "README.md")]) == 0
    assert capsys.readouterr().out == ""  # no file the check reads: nothing run, nothing printed
    assert lintrunner.main(["--pytorch-root", str(tmp_path / "nowhere"), "--", str(repo / DERIVATIVES)]) == 0
    (message,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert (message["code"], message["name"], message["severity"], message["path"]) == (
        "VTGEN", "VTGEN-INPUT", "error", None,
    )  # fmt: skip
    assert "not a PyTorch checkout" in message["description"]


def test_lintrunner_adapter_gives_each_fixing_message_the_whole_file_with_every_fix(tmp_path: Path) -> None:
    """lintrunner writes each message's replacement over the file: each must hold all of that file's fixes.
    A fix whose word is no longer at its place (the file moved on) makes no replacement."""
    from vtgen_build import lintrunner

    yaml = tmp_path / "d.yaml"
    yaml.write_text("- name: f\n  slef: grad.coss()\n  other: grad.sinn()\n", encoding="utf-8")

    def diagnostic(line: int, column: int, old: str, new: str) -> dict[str, object]:
        fix = {"line": line, "column": column, "old": old, "new": new}
        return {"file": str(yaml), "line": line, "severity": "error", "code": "VTGEN-COMPILE", "fix": fix}

    found = [diagnostic(3, 15, "sinn", "sin"), diagnostic(2, 3, "slef", "self"), diagnostic(2, 14, "coss", "cos")]
    found.append({"file": str(yaml), "line": 1, "severity": "error", "code": "VTGEN-YAML", "fix": None})
    messages = lintrunner.lint_messages({"diagnostics": found})
    fixed = "- name: f\n  self: grad.cos()\n  other: grad.sin()\n"
    assert [(m["original"], m["replacement"]) for m in messages] == [(yaml.read_text(), fixed)] * 3 + [(None, None)]
    stale = lintrunner.lint_messages({"diagnostics": [diagnostic(2, 4, "slef", "self")]})  # one column off
    assert (stale[0]["original"], stale[0]["replacement"]) == (None, None)
