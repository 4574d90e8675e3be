"""``check --gradcheck --changed --tier python`` on PyTorch's yaml: the changed entries' families alone are
planned, translated and checked (``python_tier_state.TierState.of_families``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import Edit, edited_checkout, vtgen
from vtgen_build import gradcheck_child
from vtgen_build.gradcheck.python_tier import HELPERS, family_texts
from vtgen_build.gradcheck.python_tier_run import TierOptions, _words
from vtgen_build.gradcheck.python_tier_state import TierState, family_digests
from vtgen_build.inputs.files import Inputs
from vtgen_build.inputs.load import load_entries

_SIN = Edit("sin", "a sign flip", "  self: grad * self.cos().conj()", "  self: -grad * self.cos().conj()")


def _inputs(root: Path) -> Inputs:
    native = root / "aten/src/ATen/native"
    return Inputs(str(native / "native_functions.yaml"), str(root / "tools/autograd/derivatives.yaml"),
                  str(native / "tags.yaml"))  # fmt: skip


def test_an_edited_entry_changes_its_familys_digest_alone(real_yaml: RealYaml, tmp_path: Path) -> None:
    helpers = tmp_path / "helpers.py"
    helpers.write_text("def handle_r_to_c(t, value):\n    return value\n")
    unedited = edited_checkout(real_yaml, tmp_path / "unedited", ())
    before = family_digests(_inputs(unedited.root), [helpers])
    edited = edited_checkout(real_yaml, tmp_path / "edited", (_SIN,))
    after = family_digests(_inputs(edited.root), [helpers])
    assert {f for f in before if before[f] != after[f]} == {"sin"}
    # a helper edit: the families whose formulas call it, and no other
    helpers.write_text("def handle_r_to_c(t, value):\n    return value.real\n")
    again = family_digests(_inputs(unedited.root), [helpers])
    callers = {f for f in before if before[f] != again[f]}
    assert {"abs", "add"} <= callers and not {"sin", "cos", "tanh_backward"} & callers
    texts = family_texts(load_entries(str(unedited.derivatives)), _inputs(unedited.root).native_functions)
    assert callers == {f for f, t in texts.items() if "handle_r_to_c(" in t}


def test_the_translator_is_in_the_family_records_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch's yaml, as an op library's (test_python_tier_library): another translator checks every family."""
    from vtgen_build.gradcheck import python_tier_state

    monkeypatch.setattr(python_tier_state, "family_digests", lambda inputs, helpers: {})  # no yaml read

    def key() -> str:
        words = _words("2.13", "aten", TierOptions(()))
        return TierState.of_families(tmp_path, None, [], words).key  # type: ignore[arg-type]

    before = key()
    monkeypatch.setattr(python_tier_state, "translator_digest", lambda: "another translator")
    assert key() != before


def test_the_childs_helpers_are_not_in_the_translators_digest() -> None:
    """An edit of the Python helpers selects their callers (above), not every op through the record's key."""
    from vtgen_build.gradcheck import python_tier_state

    assert (gradcheck_child.HERE / f"{HELPERS}.py").is_file()
    digest = python_tier_state.translator_digest()
    original = python_tier_state.files_text
    seen: list[str] = []
    python_tier_state.files_text = lambda files: seen.extend(str(p) for p in files) or ""  # type: ignore[assignment]
    try:
        python_tier_state.translator_digest()
    finally:
        python_tier_state.files_text = original
    assert digest and seen and not any(p.endswith(f"/{HELPERS}.py") for p in seen)


@pytest.mark.slow
def test_changed_checks_the_edited_entry_alone(real_yaml: RealYaml, tmp_path: Path) -> None:
    """A record of the unedited yaml, then sin edited: ``--changed --tier python`` checks sin's family (and
    fails at its line), no other; the failed family is checked again next time."""
    checkout = edited_checkout(real_yaml, tmp_path / "src", ())
    out = tmp_path / "out"
    work = out / ".vtgen-gradcheck" / "python-tier"
    helpers = [gradcheck_child.HERE / f"{HELPERS}.py"]
    TierState.of_families(work, _inputs(checkout.root), helpers, _words("2.13", "aten", TierOptions(()))).write((), ())
    text = checkout.derivatives.read_text(encoding="utf-8")
    checkout.derivatives.write_text(text.replace(_SIN.old, _SIN.new, 1), encoding="utf-8")
    line = text[: text.index(_SIN.old)].count("\n") + 1
    args = ("check", "--pytorch-root", str(checkout.root), "--torch-version", "2.13", "--out", str(out))
    args += ("--gradcheck", "--changed")
    done = vtgen(*args, "--tier", "python", "--no-worker")
    said = done.stdout + done.stderr
    assert done.returncode == 1 and f"derivatives.yaml:{line}: error: [python tier] " in said, said[-3000:]
    assert "[python tier] gradcheck failed for sin (" in said and "[python tier] sin_: not reached" in said
    assert "[python tier] 0 passed, 1 failed, 1 not verified in" in said, said[-3000:]  # sin's family alone
    again = TierState.of_families(work, _inputs(checkout.root), helpers, _words("2.13", "aten", TierOptions(())))
    assert again.changed() == ["sin"]  # failed: checked again next time; every other family is recorded
