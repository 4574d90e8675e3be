"""``check --gradcheck --coverage --tier python|both``: which tier verified each derivatives.yaml entry, the
reasons the Python tier left the others, and ``--shard K/N`` of the Python tier's selection."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import vtgen
from vtgen_build.base.errors import Location
from vtgen_build.gradcheck.coverage import EntryCoverage, FormulaRun
from vtgen_build.gradcheck.python_tier_coverage import both_tiers, entry_tiers, render, shard_ops, to_json
from vtgen_build.gradcheck.python_tier_run import NOT_VERIFIED, OpVerdict, TierReport

Y = "derivatives.yaml"


def _report() -> TierReport:
    """Verdicts out of yaml order: g failed; f, f_ of one entry (one passed, one not verified); h and k each left
    for a reason; m passed beside m_ failed (the entry failed); p and q passed."""
    verdicts = [
        OpVerdict("g", "failed", Location(Y, 7), "gradcheck failed for g (float64 sample 0): backward check: ..."),
        OpVerdict("f", "passed", Location(Y, 3), "f: passed (backward; float64)"),
        OpVerdict("f_", NOT_VERIFIED, Location(Y, 3), "f_: not verified by the Python tier: no check entered it"),
        OpVerdict("h", NOT_VERIFIED, Location(Y, 9),
                  "h: not verified by the Python tier: a view entry (the Python tier does not carry views) (left ...)"),
        OpVerdict("k", NOT_VERIFIED, Location(Y, 11),
                  "k: not verified by the Python tier: its formulas cannot be translated: unknown helper 'x_backward'"),
        OpVerdict("m", "passed", Location(Y, 13), "m: passed (backward; float64)"),
        OpVerdict("m_", "failed", Location(Y, 13), "gradcheck failed for m_ (float64 sample 0): backward check: ..."),
        OpVerdict("p", "passed", Location(Y, 15), "p: passed (backward; float64)"),
        OpVerdict("q", "passed", Location(Y, 17), "q: passed (forward-AD; float64)"),
    ]  # fmt: skip
    lines = (("f", 3), ("f_", 3), ("g", 7), ("h", 9), ("k", 11), ("m", 13), ("m_", 13), ("p", 15), ("q", 17))
    entries = {op: Location(Y, line) for op, line in lines}
    return TierReport(verdicts, 1.0, entries=entries, outs=("f.out",))


def test_each_entry_takes_the_tier_that_verified_it() -> None:
    report = _report()
    entries = entry_tiers(report)
    # yaml order; a failed kernel fails its entry whatever its others did
    assert [(e.where.line if e.where else 0, e.tier) for e in entries] == [
        (3, "python"), (7, "failed"), (9, "compiled"), (11, "compiled"), (13, "failed"), (15, "python"), (17, "python")
    ]  # fmt: skip
    text = render(report, entries, "cov.json")
    entry_line = "derivatives.yaml entries with an Autograd kernel: 7: 3 verified by the Python tier, 2 failed, 2 left"
    assert entry_line in text
    assert "kernels (functional, in-place, others): 9: 4 verified by the Python tier, 2 failed, 3 left" in text
    reasons = [line for line in text.splitlines() if " kernels: " in line]
    assert reasons == ["       1 kernels: no check entered it", "       1 kernels: a view entry",
                       "       1 kernels: its formulas cannot be translated"], text  # fmt: skip
    assert "out= overloads: 1" in text and text.count("(not run: --tier python)") == 2
    assert "not run" not in render(report, entries, "cov.json", alone=False)  # --tier both runs the compiled tier
    data = json.loads(to_json(report, entries))
    assert data["summary"]["entries"] == {"python": 3, "failed": 2, "compiled": 2}
    assert data["summary"]["kernels"] == {"python": 4, "failed": 2, "compiled": 3}
    assert [k["tier"] for k in data["entries"][0]["kernels"]] == ["python", "compiled"]
    assert data["entries"][1]["kernels"][0]["at"] == "derivatives.yaml:7"
    assert data["entries"][2]["kernels"][0]["reason"] == "a view entry"


def test_shard_parts_are_disjoint_whole_and_keep_a_family_together() -> None:
    ops = ("add.Tensor", "add_.Tensor", "sin", "sin_", "cos", "mul.Tensor", "mul_.Tensor", "exp")
    parts = [shard_ops(ops, k, 3) for k in (1, 2, 3)]
    assert sorted(op for part in parts for op in part) == sorted(ops)
    for part in parts:
        assert ("add.Tensor" in part) == ("add_.Tensor" in part) and ("sin" in part) == ("sin_" in part)
    assert shard_ops(ops, 1, 1) == ops and shard_ops(ops, 2, 2) == shard_ops(tuple(reversed(ops)), 2, 2)[::-1]
    # the families by name (add, cos, exp, mul, sin) dealt out in turn: the same parts in every process
    assert parts == [("add.Tensor", "add_.Tensor", "mul.Tensor", "mul_.Tensor"), ("sin", "sin_", "cos"), ("exp",)]


def _compiled(line: int, covered: bool, reason: str | None = None, kind: str = "backward") -> EntryCoverage:
    run = FormulaRun(kind, ("self",), Location(Y, line + 1), "f: backward float64" if covered else None)
    return EntryCoverage(Location(Y, line), ("op",), (run,), None if covered else reason or "no check entered it")


def test_both_tiers_count_which_tier_verified_each_entry() -> None:
    """Counted: the entries with a CPU kernel and a backward formula (not 20: no CPU kernel; not 17: a forward
    formula only); 3 both; 13 the Python tier failed and the compiled tier did not cover; 15 the Python tier
    alone."""
    entries = entry_tiers(_report())
    compiled = [_compiled(3, True), _compiled(7, True), _compiled(9, True), _compiled(11, False),
                _compiled(13, False), _compiled(15, False), _compiled(17, True, kind="forward"),
                _compiled(20, False, "needs a backend this machine lacks (no CPU kernel)")]  # fmt: skip
    text = both_tiers(entries, compiled, clashes=1)
    assert "compiled tier covered 3; the Python tier verified 1 of them (33.3%)" in text
    assert "the Python tier alone: 1; the compiled tier alone: 2; neither: 1; the Python tier failed: 2" in text
    assert "ops the tiers judged differently: 1" in text


def test_a_shard_of_both_tiers_coverage_is_an_error(real_yaml: RealYaml, tmp_path: Path) -> None:
    root = str(real_yaml.torchgen_dir)
    args = ("check", "--pytorch-root", root, "--out", str(tmp_path), "--gradcheck", "--coverage", "c.json")
    sharded = vtgen(*args, "--tier", "both", "--shard", "1/2")
    assert sharded.returncode != 0 and "--tier both: " in sharded.stderr and "--shard" in sharded.stderr
    assert "Traceback" not in sharded.stderr


@pytest.mark.slow
def test_python_tier_coverage_of_a_shard(real_yaml: RealYaml, tmp_path: Path) -> None:
    """Part 2 of 2 of --op cos --op sin: sin's family alone, through the Python tier, nothing compiled."""
    out, path = tmp_path / "out", tmp_path / "cov.json"
    options = ("--gradcheck", "--coverage", str(path), "--tier", "python", "--shard", "2/2")
    run = vtgen(
        "check",
        "--pytorch-root",
        str(real_yaml.torchgen_dir),
        "--out",
        str(out),
        *options,
        "--op",
        "cos",
        "--op",
        "sin",
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "python tier coverage" in run.stdout and "1 verified by the Python tier, 0 failed" in run.stdout
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["summary"]["entries"] == {"python": 1, "failed": 0, "compiled": 0}
    (entry,) = data["entries"]
    assert {k["op"] for k in entry["kernels"]} == {"sin", "sin_"} and entry["tier"] == "python"
    assert data["out_overloads"] == ["sin.out"] and not list((out / ".vtgen-gradcheck").glob("**/*.so"))
    request = json.loads((out / ".vtgen-gradcheck" / "python-tier" / "request.json").read_text(encoding="utf-8"))
    assert request["max_samples"] == 2  # coverage's default: 2 OpInfo samples a check (no --max-samples given)


def test_both_tiers_write_the_python_tiers_json_beside_the_compiled_ones() -> None:
    from argparse import Namespace

    from vtgen_build.cli.commands import _python_json

    assert _python_json(Namespace(coverage="out/cov.json", tier="both")) == str(Path("out/cov.python.json"))
    assert _python_json(Namespace(coverage="out/cov.json", tier="python")) == str(Path("out/cov.json"))


def _agreement_tool() -> object:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "tools" / "python_tier_agreement.py"
    spec = importlib.util.spec_from_file_location("python_tier_agreement", path)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = tool  # its dataclasses look their module up
    spec.loader.exec_module(tool)
    return tool


def test_the_agreement_tool_plans_for_the_jsons_release_through_public_functions() -> None:
    """The coverage JSON names the release its run planned for; the agreement tool plans the yaml for that one
    (or ``--release``), and imports no private name of the package."""
    report = _report()
    report.release = "2.14"
    assert json.loads(to_json(report, entry_tiers(report)))["release"] == "2.14"
    tool = _agreement_tool()
    assert tool._release(None, {"release": "2.14"}) == "2.14"  # type: ignore[attr-defined]
    assert tool._release("2.13", {"release": "2.14"}) == "2.13"  # type: ignore[attr-defined]
    source = (Path(__file__).resolve().parents[1] / "tools" / "python_tier_agreement.py").read_text(encoding="utf-8")
    private = [line for line in source.splitlines() if line.startswith("from vtgen_build") and " _" in line]
    assert not private, private
