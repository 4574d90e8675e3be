"""One build request (plan/request.py): each rule of which options go together is written once, and every
front end (the command line, the setuptools hook, CMake through the generator) says it in its own words."""

from __future__ import annotations

from pathlib import Path

import pytest

from vtgen_build.base.errors import VtgenError
from vtgen_build.cli import commands
from vtgen_build.engine.generate import GenerateOptions, GenerateResult, configure_answers
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.request import CLI, CMAKE, SETUPTOOLS, Spelling, StableTarget, make_request
from vtgen_build.plan.target import Target

from .conftest import CliRunner, sample_inputs


@pytest.mark.parametrize(
    ("spell", "message"),
    [
        (CLI, "--stable-abi needs --register-backends"),
        (SETUPTOOLS, "'stable-abi' needs 'register-backends'"),
        (CMAKE, "STABLE_ABI needs REGISTER_BACKENDS"),
    ],
)
def test_one_rule_said_in_each_front_ends_words(spell: Spelling, message: str) -> None:
    with pytest.raises(VtgenError, match=message):
        make_request(spell, namespace="lib", stable_abi="2.10", built_against="2.13.0")
    with pytest.raises(VtgenError, match=f"{spell.python_formulas} applies to {spell.python_autograd} only"):
        make_request(spell, python_formulas="p/f.py")
    with pytest.raises(VtgenError, match="must sit beside"):
        make_request(spell, python_autograd="p/_autograd.py", python_formulas="q/f.py")
    with pytest.raises(VtgenError, match=f"{spell.manual_headers} does not apply with {spell.stable_abi}"):
        make_request(spell, register_backends="CPU", stable_abi="2.10", manual_headers=["h.h"])
    with pytest.raises(VtgenError, match=f"{spell.stable_abi}: 2.14 is newer than the torch"):
        make_request(spell, register_backends="CPU", stable_abi="2.14", built_against="2.13.0")


def test_the_request_holds_typed_values_and_decides_the_op_library() -> None:
    stable = make_request(CLI, namespace="lib", register_backends="CPU,Meta", stable_abi="2.10")
    assert stable.stable == StableTarget(2, 10) and stable.register_backends == ("CPU", "Meta")
    assert stable.op_library and not stable.classic_op_library and stable.library_files == ()
    classic = make_request(CLI, namespace="lib", register_backends=["CPU"])
    assert classic.classic_op_library and classic.library_files == (
        "RegisterFunctionalize.cpp", "AOTIShims.cpp", "AOTIShims.h")  # fmt: skip
    assert not make_request(CLI, register_backends="CPU").op_library  # aten's keys: not an op library
    assert not make_request(CLI, namespace="lib").op_library  # no backend registrations


def test_cmake_asks_the_request_at_configure_time() -> None:
    """CMake's vtgen_generate() gets the problems in its own words, or the request's answers."""
    assert configure_answers(["--namespace", "lib", "--register-backends", "CPU"]) == [
        "files\tRegisterFunctionalize.cpp;AOTIShims.cpp;AOTIShims.h", "stable-macro\t"]  # fmt: skip
    answers = configure_answers(["--namespace", "lib", "--register-backends", "CPU", "--stable-abi", "2.10"])
    assert answers == ["files\t", "stable-macro\t0x020a000000000000ULL"]
    assert configure_answers(["--namespace", "lib", "--stable-abi", "2.x"]) == [
        "-\tSTABLE_ABI: '2.x' is not a release X.Y (e.g. 2.10)"]  # fmt: skip
    assert configure_answers(["--namespace", "class"])[0].startswith("--namespace\t")  # a name: as before


def test_the_request_holds_the_whole_target(
    run_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The release crosses the command line as the resolved ``Target`` (its found version and source kept),
    and the stable target is checked against that version."""
    seen: list[GenerateOptions] = []

    def fake(inputs: Inputs, options: GenerateOptions, finish: object = None) -> GenerateResult:
        seen.append(options)
        return GenerateResult(None, (), 0, 0.0, ())

    monkeypatch.setattr(commands, "generate", fake)
    args = ["generate", *sample_inputs(), "--out", str(tmp_path / "out"), "--torch-version", "2.14.1"]
    assert run_cli(*args, "--python-api", str(tmp_path / "api")).code == 0
    request = seen[0].request
    assert request.target == Target("2.14", "2.14.1", "--torch-version")
    assert request.python_api == str(tmp_path / "api")
    with pytest.raises(VtgenError, match=r"--stable-abi: 2\.14 is newer than the torch this build compiles against"):
        make_request(CLI, register_backends="CPU", stable_abi="2.14", target=Target("2.13", "2.13.0", "x"))
