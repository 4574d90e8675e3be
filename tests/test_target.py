"""The target PyTorch release (``--torch-version``, a ``torch/version.h``, a torchgen package's
``torch/version.py``) and the policy lists read from a release's own generator sources."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.plan.policy import load_policy, policy_for, read_policy_sources
from vtgen_build.plan.target import resolve_target

from .conftest import SAMPLE, CliRunner, RealYaml, sample_inputs


def _version_h(include: Path, major: int, minor: int, patch: int = 0) -> Path:
    header = include / "torch" / "headeronly" / "version.h"
    header.parent.mkdir(parents=True)
    header.write_text(
        f"#pragma once\n#define TORCH_VERSION_MAJOR {major}\n#define TORCH_VERSION_MINOR {minor}\n"
        f"#define TORCH_VERSION_PATCH {patch}\n"
    )
    return header


def test_release_from_torch_include_version_h(tmp_path: Path) -> None:
    header = _version_h(tmp_path / "include", 2, 14, 1)
    target = resolve_target(None, str(tmp_path / "include"), None)
    assert (target.release, target.found, target.source) == ("2.14", "2.14.1", str(header))


def test_explicit_version_wins_and_newer_releases_get_the_newest_semantics(tmp_path: Path) -> None:
    _version_h(tmp_path / "include", 2, 14)
    assert resolve_target("2.13", str(tmp_path / "include"), None).release == "2.13"
    assert resolve_target("2.16.0a0", None, None).release == "2.14"
    assert resolve_target(None, None, None).release == "2.13"


@pytest.mark.parametrize(("version", "message"), [("2.12", "older than every supported"), ("two", "not a PyTorch")])
def test_unusable_versions_are_errors(version: str, message: str) -> None:
    with pytest.raises(VtgenError, match=message):
        resolve_target(version, None, None)


def test_release_from_torchgen_package_and_checkout(tmp_path: Path, real_yaml: RealYaml) -> None:
    assert resolve_target(None, None, str(real_yaml.torchgen_dir)).release == "2.13"  # the wheel's torch/version.py
    (tmp_path / "version.txt").write_text("2.14.0a0\n")
    target = resolve_target(None, None, str(tmp_path))
    assert (target.release, target.found) == ("2.14", "2.14.0a0")


_CHECKOUT_SOURCES = {
    "tools/autograd/gen_trace_type.py": """
        import torch  # never run: the sources are parsed, not imported
        raise SystemExit("executed")
        MANUAL_BACKEND = {"options", "data"}
        MANUAL_AUTOGRAD_AND_TRACER = {"copy_", "detach"}
        MANUAL_AUTOGRAD = MANUAL_TRACER = MANUAL_BACKEND | MANUAL_AUTOGRAD_AND_TRACER
    """,
    "tools/autograd/gen_variable_type.py": """
        DONT_REQUIRE_DERIVATIVE = {"argmax", *MISSING}
        DONT_REQUIRE_DERIVATIVE = {"argmax"}
        GRADIENT_IMPLEMENTED_FOR_COMPLEX = {"my_new_op", "mul"}
        GRADIENT_IMPLEMENTED_FOR_SPARSE_COMPLEX = {"coalesce"}
        GRADIENT_IMPLEMENTED_FOR_COMPLEX.update(GRADIENT_IMPLEMENTED_FOR_SPARSE_COMPLEX)
        RESET_GRAD_ACCUMULATOR = {"set_", "resize_"}
        DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE = set()
        DONT_ENFORCE_TENSOR_IMPL_USE_COUNT = {"lu_unpack"}
        DONT_ENFORCE_STORAGE_IMPL_USE_COUNT = {"channel_shuffle", *DONT_ENFORCE_TENSOR_IMPL_USE_COUNT}
    """,
    "tools/autograd/gen_inplace_or_view_type.py": """
        VIEW_FUNCTIONS_WITH_METADATA_CHANGE = ["view_as_real"]
        VIEW_FUNCTIONS = {"expand": "self", "unbind": "self"}
        for key in VIEW_FUNCTIONS_WITH_METADATA_CHANGE:
            VIEW_FUNCTIONS[key] = "self"
        RETURNS_VIEWS_OF_INPUT = set(VIEW_FUNCTIONS.keys()).union({"chunk", "narrow"})
    """,
    "torchgen/api/autograd.py": """
        _foreach_with_inplace_ref = {"_foreach_zero_"}
        _foreach_with_tensor_overload = {"_foreach_add.Tensor"}
        _skip_argument_len_check = {"_foreach_add.Scalar"}
    """,
}


def test_policy_is_parsed_from_a_checkouts_own_sources(tmp_path: Path) -> None:
    for rel, text in _CHECKOUT_SOURCES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    policy = policy_for(str(tmp_path), "2.13")
    assert policy.source == f"parsed from the generator sources under {tmp_path}"
    assert policy.gradient_implemented_for_complex == {"my_new_op", "mul", "coalesce"}
    assert policy.manual_autograd == {"options", "data", "copy_", "detach"}
    assert policy.dont_require_derivative == {"argmax"}
    assert policy.dont_enforce_storage_impl_use_count == {"channel_shuffle", "lu_unpack"}
    assert policy.view_functions == (("expand", "self"), ("unbind", "self"), ("view_as_real", "self"))
    assert policy.returns_views_of_input == {"expand", "unbind", "view_as_real", "chunk", "narrow"}
    (tmp_path / "tools/autograd/gen_variable_type.py").write_text("DONT_REQUIRE_DERIVATIVE = {'argmax'}\n")
    with pytest.raises(VtgenError, match=r"gen_variable_type\.py: cannot read GRADIENT_IMPLEMENTED_FOR_COMPLEX"):
        read_policy_sources(str(tmp_path))  # a list the sources lack
    (tmp_path / "tools/autograd/gen_variable_type.py").write_text("GRADIENT_IMPLEMENTED_FOR_COMPLEX = f()\n")
    with pytest.raises(VtgenError, match=r"gen_variable_type\.py:1: error: cannot evaluate this statement, which "):
        read_policy_sources(str(tmp_path))  # a list whose value is not plain data: refused at its line


def test_without_sources_the_built_in_lists_of_the_release_are_used(tmp_path: Path) -> None:
    assert policy_for(str(tmp_path), "2.14") == load_policy(release="2.14")
    assert load_policy(release="2.14").source == "built-in lists of PyTorch 2.14 (pytorch_policy_2.14.yaml)"
    with pytest.raises(VtgenError, match=r"no built-in policy for PyTorch 2\.9"):
        load_policy(release="2.9")


def test_inspect_says_which_lists_and_release(real_yaml: RealYaml, run_cli: CliRunner) -> None:
    result = run_cli("inspect", "--pytorch-root", str(real_yaml.torchgen_dir), "--json")
    assert (result.code, result.err) == (0, "")
    summary = json.loads(result.out)
    assert summary["policy"] == f"parsed from the generator sources under {real_yaml.torchgen_dir}"
    assert summary["torch_release"].startswith("2.13 (2.13.0")
    result = run_cli("inspect", *sample_inputs()[:6], "--torch-version", "2.14")
    assert "policy: built-in lists of PyTorch 2.14" in result.out
    assert "torch release: 2.14 (2.14, from --torch-version)" in result.out


def _generated(run_cli: CliRunner, out: Path, *extra: str) -> str:
    result = run_cli("generate", *sample_inputs(SAMPLE), "--shards", "1", "--out", str(out), *extra)
    assert result.code == 0, result.err
    return (out / "VariableType_0.cpp").read_text()


def test_the_policy_says_which_releases_fire_node_creation_hooks() -> None:
    from vtgen_build.plan.policy import DEFAULT_RELEASE, SUPPORTED_RELEASES, fires_node_creation_hooks

    assert [fires_node_creation_hooks(r) for r in SUPPORTED_RELEASES] == [False, True]  # 2.13, 2.14
    assert not fires_node_creation_hooks(DEFAULT_RELEASE) and fires_node_creation_hooks("2.15")


def test_node_creation_hooks_follow_the_target(tmp_path: Path, run_cli: CliRunner) -> None:
    old = _generated(run_cli, tmp_path / "old")
    assert "fire_node_creation_hooks" not in old
    _version_h(tmp_path / "include", 2, 14)
    new = _generated(run_cli, tmp_path / "new", "--torch-version", "2.14")
    # in-place and out= kernels: the hooks see the Node rebase_history attached
    assert "_rebased_fn = rebase_history(flatten_tensor_args( self ), grad_fn);" in new
    assert new.count("fire_node_creation_hooks(_rebased_fn);") == 4  # softsign_, scale_add_ and their out=
    assert new.count("fire_node_creation_hooks(grad_fn);") >= 4
    # switching back regenerates (the target is part of the settings)
    assert _generated(run_cli, tmp_path / "new") == old


def test_a_command_resolves_the_release_once(
    tmp_path: Path, run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line resolves the target once and hands it down (issue 37, item 1): generating
    the kernels and the typed Python API, and ``inspect``'s plans and summary, share one answer."""
    from vtgen_build.plan import target

    calls: list[tuple[str | None, str | None, str | None]] = []

    def counted(explicit: str | None, include: str | None, root: str | None) -> target.Target:
        calls.append((explicit, include, root))
        return resolve_target(explicit, include, root)

    monkeypatch.setattr(target, "resolve_target", counted)
    _version_h(tmp_path / "include", 2, 14)
    api = ["--python-api", str(tmp_path / "api")]
    assert "fire_node_creation_hooks" in _generated(run_cli, tmp_path / "out", "--torch-version", "2.14", *api)
    assert calls == [("2.14", None, None)]
    calls.clear()
    result = run_cli("inspect", *sample_inputs()[:6], "--torch-version", "2.14")
    assert "torch release: 2.14 (2.14, from --torch-version)" in result.out
    assert calls == [("2.14", None, None)]


def test_the_one_version_h_reader_serves_the_compile_standard(tmp_path: Path) -> None:
    from vtgen_build.compile import default_std, torch_version

    _version_h(tmp_path / "include", 2, 14, 1)
    assert resolve_target(None, str(tmp_path / "include"), None).found == "2.14.1"
    assert torch_version(tmp_path / "include") == (2, 14)
    assert default_std(tmp_path / "include") == "c++20"


def test_torch_version_help_says_what_the_code_does(capsys: pytest.CaptureFixture[str]) -> None:
    from vtgen_build.cli.commands import main

    assert main(["generate", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "the torch found" not in text  # nothing looks for an installed torch
    assert "release to generate for (default: the one in the torch/version.h of --torch-include, where" in text
