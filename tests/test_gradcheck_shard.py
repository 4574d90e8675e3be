"""``check --gradcheck --shard K/N`` and ``coverage merge``: the parts of a run, and the report they join into.

The partition and the merge are tested without torch; one slow test runs a small ``--coverage``
subset of the real yaml whole and in two parts, and merges the parts: the same JSON, byte for byte.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from types import MappingProxyType

import pytest

from tests.edited_checkout import SharedEdits, vtgen
from vtgen_build.base.errors import Location, VtgenError
from vtgen_build.gradcheck import coverage, shard
from vtgen_build.gradcheck.reach import Reach, ReachMap
from vtgen_build.gradcheck.units import Registration
from vtgen_build.inputs.files import Inputs


def _regs(*ops: str) -> list[Registration]:
    return [Registration("aten", "Autograd", op, op.replace(".", "_")) for op in ops]


def _costs(seconds: dict[str, float], per_kernel: float = 0.0, once: float = 0.0) -> shard.Costs:
    return shard.Costs(MappingProxyType(seconds), per_kernel=per_kernel, once=once)


OPS = ("add.Tensor", "add_.Tensor", "add.out", "sin", "sin_", "cos", "mm", "elu_backward", "tanh")


def test_the_parts_cover_every_op_once_and_keep_a_base_name_together() -> None:
    regs = _regs(*OPS)
    parts = [shard.shard_of(regs, (k, 3), None, 1, _costs({})) for k in (1, 2, 3)]
    assert sorted(r.op for p in parts for r in p) == sorted(OPS)  # disjoint and complete
    owner = {r.op: k for k, p in enumerate(parts) for r in p}
    assert owner["add.Tensor"] == owner["add_.Tensor"] == owner["add.out"] and owner["sin"] == owner["sin_"]
    assert parts == [shard.shard_of(list(regs), (k, 3), None, 1, _costs({})) for k in (1, 2, 3)]  # deterministic


def test_ops_sharing_a_derivatives_entry_go_to_one_part() -> None:
    """``exp`` and ``_foreach_exp`` (one entry of the yaml), ``view`` and ``view_copy``: one part each, else the
    parts' coverage JSONs would each hold the entry (and could not merge)."""
    regs = _regs("exp", "exp_", "_foreach_exp", "_foreach_exp_", "view", "view_copy", "sin", "cos", "tan")
    entries = {op: Location("derivatives.yaml", 10) for op in ("exp", "exp_", "_foreach_exp", "_foreach_exp_")}
    entries |= {"view": Location("derivatives.yaml", 20), "view_copy": Location("derivatives.yaml", 20)}
    costs = _costs({"exp": 1.0, "_foreach_exp": 1.0, "view": 1.0, "view_copy": 1.0, "sin": 1.0, "cos": 1.0, "tan": 1.0})
    parts = [shard.shard_of(regs, (k, 4), None, 1, costs, entries) for k in (1, 2, 3, 4)]
    owner = {r.op: k for k, p in enumerate(parts) for r in p}
    assert len({owner[op] for op in ("exp", "exp_", "_foreach_exp", "_foreach_exp_")}) == 1
    assert owner["view"] == owner["view_copy"] and sorted(owner) == sorted(r.op for r in regs)
    assert [len(p) for p in parts] == [4, 2, 2, 1]  # the joined groups cost their parts' sum (2 each)
    split = [shard.shard_of(regs, (k, 4), None, 1, costs) for k in (1, 2, 3, 4)]  # without the entries
    assert len({k for k, p in enumerate(split) for r in p if r.op in ("exp", "_foreach_exp")}) == 2


def test_measured_costs_balance_the_parts_and_the_estimate_reads_the_reach_map() -> None:
    regs = _regs("a", "b", "c", "d")
    costs = _costs({"a": 10.0, "b": 3.0, "c": 3.0, "d": 3.0})
    first, second = (shard.shard_of(regs, (k, 2), None, 1, costs) for k in (1, 2))
    assert [r.op for r in first] == ["a"] and [r.op for r in second] == ["b", "c", "d"]  # 10 vs 9, not 2 vs 2
    reach = ReachMap((Reach("x", frozenset({"b"}), frozenset()), Reach("y", frozenset(), frozenset({"b"}))))
    assert shard.estimate(["b"], reach, 2) == shard.BASE_SECONDS + 2 * shard.PER_REACHING_ENTRY
    assert shard.estimate(["b"], reach, 1) == shard.BASE_SECONDS + shard.PER_REACHING_ENTRY  # only one runs
    assert shard.estimate(["a"], reach, 2) == shard.BASE_SECONDS


def test_a_groups_compile_counts_even_when_no_check_of_it_ran() -> None:
    """Each part builds a library of its own ops: groups whose checks cost nothing (out= overloads, ops with no
    CPU kernel) still cost their kernels' compile, so they are spread over the parts, not all dealt to the one
    that happens to be lightest (which made one part of the 2.13 yaml build 671 of the 1,614 kernels)."""
    zero = [f"cuda_op{i}" for i in range(12)]
    regs = _regs("a", "b", *zero)
    measured = {"a": 10.0, "b": 10.0} | dict.fromkeys(zero, 0.0)
    checks_only = shard.partition(regs, 2, None, 1, _costs(measured))
    assert sorted(checks_only.kernels) == [1, 13]  # every free group lands beside one of a, b
    with_compile = shard.partition(regs, 2, None, 1, _costs(measured, per_kernel=1.0, once=5.0))
    assert with_compile.kernels == (7, 7) and with_compile.groups == (7, 7)
    assert with_compile.predicted == (5.0 + 10 + 7, 5.0 + 10 + 7)  # once + checks + compile of its kernels
    assert [r.op for r in shard.shard_of(regs, (1, 2), None, 1, _costs(measured, 1.0, 5.0))] == [
        op for op, k in with_compile.owner.items() if k == 1
    ]


def test_a_bad_shard_or_costs_file(tmp_path: Path) -> None:
    assert shard.parse_shard("2/4") == (2, 4)
    for bad in ("0/4", "5/4", "4", "a/b", "1/0", "1/2000"):
        with pytest.raises(VtgenError, match="expected K/N"):
            shard.parse_shard(bad)
    assert shard.load_costs(tmp_path / "none.json") == shard.Costs()  # no file: no measurement, nothing to say
    good = shard.costs_text({"sin": 1.234, "add": 2}, "a test", 0.25, 30)
    assert good == shard.costs_text({"add": 2.0, "sin": 1.234}, "a test", 0.25, 30.0)  # deterministic
    path = tmp_path / "costs.json"
    path.write_text(good)
    read = shard.load_costs(path)
    assert dict(read.seconds) == {"add": 2.0, "sin": 1.23} and not read.damaged
    assert (read.per_kernel, read.once) == (0.25, 30.0)
    data = json.loads(good)
    for damage, why in (
        ("{not json", "damaged"),
        (good.replace('"sin": 1.23', '"sin": 9.23'), "does not match its digest"),  # a flipped digit
        (json.dumps({**data, "format": "other"}), "not a costs file"),
        (json.dumps({**data, "costs": {"sin": "slow"}}), "not a duration"),
        (json.dumps({**data, "per_kernel": -1}), "not a duration"),
        (good.replace('"once": 30.0', '"once": 3.0'), "does not match its digest"),
        (json.dumps(data["costs"]), "not a costs file"),  # the old flat file
    ):
        path.write_text(damage)
        costs = shard.load_costs(path)
        assert not costs.seconds and why in costs.damaged and "every op group's cost is estimated" in costs.damaged
    shipped = shard.load_costs()
    assert not shipped.damaged and len(shipped.seconds) > 500, shipped.damaged  # the measured file ships, intact


def _entry(line: int, covered: bool) -> coverage.EntryCoverage:
    at = Location("derivatives.yaml", line)
    runs = (
        coverage.FormulaRun(
            "backward", ("self",), Location("derivatives.yaml", line + 1), "x backward" if covered else None
        ),
        coverage.FormulaRun("forward", (), Location("derivatives.yaml", line + 2), None),
    )
    return coverage.EntryCoverage(at, (f"op{line}",), runs, None if covered else "no sample yet", "")


def test_merged_parts_give_the_whole_runs_json_and_a_wrong_set_of_parts_is_an_error() -> None:
    whole = [_entry(10, True), _entry(20, False), _entry(30, True)]
    one = coverage.to_json([whole[0], whole[2]], (1, 2))
    two = coverage.to_json([whole[1]], (2, 2))
    merged, run = coverage.merge([("b.json", two), ("a.json", one)])
    assert coverage.to_json(merged) == coverage.to_json(whole) and run is None
    data = json.loads(coverage.to_json(merged))
    assert data["summary"]["backward_formulas"] == {"run": 2, "eligible": 3}
    assert data["summary"]["forward_formulas"] == {"run": 0, "eligible": 3}
    assert data["entries"][1]["formulas"][0]["reason"] == "no sample yet" and "shard" not in data
    for parts, message in (
        ([("a.json", one)], "parts 2 of 2 are missing"),
        ([("a.json", one), ("c.json", one)], "part 1 of 2 again"),
        ([("a.json", one), ("w.json", coverage.to_json(whole))], "not part of a sharded run"),
        ([("a.json", one), ("t.json", coverage.to_json([whole[1]], (2, 3)))], "part 2 of 3, but a.json is part of 2"),
        ([("a.json", one), ("x.json", "[]")], "not a coverage report"),
    ):
        with pytest.raises(VtgenError, match=message):
            coverage.merge(parts)


def test_coverage_merge_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "1.json").write_text(coverage.to_json([_entry(10, True)], (1, 2)))
    (tmp_path / "2.json").write_text(coverage.to_json([_entry(20, False)], (2, 2)))
    out = tmp_path / "merged.json"
    done = vtgen("coverage", "merge", str(tmp_path / "1.json"), str(tmp_path / "2.json"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "formula coverage: 1 of 2 entries" in done.stdout and "merged from 2 parts" in done.stdout
    assert out.read_text() == coverage.to_json([_entry(10, True), _entry(20, False)])
    bad = vtgen("coverage", "merge", str(tmp_path / "1.json"), "-o", str(out))
    assert bad.returncode == 1 and "error: parts 2 of 2 are missing" in bad.stderr and "Traceback" not in bad.stderr


def _identity(
    tmp: Path, derivatives: str = "- name: sin(Tensor self) -> Tensor\n", *options: str
) -> coverage.RunIdentity:
    for name, text in (("nf.yaml", "- func: sin(Tensor self) -> Tensor\n"), ("d.yaml", derivatives)):
        (tmp / name).write_text(text)
    inputs = Inputs(str(tmp / "nf.yaml"), str(tmp / "d.yaml"), None, "aten")
    return coverage.run_identity(inputs, "2.13", "2.13.0", ["ops=", *options])


def test_parts_of_other_runs_and_impossible_parts_are_refused(tmp_path: Path) -> None:
    """Issue 44, item 18: each part holds its run's identity (the yaml's content, the release, the torch, the
    options that shape the checks); parts of two runs, or a part ``5 of 2``, ``0 of 0``, ``-1 of -1``, do not
    merge, each refused at its file."""
    run = _identity(tmp_path)
    assert _identity(tmp_path) == run  # the same inputs and options: one run
    one = coverage.to_json([_entry(10, True)], (1, 2), run)
    two = coverage.to_json([_entry(20, False)], (2, 2), run)
    merged, identity = coverage.merge([("a.json", one), ("b.json", two)])
    assert identity == run and [e.where.line for e in merged] == [10, 20]
    assert json.loads(coverage.to_json(merged, None, identity))["run"]["key"] == run.key
    edited = _identity(tmp_path, "- name: sin(Tensor self) -> Tensor\n  self: grad\n")  # another yaml content
    other_options = _identity(tmp_path, "- name: sin(Tensor self) -> Tensor\n", "max_samples=2")
    other_release = coverage.RunIdentity(run.key, "2.14", "2.14.1")
    moved = [coverage.EntryCoverage(Location("other/derivatives.yaml", 20), e.ops, e.formulas, e.reason) for e in
             [_entry(20, False)]]  # fmt: skip
    data = json.loads(one)
    for bad, message in (
        (coverage.to_json([_entry(20, False)], (2, 2), edited), "b.json: a part of another run than a.json"),
        (coverage.to_json([_entry(20, False)], (2, 2), other_options), "b.json: a part of another run than a.json"),
        (coverage.to_json([_entry(20, False)], (2, 2), other_release), "b.json: a part of a run for PyTorch 2.14"),
        (
            coverage.to_json([_entry(20, False)], (2, 2)),
            "b.json: b.json holds no run identity (written by an older",
        ),
        (coverage.to_json(moved, (2, 2), run), "b.json: its entries are of other/derivatives.yaml"),
        (json.dumps({**data, "shard": [5, 2]}), "b.json: part 5 of 2 is no part of a sharded run"),
        (json.dumps({**data, "shard": [0, 0]}), "b.json: part 0 of 0 is no part"),
        (json.dumps({**data, "shard": [-1, -1]}), "b.json: part -1 of -1 is no part"),
        (json.dumps({**data, "run": "x"}), "b.json: not a coverage report"),
    ):
        with pytest.raises(VtgenError, match=re.escape(message)):
            coverage.merge([("a.json", one), ("b.json", bad)])
    # without identities (files of an older version): still one derivatives.yaml, never two checkouts'
    old_two = coverage.to_json(moved, (2, 2))
    with pytest.raises(VtgenError, match=re.escape("its entries are of other/derivatives.yaml, those of a.json of")):
        coverage.merge([("a.json", coverage.to_json([_entry(10, True)], (1, 2))), ("b.json", old_two)])


# a few ops none of whose formulas is edited: element-wise, two inputs, a random one, a backward op's own entry,
# and a `_foreach_` op sharing tanh's entry (its parts must still hold the entry once)
SUBSET = ("tanh", "atan2", "rrelu_with_noise", "log_sigmoid_forward", "log_sigmoid_backward", "_foreach_tanh")


@pytest.mark.slow
@pytest.mark.torch
def test_two_parts_merged_are_the_single_runs_coverage(batched_real_yaml: SharedEdits, tmp_path: Path) -> None:
    # the batched test's copy of the real yaml and its --out (tests/conftest.py): its edits are of other ops;
    # the precompiled header, the reach map and the units of tanh, atan2 and rrelu_with_noise are made once
    assert not set(SUBSET) & set(batched_real_yaml.ops)
    root, out = batched_real_yaml.yaml, batched_real_yaml.out
    ops = [a for op in SUBSET for a in ("--op", op)]

    def run(name: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        report = tmp_path / f"{name}.json"
        # one --out: the runs share the reach map (a sharded run's parts on other machines each make theirs)
        base = ("check", "--pytorch-root", str(root.root), "--out", str(out), "--shards", "1")
        return vtgen(*base, "--gradcheck", "--max-samples", "2", "--coverage", str(report), *ops, *extra), report

    runs = [run("whole"), run("part1", "--shard", "1/2"), run("part2", "--shard", "2/2")]
    for done, _ in runs:
        assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-3000:]
        assert "gradcheck failed" not in done.stdout + done.stderr
    parts = [json.loads(report.read_text()) for _, report in runs[1:]]
    assert all(p["entries"] for p in parts)  # both parts have work
    merged = tmp_path / "merged.json"
    done = vtgen("coverage", "merge", str(runs[2][1]), str(runs[1][1]), "-o", str(merged))
    assert done.returncode == 0, done.stderr
    assert merged.read_text() == runs[0][1].read_text()


def test_a_run_writes_its_costs_with_its_compile_and_skips_entries_named_for_no_op(tmp_path: Path) -> None:
    """The seconds of an OpInfo named for no op (``nn.functional.cross_entropy``) are the run's rest, not an
    error at the end of a whole run; the compile of a library built now is measured per kernel."""
    from vtgen_build.gradcheck import run
    from vtgen_build.gradcheck.library import LibraryBuild
    from vtgen_build.gradcheck.records import Entry

    regs = _regs("sin", "sin_", "cos")
    records = [Entry("sin", aten="sin", seconds=2.0), Entry("x", aten="nn.functional.cross_entropy", seconds=5.0)]
    build = LibraryBuild(tmp_path / "lib.so", tuple(regs), (), 3, 3, True, 30.0)
    path = tmp_path / "costs.json"
    run._write_costs(path, regs, records, "2.13.0", build, 100.0)
    costs = shard.load_costs(path)
    assert dict(costs.seconds) == {"sin": 2.0, "cos": 0.0} and not costs.damaged
    assert (costs.per_kernel, costs.once) == (10.0, 68.0)  # 30 s / 3 kernels; 100 - 30 - 2
