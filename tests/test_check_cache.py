"""``vtgen-build check`` does the least work a change requires: results cache, compiler choice, interrupts.

Real compiler runs on the sample project (``--shards 2``: seven units, two shards each of
VariableType, Functions and ADInplaceOrViewType, and RegisterSchema.cpp).  The results cache
keys a unit by its text, every header it read, the compiler's identity and the flags; these
tests change each of them and watch which units are compiled again.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vtgen_build.base import store
from vtgen_build.check import run as check
from vtgen_build.compile import namespace_hint

from .conftest import SAMPLE, CliResult, CliRunner, default_ctrl_c, sample_inputs

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler")


# what the sample's check compiles at --shards 2: 7, its CPU, CUDA, Meta and CompositeExplicitAutograd
# registrations, RegisterFunctionalize.cpp and AOTIShims.cpp
_UNITS = 13


def _copy_sample(tmp_path: Path) -> Path:
    """A private copy of the sample project (its helper header is edited by some tests)."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns("build*", "*.egg-info"))
    return root


def _args(root: Path, out: Path, *more: str) -> list[str]:
    return ["check", *sample_inputs(root), "-I", str(root / "include"), "--shards", "2", "--out", str(out), *more]


def _compiled(result: CliResult) -> list[str]:
    """The units this run compiled (not those it found unchanged)."""
    return re.findall(r"^\[\d+/\d+\] (\S+): ok \(\d", result.out, re.M)


def _cached(result: CliResult) -> list[str]:
    return re.findall(r"^\[\d+/\d+\] (\S+): ok \(cached\)", result.out, re.M)


def _wrapper(path: Path, body: str = "") -> Path:
    """A compiler that is a shell script around the real one (``body`` runs first)."""
    path.write_text(f'#!/bin/sh\n{body}\nexec {CXX} "$@"\n', encoding="utf-8")
    path.chmod(0o755)
    return path


# -- the results cache ---------------------------------------------------------------------------
@pytest.fixture
def warm(run_cli: CliRunner, tmp_path: Path) -> tuple[Path, Path]:
    """A sample copy and a check directory whose seven units all passed once."""
    root = _copy_sample(tmp_path)
    out = tmp_path / "check"
    first = run_cli(*_args(root, out))
    assert first.code == 0, first.err[-3000:]
    assert len(_compiled(first)) == _UNITS
    return root, out


def test_nothing_changed_compiles_nothing(run_cli: CliRunner, warm: tuple[Path, Path]) -> None:
    root, out = warm
    again = run_cli(*_args(root, out))
    assert again.code == 0, again.err[-3000:]
    assert _compiled(again) == [] and len(_cached(again)) == _UNITS
    assert f"{_UNITS} translation units ({_UNITS} unchanged)" in again.out
    forced = run_cli(*_args(root, out, "--no-cache"))
    assert forced.code == 0 and len(_compiled(forced)) == _UNITS


@pytest.mark.slow
def test_a_header_change_is_a_miss(run_cli: CliRunner, warm: tuple[Path, Path]) -> None:
    """The helper header is read by every unit (inside the Nodes' precompiled header, too)."""
    root, out = warm
    helpers = root / "include" / "vtsample" / "helpers.h"
    helpers.write_text(helpers.read_text(encoding="utf-8") + "\n// edited\n", encoding="utf-8")
    again = run_cli(*_args(root, out))
    assert again.code == 0, again.err[-3000:]
    assert sorted(_compiled(again)) == sorted(["Functions_0.cpp", "Functions_1.cpp", *_kernels(out)])
    helpers.write_text(helpers.read_text(encoding="utf-8") + "#error edited to fail\n", encoding="utf-8")
    broken = run_cli(*_args(root, out))
    assert broken.code == 1 and "edited to fail" in broken.err


def _kernels(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob("VariableType_*.cpp"))


def test_a_compiler_change_is_a_miss(run_cli: CliRunner, tmp_path: Path) -> None:
    root = _copy_sample(tmp_path)
    out = tmp_path / "check"
    cxx = _wrapper(tmp_path / "cxx")
    args = _args(root, out, "--cxx", str(cxx), "--op", "stack_mean", "--no-pch")
    assert run_cli(*args).code == 0
    assert _cached(run_cli(*args)) == ["ops.cpp"]
    _wrapper(cxx, "# a new release of the wrapper")
    again = run_cli(*args)
    assert again.code == 0 and _compiled(again) == ["ops.cpp"], again.out


def test_a_failing_unit_is_never_cached(run_cli: CliRunner, tmp_path: Path) -> None:
    root = _copy_sample(tmp_path)
    derivatives = root / "derivatives.yaml"
    good = derivatives.read_text(encoding="utf-8")
    old = "stack_mean_backward(grad, dim, tensors.size())"
    derivatives.write_text(good.replace(old, "stack_mean_backward(grad, dim, tensors.sizee())"), encoding="utf-8")
    args = _args(root, tmp_path / "check", "--op", "stack_mean", "--no-pch")
    for _ in range(2):  # compiled, and failing, both times
        result = run_cli(*args)
        assert result.code == 1 and "sizee" in result.err and "FAILED" in result.out
    derivatives.write_text(good, encoding="utf-8")
    assert _compiled(run_cli(*args)) == ["ops.cpp"]
    assert _cached(run_cli(*args)) == ["ops.cpp"]


@pytest.mark.slow
def test_a_damaged_cache_is_no_cache(run_cli: CliRunner, warm: tuple[Path, Path]) -> None:
    root, out = warm
    results = out / ".vtgen-check" / "cache" / "index"
    data = bytearray(results.read_bytes())
    data[len(data) // 2] ^= 0x20
    results.write_bytes(bytes(data))
    again = run_cli(*_args(root, out))
    assert again.code == 0 and len(_compiled(again)) == _UNITS, again.err[-2000:]
    assert store.read(results, "compiled_artifacts") is not None  # rewritten whole


@pytest.mark.slow
def test_kill_9_during_a_check_leaves_a_usable_cache(tmp_path: Path) -> None:
    """SIGKILL once the first unit is recorded: the next run reuses it and checks the rest."""
    root = _copy_sample(tmp_path)
    out = tmp_path / "check"
    cmd = [sys.executable, "-m", "vtgen_build", *_args(root, out, "-j", "1", "--no-pch")]
    results = out / ".vtgen-check" / "cache" / "index"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not results.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the check ended before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(_cached(CliResult(0, done.stdout, ""))) >= 1
    assert len(_compiled(CliResult(0, done.stdout, ""))) <= _UNITS - 1


# -- defects: every unit compiled, no silent compiler fallback, no false FAILED on Ctrl-C ------------
@pytest.mark.slow
def test_every_emitted_unit_is_compiled(run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With four shards two units hold no kernel or Node: an ``#error`` in one of them fails the check."""
    real_generate = check.generate

    def generate_then_inject(*args: object, **kwargs: object) -> object:
        result = real_generate(*args, **kwargs)  # type: ignore[arg-type]
        unit = tmp_path / "check" / "VariableType_3.cpp"
        assert "VariableType::" not in unit.read_text(encoding="utf-8").split("TORCH_LIBRARY_IMPL")[0]
        unit.write_text(unit.read_text(encoding="utf-8") + "\n#error injected into an empty unit\n")
        return result

    monkeypatch.setattr(check, "generate", generate_then_inject)
    args = ["check", *sample_inputs(), "-I", str(SAMPLE / "include"), "--shards", "4", "--out", str(tmp_path / "check")]
    result = run_cli(*args, "--no-pch")
    assert result.code == 1
    # 4 shards of three kinds, RegisterSchema.cpp, 4 backend keys, RegisterFunctionalize.cpp and AOTIShims.cpp
    assert "19 translation units" in result.err
    assert "injected into an empty unit" in result.err
    assert re.search(r"FAILED, 1 errors in VariableType_3\.cpp$", result.err, re.M), result.err[-2000:]


@pytest.mark.parametrize("how", ["--cxx", "CXX"])
def test_a_compiler_that_is_not_there_is_an_error(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    args = _args(SAMPLE, tmp_path / "check")
    if how == "--cxx":
        result = run_cli(*args, "--cxx", "/no/such/cxx")
    else:
        monkeypatch.setenv("CXX", "/no/such")
        result = run_cli(*args)
    assert result.code == 1
    assert "/no/such" in result.err and "not found" in result.err
    assert "OK" not in result.out
    assert not (tmp_path / "check").exists()  # fails before generating anything


def test_a_launcher_that_is_not_there_is_an_error(run_cli: CliRunner, tmp_path: Path) -> None:
    result = run_cli(*_args(SAMPLE, tmp_path / "check"), "--launcher", "/no/such/ccache")
    assert result.code == 1 and "--launcher /no/such/ccache: /no/such/ccache not found" in result.err


def test_a_compiler_that_does_not_run_is_an_error(run_cli: CliRunner, tmp_path: Path) -> None:
    broken = tmp_path / "cxx"
    broken.write_text("#!/bin/sh\nexit 3\n", encoding="utf-8")
    broken.chmod(0o755)
    result = run_cli(*_args(SAMPLE, tmp_path / "check"), "--cxx", str(broken))
    assert result.code == 1 and "cannot run" in result.err


@pytest.mark.slow
def test_an_interrupted_check_reports_no_failure(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the whole process group) while a unit compiles: no ``FAILED`` line, exit 130."""
    proc, out, err = _ctrl_c_while_compiling(tmp_path)
    assert proc.returncode == 130, (out, err)
    assert "FAILED" not in out + err and ": ok" not in out
    assert "Traceback" not in err
    assert store.read(tmp_path / "check" / ".vtgen-check" / "cache" / "index", "compiled_artifacts") in (
        None,
        {"paths": [], "entries": {}},
    )


# -- helpers found without being told -------------------------------------------------------------
def test_pytorch_manual_header_brings_its_namespace(run_cli: CliRunner, tmp_path: Path) -> None:
    manual = "/somewhere/torch/include/torch/csrc/autograd/FunctionsManual.h"
    inputs = sample_inputs()[:8]  # the yaml files and namespace, no manual header or using-namespace
    result = run_cli("generate", *inputs, "--manual-header", manual, "--out", str(tmp_path / "gen"))
    assert result.code == 0, result.err
    assert "using namespace torch::autograd::generated::details;" in (tmp_path / "gen" / "Functions_0.cpp").read_text()


def test_the_namespace_of_undeclared_helpers_is_named(run_cli: CliRunner, tmp_path: Path) -> None:
    """Without --using-namespace every helper is undeclared, each with a did-you-mean into one namespace."""
    inputs = sample_inputs()[:10]  # the sample's helper header, without its --using-namespace
    assert inputs[-2:] == ["--manual-header", "vtsample/helpers.h"]
    args = ["check", *inputs, "-I", str(SAMPLE / "include"), "--out", str(tmp_path / "check")]
    result = run_cli(*args, "--shards", "2", "--op", "stack_mean", "--op", "soft_quantize", "--no-pch")
    assert result.code == 1
    assert re.search(r"did you mean .torch::autograd::generated::details::", result.err)
    last = result.err.rstrip("\n").splitlines()[-1]
    assert last == (
        "hint: every undeclared name is declared in namespace torch::autograd::generated::details: "
        "add --using-namespace torch::autograd::generated::details"
    )


def test_namespace_hint_only_when_one_namespace_fixes_everything() -> None:
    g = "a.cpp:1:2: error: '{0}' was not declared in this scope; did you mean '{1}::{0}'?"
    clang = "a.cpp:1:2: error: use of undeclared identifier '{0}'; did you mean '{1}::{0}'?"
    assert namespace_hint([g.format("f", "ns::in"), clang.format("h", "ns::in")]) == "ns::in"
    assert namespace_hint([g.format("f", "a"), g.format("h", "b")]) is None
    assert namespace_hint([g.format("f", "a"), "a.cpp:3:4: error: 'k' was not declared in this scope"]) is None
    assert namespace_hint(["a.cpp:1:2: error: 'f' was not declared in this scope; did you mean 'g'?"]) is None
    assert namespace_hint(["a.cpp:1:2: error: expected ';'"]) is None
    utf8 = "a.cpp:1:2: error: \u2018f\u2019 was not declared in this scope; did you mean \u2018ns::f\u2019?"
    assert namespace_hint([utf8]) == "ns"


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_an_interrupted_check_still_writes_its_document(tmp_path: Path, fmt: str) -> None:
    """Ctrl-C with --format json|sarif: exit 130 and, on stdout, the document saying the run was interrupted
    (it once left stdout empty, which a CI step then failed to parse)."""
    proc, out, err = _ctrl_c_while_compiling(tmp_path, "--format", fmt)
    assert proc.returncode == 130, (out, err)
    document = json.loads(out)
    said = "interrupted (Ctrl-C) before the check finished: the findings are incomplete"
    if fmt == "json":
        assert document["interrupted"] is True and document["ok"] is False and document["summary"] == said
    else:
        (invocation,) = document["runs"][0]["invocations"]
        assert invocation["executionSuccessful"] is False
        assert invocation["toolExecutionNotifications"][0]["message"]["text"] == said
    assert "Traceback" not in err


def _ctrl_c_while_compiling(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str, str]:
    """Run ``check`` on the sample with a compiler that hangs, send Ctrl-C once it has started."""
    started = tmp_path / "started"
    cxx = _wrapper(tmp_path / "cxx", f'case "$*" in *--version*) ;; *) touch {started}; sleep 60;; esac')
    args = _args(SAMPLE, tmp_path / "check", "--cxx", str(cxx), "--no-pch", *extra)
    proc = subprocess.Popen(
        [sys.executable, "-m", "vtgen_build", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_ctrl_c,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the compiler never started"
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return proc, out, err
