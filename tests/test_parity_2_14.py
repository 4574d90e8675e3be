"""Parity with torchgen 2.14.1 on its own yaml, generating for the 2.14 target.

torchgen 2.14.1 runs in a subprocess (``PYTHONPATH`` = an unpacked torch 2.14.1: only
``torchgen/``, ``torch/include/`` and ``torch/version.py``), through the same
tests/reference/torchgen_facts.py the 2.13 parity tests use.  The unpacked release is
found in ``$VTGEN_TORCH_2_14`` or ``$XDG_CACHE_HOME/vtgen_build/torch-2.14.1``; without it
the tests skip, unless ``$VTGEN_REQUIRE_TORCH_2_14`` is set (CI sets it): then they fail.  Nothing
here needs an installed torchgen (what is compared is read by ``tests/reference/shapes.py``), so a
required run cannot skip for want of one (tests/test_pytest_setup.py shows it).
``python tools/fetch_torch_2_14.py`` makes one (``.ci/run`` runs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

from vtgen_build.emit.kernel import kernel_definition
from vtgen_build.emit.node import node_apply, node_header
from vtgen_build.inputs.files import Inputs
from vtgen_build.inputs.paths import find_pytorch_layout
from vtgen_build.model import load_model
from vtgen_build.plan.kernel import Plan, build_plan
from vtgen_build.plan.policy import load_policy, policy_for
from vtgen_build.plan.target import resolve_target

from .reference.shapes import compiled_lines, hook_sites, inplace_or_view_treatment, saved_members

pytestmark = [pytest.mark.slow, pytest.mark.torch]

REPO = Path(__file__).resolve().parents[1]


def release_dir() -> Path | None:
    """An unpacked torch 2.14.1 (``torchgen/`` beside ``torch/``), if one is cached."""
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    for candidate in (os.environ.get("VTGEN_TORCH_2_14"), os.path.join(xdg, "vtgen_build", "torch-2.14.1")):
        if candidate and (Path(candidate) / "torchgen" / "packaged" / "autograd" / "derivatives.yaml").is_file():
            return Path(candidate)
    return None


def skip_unless_required(why: str) -> NoReturn:
    """Skip, unless CI requires these tests (``$VTGEN_REQUIRE_TORCH_2_14``): then fail, saying why."""
    if os.environ.get("VTGEN_REQUIRE_TORCH_2_14"):
        pytest.fail(f"required by VTGEN_REQUIRE_TORCH_2_14, but {why}")
    pytest.skip(why)


@pytest.fixture(scope="session")
def torch_2_14() -> Path:
    found = release_dir()
    if found is None:
        skip_unless_required("no unpacked torch 2.14.1 (python tools/fetch_torch_2_14.py, or set VTGEN_TORCH_2_14)")
    return found


@pytest.fixture(scope="session")
def facts_2_14(torch_2_14: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """torchgen 2.14.1's facts, computed once per session in a subprocess (~25 s)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(torch_2_14), str(REPO)])}
    done = subprocess.run(
        [sys.executable, "-m", "tests.reference.torchgen_facts", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path_factory.mktemp("facts"),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    facts: dict[str, Any] = json.loads(done.stdout)
    assert Path(facts["torchgen"]).resolve() == (torch_2_14 / "torchgen").resolve()  # 2.14's, not the wheel's
    return facts


@pytest.fixture(scope="session")
def plan_2_14(torch_2_14: Path) -> Plan:
    root = str(torch_2_14 / "torchgen")
    layout = find_pytorch_layout(root)
    model = load_model(Inputs(layout.native_functions, layout.derivatives, layout.tags, "aten"))
    target = resolve_target(None, None, root)
    assert target.release == "2.14" and target.found.startswith("2.14.1")
    policy = policy_for(root, target.release)
    assert policy.source.startswith("parsed from")
    return build_plan(model, policy)


def _keyed(rows: list[list[Any]]) -> dict[tuple[str, str], Any]:
    return {(op, key): value for op, key, value in rows}


def test_parsed_lists_are_the_shipped_2_14_lists(torch_2_14: Path) -> None:
    from dataclasses import replace

    parsed = policy_for(str(torch_2_14 / "torchgen"), "2.14")
    shipped = load_policy(release="2.14")
    assert replace(parsed, source="") == replace(shipped, source="")
    assert "cholesky" not in shipped.gradient_implemented_for_complex
    assert "cholesky" in load_policy().gradient_implemented_for_complex  # 2.13's allowlist


def test_registrations_nodes_and_members_match_torchgen_2_14(plan_2_14: Plan, facts_2_14: dict[str, Any]) -> None:
    regs = {(k.op, k.dispatch_key): k.kind for k in plan_2_14.kernels}
    assert regs == _keyed(facts_2_14["registrations"])
    assert len(regs) == 2389
    kernels = {(k.op, k.dispatch_key): k.node for k in plan_2_14.kernels if k.kind == "kernel"}
    assert kernels == _keyed(facts_2_14["node_for_kernel"])
    assert {i.node for i in plan_2_14.infos} == set(facts_2_14["nodes"])
    assert len(plan_2_14.infos) == 712
    reference = {n: sorted(map(tuple, ms)) for n, ms in facts_2_14["saved_members"].items()}
    assert {str(i.node): sorted(saved_members(i)) for i in plan_2_14.infos} == reference


def test_complex_checks_match_torchgen_2_14(plan_2_14: Plan, facts_2_14: dict[str, Any]) -> None:
    ours = {(k.op, k.dispatch_key): sorted(k.complex_checked) for k in plan_2_14.kernels if k.kind == "kernel"}
    assert ours == _keyed(facts_2_14["complex_checked"])


def test_inplace_or_view_registrations_and_treatment_match_torchgen_2_14(
    plan_2_14: Plan, facts_2_14: dict[str, Any]
) -> None:
    """The same ops get an ADInplaceOrView kernel, each bumping the same outputs or making the same view."""
    ours = json.loads(json.dumps(inplace_or_view_treatment(plan_2_14, load_policy(release="2.14"))))
    theirs = facts_2_14["inplace_or_view"]
    differ = sorted(op for op in ours.keys() | theirs.keys() if ours.get(op) != theirs.get(op))
    assert not differ, [(op, ours.get(op), theirs.get(op)) for op in differ[:5]]
    assert len(theirs) == 1095  # 1093 on 2.13 (2.14: +3 out= kernels, cholesky.out gone)
    assert sum(t[0] == "view" for t in theirs.values()) == 39  # as on 2.13


def test_compiled_autograd_members_match_torchgen_2_14(plan_2_14: Plan, facts_2_14: dict[str, Any]) -> None:
    views = frozenset(n for n, _ in load_policy(release="2.14").view_functions)
    declared = "void compiled_args(CompiledNodeArgs& args) const override;"
    assert all(declared in node_header(i, views) for i in plan_2_14.infos)
    ours = {str(i.node): [list(x) for x in compiled_lines(node_apply(i))] for i in plan_2_14.infos}
    assert ours == facts_2_14["compiled_autograd"]


def test_node_creation_hook_sites_match_torchgen_2_14(plan_2_14: Plan, facts_2_14: dict[str, Any]) -> None:
    def sites(definition: str) -> list[object]:
        fired, last = hook_sites(definition)
        return [list(fired), last]

    ours = {
        (k.op, k.dispatch_key): sites(kernel_definition(k, release="2.14"))
        for k in plan_2_14.kernels
        if k.kind == "kernel"
    }
    theirs = {key: [list(fired), last] for key, (fired, last) in _keyed(facts_2_14["node_creation_hooks"]).items()}
    differ = sorted(key for key in theirs if ours.get(key) != theirs[key])
    assert not differ, [(key, ours.get(key), theirs[key]) for key in differ[:5]]
    assert sum(bool(fired) for fired, _ in ours.values()) == 1231
    # 2.13's code fires none: libtorch 2.13 has no fire_node_creation_hooks
    assert not any("fire_node_creation_hooks" in kernel_definition(k) for k in plan_2_14.kernels if k.kind == "kernel")


def test_a_shard_compiles_against_the_2_14_headers(torch_2_14: Path, tmp_path: Path) -> None:
    """One VariableType shard of the 2.14 output (the release is found beside its torchgen) against
    torch 2.14.1's real headers, which need C++20 (the whole output: see the note in the report)."""
    import shutil

    from vtgen_build.cli import commands as cli

    compiler = shutil.which("g++") or shutil.which("clang++")
    include = torch_2_14 / "torch" / "include"
    if compiler is None or not (include / "torch" / "csrc" / "autograd" / "FunctionsManual.h").is_file():
        skip_unless_required("the test needs a C++ compiler and torch 2.14.1's include/")
    out = tmp_path / "out"
    assert cli.main(["generate", "--pytorch-root", str(torch_2_14 / "torchgen"), "--out", str(out)]) == 0
    unit = out / "VariableType_3.cpp"
    assert "_rebased_fn = rebase_history(" in unit.read_text()
    shim = tmp_path / "shim" / "torch" / "csrc" / "autograd" / "generated"
    shim.mkdir(parents=True)
    (shim / "Functions.h").write_text(f'#include "{out / "FunctionsBase.h"}"\n')
    includes = [f"-I{tmp_path / 'shim'}", f"-I{include}", f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}"]
    cmd = [compiler, "-std=c++20", "-fsyntax-only", "-Wall", "-Werror", *includes, str(unit)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def test_release_is_inferred_from_2_14_generator_sources_without_a_version_file(
    torch_2_14: Path, tmp_path: Path
) -> None:
    from .test_fallbacks import _generator_sources

    root = _generator_sources(tmp_path / "torchgen", torch_2_14 / "torchgen")  # no torch/version.py beside it
    target = resolve_target(None, None, str(root))
    assert (target.release, target.warning) == ("2.14", None), target
