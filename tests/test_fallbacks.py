"""No silent fallback: what cannot be done is refused, reported, or (for users) announced."""

from __future__ import annotations

from pathlib import Path

import pytest

from vtgen_build import incremental
from vtgen_build.generate import STRICT_ENV, GenerateOptions, generate
from vtgen_build.inputs import Inputs

from .conftest import copy_sample


def _edited_sample(tmp_path: Path) -> tuple[Inputs, GenerateOptions, Path]:
    """A generated copy of the sample whose derivatives.yaml was then edited (the next run is incremental)."""
    root = copy_sample(tmp_path / "sample")
    names = ("native_functions.yaml", "derivatives.yaml", "tags.yaml")
    inputs = Inputs(*(str(root / n) for n in names), "vtsample")
    options = GenerateOptions(str(tmp_path / "out"), shards=2, namespace="vtsample")
    assert generate(inputs, options).mode == "full"
    path = root / "derivatives.yaml"
    path.write_text(path.read_text().replace("softsign_backward(grad, self)", "softsign_backward(grad, self) * 2"))
    return inputs, options, root


def _broken_incremental(*args: object, **kwargs: object) -> object:
    raise TypeError("a bug in the incremental path")


def test_an_incremental_path_bug_raises_under_the_test_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inputs, options, _ = _edited_sample(tmp_path)
    monkeypatch.setenv(STRICT_ENV, "1")  # tests/conftest.py sets it for the whole suite
    monkeypatch.setattr(incremental, "incremental_run", _broken_incremental)
    with pytest.raises(TypeError, match="a bug in the incremental path"):
        generate(inputs, options)


def test_an_incremental_path_bug_is_a_full_run_with_a_notice_for_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs, options, _ = _edited_sample(tmp_path)
    monkeypatch.delenv(STRICT_ENV, raising=False)
    monkeypatch.setattr(incremental, "incremental_run", _broken_incremental)
    result = generate(inputs, options)
    assert result.mode == "full"
    reason = "the incremental path failed (TypeError: a bug in the incremental path)"
    assert result.explanations == (f"all ops: {reason}",)
    assert capsys.readouterr().err == f"vtgen-build: note: {reason}; regenerating everything\n"
    monkeypatch.undo()
    monkeypatch.setenv(STRICT_ENV, "1")
    assert generate(inputs, options).mode == "up-to-date"  # the full run left a consistent directory
