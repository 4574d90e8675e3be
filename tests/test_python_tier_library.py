"""``check --gradcheck --library --tier python``: an op library's formulas through the Python tier.

The library's formulas are translated to Python and installed as the Autograd kernels of its built library's
ops; the helpers they call are sample_project/formulas.py's Python equivalents of include/vtsample/helpers.h,
proven equal to the compiled ones by the ``agree`` check (``python_tier_helpers``).  The slow tests reuse
conftest's ``torch_tree`` (the sample built once): a formula edit is verified with the library left as built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from vtgen_build.gradcheck.python_tier import TierPlan
from vtgen_build.gradcheck.python_tier_helpers import HelperProof, without_agree
from vtgen_build.gradcheck.python_tier_state import TierState
from vtgen_build.gradcheck.records import entries_of

from .conftest import SAMPLE, CliRunner, TorchTree, sample_inputs
from .test_gradcheck_library import library_check

_SOFTSIGN = "  self: softsign_backward(grad, self)"
_DOUBLED = "  self: softsign_backward(grad, self) * 2"
_EQUIVALENT = "    return grad / (denominator * denominator)\n"
_WRONG_EQUIVALENT = "    return grad / denominator\n"


@contextmanager
def edited(path: Path, old: str, new: str) -> Iterator[int]:
    """``path`` with ``old`` replaced by ``new`` (the line number of the edit), then restored with its times:
    the shared build sees no change afterwards (Ninja compares times; helpers.h is in every unit)."""
    text, times = path.read_text(), os.stat(path)
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    try:
        yield text[: text.index(old)].count("\n") + 1
    finally:
        path.write_text(text)
        os.utime(path, ns=(times.st_atime_ns, times.st_mtime_ns))


def tier_check(tree: TorchTree, *extra: str) -> tuple[int, str]:
    """The Python tier of the tree's built library, with the sample's Python equivalents of its helpers."""
    formulas = ("--python-formulas", str(tree.source / "formulas.py"), "-I", str(tree.source / "include"))
    return library_check(tree, "--tier", "python", *formulas, *extra)


def _pending_units(tree: TorchTree) -> int:
    """The compile steps Ninja would run now (none run by the Python tier)."""
    done = subprocess.run(["ninja", "-n", "-C", str(tree.binary)], capture_output=True, text=True, check=True)
    return done.stdout.count("Building CXX object")


@pytest.mark.slow
@pytest.mark.torch
def test_a_wrong_formula_fails_at_its_line_with_nothing_compiled(torch_tree: TorchTree) -> None:
    code, log = torch_tree.build()
    assert code == 0, log
    code, log = tier_check(torch_tree, "--allow-unverified")
    assert code == 0 and " 0 failed," in log, log
    for op in ("softsign", "softsign_", "scale_add", "affine", "topk_abs", "tile_to", "stack_mean", "soft_quantize"):
        assert f"[python tier] {op}: passed (" in log, log  # softsign's vmap rule once replaced our kernel
    built = torch_tree.library.stat().st_mtime_ns
    with edited(torch_tree.derivatives, _SOFTSIGN, _DOUBLED) as line:
        code, log = tier_check(torch_tree, "--op", "softsign")
        pending = _pending_units(torch_tree)
    assert code == 1, log
    at = f"{torch_tree.derivatives}:{line}: error: [python tier] gradcheck failed for softsign (float64 sample 0)"
    assert at in log and "(nothing compiled)" in log, log
    assert torch_tree.library.stat().st_mtime_ns == built  # the library is the one built from the old formula
    assert pending >= 2  # its units are out of date: the verdict came without compiling them


@pytest.mark.slow
@pytest.mark.torch
def test_stale_or_wrong_helper_equivalents_never_pass_and_changed_selects_the_op(torch_tree: TorchTree) -> None:
    code, log = torch_tree.build()
    assert code == 0, log
    changed = ("--op", "softsign", "--changed")
    code, log = tier_check(torch_tree, *changed)
    assert code == 0 and "[python tier] softsign: passed" in log, log
    code, log = tier_check(torch_tree, *changed)
    assert code == 0 and "no op changed or failed since the last run" in log, log
    formulas = torch_tree.source / "formulas.py"
    with edited(formulas, _EQUIVALENT, _WRONG_EQUIVALENT):
        code, log = tier_check(torch_tree, *changed)  # selected again: an equivalent it calls changed
    unproven = "softsign: not verified by the Python tier: the Python equivalents of softsign_backward are not proven"
    assert code == 3 and unproven in log, log  # a wrong equivalent: its gradcheck failure is no verdict either
    assert "[python tier] softsign: passed" not in log and "error:" not in log, log
    header = torch_tree.source / "include" / "vtsample" / "helpers.h"
    with edited(header, "// d/dx x / (1 + |x|)", "// The derivative: d/dx x / (1 + |x|)"):
        code, log = tier_check(torch_tree, *changed)
    assert code == 3, log  # the header is newer than the library: nothing provable until it is rebuilt
    assert "softsign: not verified by the Python tier: the helper file" in log and "changed after the library" in log
    # (a header edit selects the op again by itself: test_changed_selects_an_op_again_when_a_helper_it_calls_changes)


def _plan(text: str) -> TierPlan:
    return TierPlan((("f", text),), (), frozenset(), (), {})


def _two_ops() -> TierPlan:
    modules = (("f", "x = _formulas.f_backward(grad)"), ("h", "x = grad * 2"))
    return TierPlan(modules, (), frozenset(), (), dict.fromkeys(("f", "h")))  # type: ignore[arg-type]


def test_changed_selects_an_op_again_when_a_helper_it_calls_changes(tmp_path: Path) -> None:
    header, equivalents = tmp_path / "helpers.h", tmp_path / "formulas.py"
    header.write_text("at::Tensor f_backward(const at::Tensor& grad);\nat::Tensor g_backward();\n")
    equivalents.write_text("def f_backward(grad):\n    return grad\n\n\ndef g_backward():\n    pass\n")

    def digests() -> dict[str, str]:
        return TierState.read(tmp_path, _two_ops(), [header, equivalents], ["2.13"]).digests

    before = digests()
    equivalents.write_text(equivalents.read_text().replace("return grad", "return grad.clone()"))
    after_python = digests()
    assert after_python["f"] != before["f"] and after_python["h"] == before["h"]
    header.write_text(header.read_text().replace("grad);", "grad, bool twice);"))
    after_header = digests()
    assert after_header["f"] != after_python["f"] and after_header["h"] == before["h"]


def test_the_translator_is_in_the_changed_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vtgen_build.gradcheck import python_tier_state

    plan = _two_ops()
    key = TierState.read(tmp_path, plan, [], ["2.13"]).key
    monkeypatch.setattr(python_tier_state, "translator_digest", lambda: "another translator")
    assert TierState.read(tmp_path, plan, [], ["2.13"]).key != key
    missing = [name for name in python_tier_state._TRANSLATOR if not (python_tier_state._PACKAGE / name).is_file()]
    assert not missing  # a moved file would drop out of the digest unnoticed


def test_the_helper_proof_is_kept_under_its_key_and_an_edited_header_is_stale(tmp_path: Path) -> None:
    library, header = tmp_path / "lib.so", tmp_path / "helpers.h"
    header.write_text("at::Tensor f_backward(const at::Tensor& grad);\n")
    library.write_bytes(b"built")
    os.utime(header, (1, 1))
    plan = _plan("x = _formulas.f_backward(grad)")
    proof = HelperProof.read(tmp_path, str(library), None, [str(header)])
    assert proof.needed(plan) and not proof.stale
    row = {"entry": "f (python tier)", "aten": "f", "checks": [{"kind": "agree", "variant": "function",
           "status": "passed", "dtype": "float64"}]}  # fmt: skip
    records, agreed = without_agree(entries_of([row]))
    assert agreed == {"f": "passed"} and not records[0].checks  # the proof, no check of the formula
    assert proof.settle(plan, agreed)[1] == {}
    again = HelperProof.read(tmp_path, str(library), None, [str(header)])
    assert not again.needed(plan)  # recorded
    os.utime(header)  # touched, unchanged (a checkout, a copy): its content is what the library was built from
    touched = HelperProof.read(tmp_path, str(library), None, [str(header)])
    assert not touched.stale and not touched.needed(plan)
    header.write_text("at::Tensor f_backward(const at::Tensor& grad, int twice);\n")
    os.utime(header, (1, 1))  # edited, with a time older than the library's: times lie, contents do not
    stale = HelperProof.read(tmp_path, str(library), None, [str(header)])
    assert stale.stale == (str(header),) and stale.needed(plan)
    _, withheld = stale.settle(plan, agreed)
    assert "changed after the library was built" in withheld["f"]
    _, refuted = HelperProof.read(tmp_path, str(library) + "x", None, []).settle(plan, {"f": "failed"})
    library.write_bytes(b"built again")  # a rebuild from the edited header: provable again
    assert not HelperProof.read(tmp_path, str(library), None, [str(header)]).stale
    os.utime(library, (0, 0))  # a library no run saw, older than a helper file: what it was built from is unknown
    library.write_bytes(b"built once more")
    os.utime(library, (0, 0))
    assert HelperProof.read(tmp_path, str(library), None, [str(header)]).stale == (str(header),)
    assert "differ from the library's compiled kernel" in refuted["f"]


def test_a_rebuild_into_the_same_bytes_proves_an_edited_header_again(tmp_path: Path) -> None:
    """A helper edit the compiled code does not see (a comment) rebuilds the library into the same bytes: that
    build is from the edited header, so its equivalents are provable again (not stale until other bytes)."""
    library, header = tmp_path / "lib.so", tmp_path / "helpers.h"
    header.write_text("at::Tensor f_backward(const at::Tensor& grad);\n")
    library.write_bytes(b"built")
    os.utime(header, ns=(1, 1))
    os.utime(library, ns=(2, 2))
    assert not HelperProof.read(tmp_path, str(library), None, [str(header)]).stale  # first sight: recorded
    header.write_text("// what f_backward gives\nat::Tensor f_backward(const at::Tensor& grad);\n")
    os.utime(header, ns=(3, 3))
    assert HelperProof.read(tmp_path, str(library), None, [str(header)]).stale == (str(header),)
    library.write_bytes(b"built")  # the build after the edit: the same bytes, written after the header
    os.utime(library, ns=(4, 4))
    plan = _plan("x = _formulas.f_backward(grad)")
    rebuilt = HelperProof.read(tmp_path, str(library), None, [str(header)])
    assert not rebuilt.stale and rebuilt.needed(plan)  # provable again (the header's content is a new key)
    os.utime(header, ns=(5, 5))  # touched after that build, unchanged: still what the library was built from
    assert not HelperProof.read(tmp_path, str(library), None, [str(header)]).stale


def test_a_library_copied_without_its_times_keeps_its_proof_and_an_edited_one_is_proven_again(
    tmp_path: Path,
) -> None:
    """The record of what a library was built from is keyed on its content: the same bytes copied anew (``cp``
    without ``-p``, a restored cache), then its helper files checked out again unchanged (newer than it), keep
    the proof and stay provable (that copy was taken for a new build, made before its headers: every helper
    not yet proven was "changed after the library was built"); a library of other bytes is proven again."""
    library, header = tmp_path / "lib.so", tmp_path / "helpers.h"
    header.write_text("at::Tensor f_backward(const at::Tensor& grad);\n")
    library.write_bytes(b"built")
    os.utime(header, ns=(1, 1))
    os.utime(library, ns=(2, 2))
    plan = _plan("x = _formulas.f_backward(grad)")
    HelperProof.read(tmp_path, str(library), None, [str(header)]).settle(plan, {"f": "passed"})
    shutil.copy(library, tmp_path / "copy.so")
    os.replace(tmp_path / "copy.so", library)  # the same bytes, written now
    os.utime(header, ns=(time.time_ns() + 10**9,) * 2)  # then the header, unchanged, newer than the copy
    copied = HelperProof.read(tmp_path, str(library), None, [str(header)])
    assert not copied.stale and not copied.needed(plan)
    other = TierPlan((("g", "x = _formulas.g_backward(grad)"),), (), frozenset(), (), {})
    assert copied.settle(other, {"g": "passed"})[1] == {}  # a helper proven since: not "changed after the build"
    library.write_bytes(b"built from another source")
    assert HelperProof.read(tmp_path, str(library), None, [str(header)]).needed(plan)


def test_the_samples_equivalents_cover_its_helpers() -> None:
    from vtgen_build.engine.python_autograd import formulas_functions

    header = (SAMPLE / "include" / "vtsample" / "helpers.h").read_text()
    called = {"softsign_backward", "value_selecting_backward", "gather_along", "stack_mean_backward",
              "affine_backward", "affine_jvp", "sum_to_sizes", "tile_to_jvp", "soft_quantize_backward"}  # fmt: skip
    assert all(f" {name}(" in header for name in called)
    assert called <= formulas_functions(str(SAMPLE / "formulas.py"))


def test_the_tier_runs_under_the_check_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its work files (request, results, the --changed record, the helpers' proof) are written holding it."""
    import fcntl

    from vtgen_build.check import CHECK_LOCK
    from vtgen_build.gradcheck import python_tier_run

    held = []

    def inside(inputs: object, out_dir: Path, release: str, options: object) -> python_tier_run.TierReport:
        with open(out_dir / CHECK_LOCK, "a+b") as handle, pytest.raises(BlockingIOError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.append(out_dir)
        return python_tier_run.TierReport([])

    monkeypatch.setattr(python_tier_run, "_run_locked", inside)
    python_tier_run.run_python_tier(None, tmp_path, "2.13", python_tier_run.TierOptions(()))  # type: ignore[arg-type]
    assert held == [tmp_path]


def test_library_tier_options_are_checked(run_cli: CliRunner, tmp_path: Path) -> None:
    fake = tmp_path / "lib.so"
    fake.write_bytes(b"")
    base = [*sample_inputs(), "--out", str(tmp_path / "out"), "--gradcheck"]
    alone = run_cli("check", *base, "--python-formulas", str(SAMPLE / "formulas.py"), "--op", "softsign")
    assert alone.code == 1 and "--python-formulas applies to the Python tier of an op library" in alone.err
    both = run_cli("check", *base, "--library", str(fake), "--tier", "both", "--changed")
    assert both.code == 1 and "--changed with --library: --tier python only" in both.err
    assert "Traceback" not in alone.err + both.err


def test_a_helper_header_not_found_through_include_dirs_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from types import SimpleNamespace

    from vtgen_build.cli.commands import _library_tier

    def tier(include_dirs: list[str]) -> tuple[str, ...]:
        header, formulas = ["vtsample/helpers.h"], str(SAMPLE / "formulas.py")
        args = SimpleNamespace(changed=False, tier="python", library=str(tmp_path / "lib.so"),
                               include_dirs=include_dirs, manual_header=header, tier_formulas=formulas)  # fmt: skip
        return _library_tier(args, SimpleNamespace(policy_root=None)).helpers  # type: ignore[arg-type]

    (tmp_path / "lib.so").write_bytes(b"")
    assert tier([str(SAMPLE / "include")]) == (str(SAMPLE / "include" / "vtsample" / "helpers.h"),)
    assert "not found through -I" not in capsys.readouterr().err
    assert tier([]) == ()
    assert "--manual-header vtsample/helpers.h not found through -I" in capsys.readouterr().err
