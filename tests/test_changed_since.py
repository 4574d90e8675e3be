"""``check --changed-since REV``: the ops whose entries differ from a git revision, in a real git repository."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.check import CheckOptions
from vtgen_build.emit.output_index import read_index
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.gradcheck.report import Report
from vtgen_build.gradcheck.run import GradcheckOptions, _selected
from vtgen_build.gradcheck.units import read_registrations
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.request import BuildRequest
from vtgen_build.revisions import changes_since

from .ci_repo import DERIVATIVES, HELPERS, NATIVE, TAGS, checkout_options, edit, git, make_checkout
from .conftest import CliRunner

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")


def inputs(repo: Path) -> Inputs:
    return Inputs(str(repo / NATIVE), str(repo / DERIVATIVES), str(repo / TAGS), "vtsample")


def generated(repo: Path) -> Path:
    """The check build of the checkout (formulas carry #line to the yaml, as ``check`` writes them)."""
    out = repo.parent / "out"
    options = GenerateOptions(
        str(out), 2, BuildRequest("vtsample", manual_headers=("vtsample/helpers.h",)), line_directives=True
    )
    generate(inputs(repo), options)
    return out


def selected(repo: Path, rev: str = "HEAD") -> list[str] | None:
    """The ops ``--changed-since rev`` checks (None: every op), from the generated code's index."""
    out = generated(repo)
    changes = changes_since(rev, inputs(repo), [str(repo / HELPERS)], None)
    return changes.select(read_index(out))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_checkout(tmp_path / "pytorch")


def test_nothing_changed_selects_nothing(repo: Path) -> None:
    assert selected(repo) == []


def test_a_formula_edit_selects_its_op(repo: Path) -> None:
    edit(
        repo / DERIVATIVES,
        "soft_quantize_backward(grad, self, scale, bits)",
        "soft_quantize_backward(grad * 2, self, scale, bits)",
    )
    assert selected(repo) == ["soft_quantize"]


def _entry_line(repo: Path, rel: str, first_line: str) -> int:
    return (repo / rel).read_text(encoding="utf-8").split("\n").index(first_line) + 1


def test_a_signature_edit_selects_the_op_and_its_derivative_entry(repo: Path) -> None:
    old, new = "stack_mean(Tensor[] tensors, int dim=0) -> Tensor", "stack_mean(Tensor[] tensors, int dim=1) -> Tensor"
    edit(repo / NATIVE, f"- func: {old}", f"- func: {new}")
    edit(repo / DERIVATIVES, f"- name: {old}", f"- name: {new}")  # the entry names the schema it is for
    changes = changes_since("HEAD", inputs(repo), [], None)
    assert changes.ops == ("stack_mean",)
    line = _entry_line(repo, DERIVATIVES, f"- name: {new}")
    assert changes.spans == ((line, line + 1),)  # the entry and its formula
    assert selected(repo) == ["stack_mean"]


def test_a_native_entry_edit_selects_the_op_and_its_derivative_entry(repo: Path) -> None:
    edit(
        repo / NATIVE,
        "  variants: function\n  dispatch:\n    CPU: soft_quantize_cpu",
        "  variants: function, method\n  dispatch:\n    CPU: soft_quantize_cpu",
    )
    changes = changes_since("HEAD", inputs(repo), [], None)
    line = _entry_line(repo, DERIVATIVES, "- name: soft_quantize(Tensor self, Tensor scale, int bits=8) -> Tensor")
    assert changes.ops == ("soft_quantize",) and changes.spans == ((line, line + 2),)
    assert selected(repo) == ["soft_quantize"]


def test_a_helper_declaration_edit_selects_the_ops_calling_it(repo: Path) -> None:
    edit(repo / HELPERS, "size_t count);", "std::size_t count);")
    assert selected(repo) == ["stack_mean"]


def test_an_unrelated_file_selects_nothing(repo: Path) -> None:
    (repo / "README.md").write_text("edited\n")
    (repo / "new_file.txt").write_text("untracked\n")
    assert selected(repo) == []


def test_a_comment_between_entries_selects_nothing(repo: Path) -> None:
    path = repo / DERIVATIVES
    path.write_text(path.read_text() + "\n# a comment at the end\n")
    assert selected(repo) == []


@pytest.mark.parametrize("rel", [TAGS, "tools/autograd/templates/VariableType.cpp"])
def test_a_whole_file_change_selects_everything(repo: Path, rel: str) -> None:
    with open(repo / rel, "a", encoding="utf-8") as f:
        f.write("\n# edited\n" if rel.endswith(".yaml") else "// edited\n")
    changes = changes_since("HEAD", inputs(repo), [], None)
    assert changes.everything == f"{rel} changed"
    assert selected(repo) is None


def test_a_renamed_input_selects_everything(repo: Path) -> None:
    git(repo, "mv", DERIVATIVES, "tools/autograd/derivatives_old.yaml")
    git(repo, "commit", "-qm", "renamed")
    git(repo, "mv", "tools/autograd/derivatives_old.yaml", DERIVATIVES)
    assert changes_since("HEAD", inputs(repo), [], None).everything == f"{DERIVATIVES} renamed"


def test_an_unknown_revision_is_a_clear_error(repo: Path) -> None:
    with pytest.raises(VtgenError, match=r"--changed-since nosuchrev: no such revision in .*pytorch$"):
        changes_since("nosuchrev", inputs(repo), [], None)


def test_a_shallow_clone_works_when_the_revision_is_fetched(repo: Path, tmp_path: Path) -> None:
    edit(
        repo / DERIVATIVES,
        "soft_quantize_backward(grad, self, scale, bits)",
        "soft_quantize_backward(grad * 2, self, scale, bits)",
    )
    git(repo, "commit", "-qam", "edit")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{repo}", str(clone))
    with pytest.raises(VtgenError, match=r"shallow clone: fetch it first \(git fetch --depth=1 origin HEAD~1\)"):
        changes_since("HEAD~1", inputs(clone), [], None)
    base = git(repo, "rev-parse", "HEAD~1").strip()
    git(clone, "fetch", "-q", "--depth=1", "origin", base)
    assert changes_since(base, inputs(clone), [], None).ops == ("soft_quantize",)


def test_check_with_nothing_changed_compiles_nothing(repo: Path, run_cli: CliRunner) -> None:
    args = ["--native-functions", str(repo / NATIVE), "--derivatives", str(repo / DERIVATIVES)]
    args += ["--tags", str(repo / TAGS), "--namespace", "vtsample", "--out", str(repo.parent / "check")]
    result = run_cli("check", *args, "--changed-since", "HEAD")
    assert result.code == 0, result.err
    assert "no op's entries differ from HEAD, nothing checked" in result.out
    assert "OK" not in result.out


def test_gradcheck_selects_the_changed_ops_and_their_in_place_variants(repo: Path) -> None:
    edit(repo / DERIVATIVES, "self: softsign_backward(grad, self)", "self: softsign_backward(grad * 1, self)")
    out = generated(repo)
    changes = changes_since("HEAD", inputs(repo), [], None)
    regs = _selected(read_index(out), read_registrations(out), GradcheckOptions(CheckOptions(since=changes)), {}, {})
    assert sorted(r.op for r in regs) == ["softsign", "softsign.out", "softsign_"]
    everything = GradcheckOptions(CheckOptions(since=replace(changes, everything="tags.yaml changed")))
    assert len(_selected(read_index(out), read_registrations(out), everything, {}, {})) > 3
    nothing = Report.nothing_to_do(0.0, "no op's entries differ from HEAD").render()
    assert "no op's entries differ from HEAD, nothing checked" in nothing and "OK" not in nothing


# -- issue 35, item 12: files git cannot compare ----------------------------------------------------
SOFT_QUANTIZE_DISPATCH = ("  variants: function\n  dispatch:\n    CPU: soft_quantize_cpu",
                          "  variants: function, method\n  dispatch:\n    CPU: soft_quantize_cpu")  # fmt: skip


def _outside(repo: Path, rel: str = NATIVE) -> Path:
    """A copy of the checkout's ``rel`` outside its work tree."""
    path = repo.parent / "elsewhere" / Path(rel).name
    path.parent.mkdir(exist_ok=True)
    shutil.copy(repo / rel, path)
    return path


def test_an_input_outside_the_work_tree_selects_everything(repo: Path) -> None:
    native = _outside(repo)
    edit(native, *SOFT_QUANTIZE_DISPATCH)
    changes = changes_since("HEAD", replace(inputs(repo), native_functions=str(native)), [], None)
    assert changes.everything == f"{native} is outside the git work tree {repo} (or reached through a link out of it)"


@pytest.mark.parametrize("tracked", [True, False])
def test_a_link_out_of_the_work_tree_selects_everything(repo: Path, tracked: bool) -> None:
    native = _outside(repo)
    (repo / NATIVE).unlink()
    (repo / NATIVE).symlink_to(native)
    if tracked:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "the yaml is a link")
    edit(native, *SOFT_QUANTIZE_DISPATCH)  # git sees the link, never this edit
    changes = changes_since("HEAD", inputs(repo), [], None)
    assert changes.everything is not None and "outside the git work tree" in changes.everything, changes.everything


def test_a_link_inside_the_work_tree_is_followed_and_its_retargeting_seen(repo: Path) -> None:
    shutil.copy(repo / NATIVE, repo / "real.yaml")
    (repo / NATIVE).unlink()
    (repo / NATIVE).symlink_to(repo / "real.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the yaml is a link to real.yaml")
    edit(repo / "real.yaml", *SOFT_QUANTIZE_DISPATCH)
    assert changes_since("HEAD", inputs(repo), [], None).ops == ("soft_quantize",)  # the target's entries compared
    git(repo, "checkout", "-q", "--", "real.yaml")
    shutil.copy(repo / "real.yaml", repo / "other.yaml")
    edit(repo / "other.yaml", *SOFT_QUANTIZE_DISPATCH)
    git(repo, "add", "other.yaml")
    git(repo, "commit", "-qm", "another yaml")
    (repo / NATIVE).unlink()
    (repo / NATIVE).symlink_to(repo / "other.yaml")  # other.yaml itself is unchanged since HEAD
    changes = changes_since("HEAD", inputs(repo), [], None)
    assert changes.everything == f"{NATIVE} (a symbolic link to other.yaml) changed"


def test_an_ignored_input_selects_everything(repo: Path) -> None:
    (repo / ".gitignore").write_text("build/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore build/")
    native = repo / "build" / "native_functions.yaml"
    native.parent.mkdir()
    shutil.copy(repo / NATIVE, native)
    changes = changes_since("HEAD", replace(inputs(repo), native_functions=str(native)), [], None)
    assert changes.everything == "build/native_functions.yaml is not tracked by git (ignored?)"


@pytest.mark.slow
def test_check_of_an_outside_input_compiles_everything_and_says_why(repo: Path, run_cli: CliRunner) -> None:
    """Before: "no op's entries differ from HEAD, nothing checked" after an edit git could not see."""
    native = _outside(repo)
    edit(native, *SOFT_QUANTIZE_DISPATCH)
    args = ["--native-functions", str(native), "--derivatives", str(repo / DERIVATIVES), "--tags", str(repo / TAGS),
            "--namespace", "vtsample", "--manual-header", "vtsample/helpers.h", "--using-namespace",
            "torch::autograd::generated::details", "-I", str(repo / "include"), "--shards", "1",
            "--out", str(repo.parent / "check")]  # fmt: skip
    result = run_cli("check", *args, "--changed-since", "HEAD")
    assert result.code == 0, result.err[-2000:]
    assert f"note: --changed-since HEAD: every op is checked: {native} is outside the git work tree" in result.err
    assert "nothing checked" not in result.out and "OK, 0 errors" in result.out, result.out


# -- helper files found beside -I: the checkout's FunctionsManual.cpp that --gradcheck builds in -----------
_MANUAL_CPP = "torch/csrc/autograd/FunctionsManual.cpp"


def _with_manual_source(repo: Path) -> Path:
    """The checkout with a FunctionsManual.cpp of its own (``--gradcheck`` builds it into its library, whatever
    the ``--manual-header``), defining a helper a formula calls; committed."""
    (repo / _MANUAL_CPP).parent.mkdir(parents=True)
    (repo / _MANUAL_CPP).write_text("Tensor softsign_backward(Tensor grad, Tensor self) {\n  return grad;\n}\n")
    (repo / _MANUAL_CPP).with_suffix(".h").write_text("Tensor softsign_backward(Tensor grad, Tensor self);\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "manual source")
    return repo / _MANUAL_CPP


def test_an_edit_of_a_helper_found_beside_the_include_dirs_selects_its_callers(repo: Path) -> None:
    """Before: with --manual-header, the helper files were those found through -I only; the checkout's
    FunctionsManual.cpp (built in by --gradcheck) was not among them, and its edit selected nothing."""
    from vtgen_build.cli.commands import _changes_since, _parser, check_files

    source = _with_manual_source(repo)
    args = _parser().parse_args(["check", *checkout_options(repo), "--gradcheck", "--changed-since", "HEAD"])
    assert os.path.realpath(source) in check_files(checkout_options(repo))
    edit(source, "  return grad;", "  return grad * 2;")
    changes = _changes_since(args, inputs(repo), None)
    generated(repo)
    assert changes.select(read_index(repo.parent / "out")) == ["softsign", "softsign_"]
