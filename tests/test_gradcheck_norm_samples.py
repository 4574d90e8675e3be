"""The entries the shipped sample hints newly reach, checked through our kernels (a subset of the yaml).

The norms whose statistics come from their forward (``_batch_norm_no_update``,
``_native_batch_norm_legit_functional``, ``_native_batch_norm_legit_no_training``,
``native_group_norm``), ``_ctc_loss`` (on ``log_softmax`` of the tensor gradcheck moves), and then
``_ctc_loss.Tensor`` and ``_pack_padded_sequence`` (lengths of given values: hint ``data``) and
``norm.ScalarOpt_dtype`` (its ``dtype`` argument) had "no sample yet".  One run of ``check
--gradcheck --coverage`` on a copy of the real yaml with wrong formulas among them (each newly
sampled entry but the proven norms has one): the wrong ones fail at their lines, the others are
proven, every formula, by their schema samples.  (That the shipped hints' samples pass with
PyTorch's own kernels: ``tests/test_gradcheck_samples.py``.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.edited_checkout import Edit, EditedYaml, SharedEdits, own_lines, vtgen

pytestmark = [pytest.mark.slow, pytest.mark.torch]


TWICE = "the formula wrong by a factor of two"
EDITS = (  # each replaces the start of a formula line
    Edit("_ctc_loss", TWICE, "  log_probs: _ctc_loss_backward(grad,", "  log_probs: _ctc_loss_backward(grad * 2,"),
    Edit("_batch_norm_no_update", TWICE, "  result0: batch_norm_jvp(", "  result0: 2 * batch_norm_jvp("),
    Edit(
        "_ctc_loss.Tensor", TWICE, "  log_probs: _ctc_loss_backward(grad,", "  log_probs: _ctc_loss_backward(grad * 2,"
    ),
    Edit(
        "_pack_padded_sequence",
        TWICE,
        "  input: _pack_padded_sequence_backward_symint(grad,",
        "  input: _pack_padded_sequence_backward_symint(grad * 2,",
    ),
    Edit("norm.ScalarOpt_dtype", TWICE, "  self: norm_backward(grad,", "  self: norm_backward(grad * 2,"),
)
Run = tuple[EditedYaml, Path, str]  # the edited yaml, the coverage JSON, what the run printed
PROVEN = ("native_group_norm", "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training")
# its call raises for PyTorch's own kernel as for ours (a complex output of a real input): not ours, said so
SHARED = "view_as_complex_copy"


@pytest.fixture(scope="module")
def run(edited_real_yaml: SharedEdits, tmp_path_factory: pytest.TempPathFactory) -> Run:
    # the copy of the real yaml the reach and formulas tests edit too (tests/conftest.py), and its --out
    yaml, out = edited_real_yaml.yaml, edited_real_yaml.out
    report = tmp_path_factory.mktemp("norm-samples") / "coverage.json"
    ops = [a for op in (*(e.op for e in EDITS), *PROVEN, SHARED) for a in ("--op", op)]
    base = ("check", "--pytorch-root", str(yaml.root), "--out", str(out), "--shards", "1", "--gradcheck")
    done: subprocess.CompletedProcess[str] = vtgen(*base, "--coverage", str(report), *ops)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    return yaml, report, done.stdout + done.stderr


@pytest.mark.parametrize("edit", EDITS, ids=[e.op for e in EDITS])
def test_a_wrong_formula_of_a_newly_sampled_entry_fails_at_its_line(edit: Edit, run: Run) -> None:
    yaml, _, text = run
    where = f"{yaml.derivatives}:{yaml.lines[edit.op]}: error: gradcheck failed for {edit.op}"
    assert where in text, text[-6000:]


def test_the_newly_sampled_norms_are_proven_formula_by_formula(run: Run) -> None:
    yaml, report, text = run
    prefix = f"{yaml.derivatives}:"
    failing = {int(line[len(prefix) :].split(":")[0]) for line in text.splitlines() if line.startswith(prefix)}
    assert failing == own_lines(yaml, EDITS), (sorted(failing), yaml.lines)  # no false failure
    entries = {tuple(e["ops"]): e for e in json.loads(report.read_text())["entries"]}
    for op in PROVEN:
        entry = entries[(op,)]
        assert entry["covered"] and entry["reason"] is None, entry
        backward = [f for f in entry["formulas"] if f["kind"] == "backward"]
        assert backward and all(f["check"] == f"{op} (schema samples): schema_grad float64" for f in backward), entry
        assert all(f["check"] for f in entry["formulas"] if f["kind"] == "forward"), entry
    for edit in EDITS:
        assert entries[(edit.op,)]["reason"] == "a check of it failed", entries[(edit.op,)]
    assert f"not verified: {SHARED}: no sample yet: PyTorch's own kernels fail it on these arguments too" in text
