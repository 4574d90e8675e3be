"""One dialect for classic and stable: the request picks it, and the one set of emitters writes both
(a structured group's declarations, its generated kernels, the per-key registration blocks)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from vtgen_build.base.errors import Location, VtgenError
from vtgen_build.model.schema import BaseType
from vtgen_build.model.type_spellings import CPP
from vtgen_build.plan.dialect import CLASSIC, STABLE
from vtgen_build.plan.request import BuildRequest, StableTarget
from vtgen_build.plan.stable_types import stable_argument_type

from .conftest import ROOT

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter


def test_the_request_chooses_the_dialect() -> None:
    assert BuildRequest(namespace="st", register_backends=("CPU",)).dialect is CLASSIC
    assert BuildRequest(namespace="st", register_backends=("CPU",), stable=StableTarget(2, 10)).dialect is STABLE


# A structured group whose one impl serves two keys, and a plain op: mutating ops return nothing, as
# the stable ABI requires.
_YAML = """\
- func: f(Tensor self) -> Tensor
  structured_delegate: f.out
- func: f.out(Tensor self, *, Tensor(a!) out) -> ()
  structured: True
  dispatch:
    CPU, CUDA: f_out
- func: g(Tensor self, float alpha) -> Tensor
  dispatch:
    CPU, CUDA: g_kernel
"""


@pytest.mark.parametrize("stable", [False, True], ids=["classic", "stable"])
def test_both_dialects_declare_and_register_alike(
    stable: bool, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native = tmp_yaml("nf.yaml", _YAML)
    derivatives = tmp_yaml("d.yaml", "")
    out = tmp_path / "out"
    result = run_cli(
        "generate", "--native-functions", native, "--derivatives", derivatives, "--namespace", "st",
        "--out", str(out), "--register-backends", "CPU,CUDA,Meta", "--torch-version", "2.13",
        *(["--stable-abi", "2.10"] if stable else []),
    )  # fmt: skip
    assert result.code == 0, result.err
    header = (out / "NativeKernels.h").read_text()
    # one impl serving two keys is declared once, named after its first key, in either dialect
    assert header.count("impl of structured st::f.out") == 1
    assert "// nf.yaml:6: CPU impl of structured st::f.out" in header.replace(str(Path(native).parent) + "/", "")
    cuda = (out / "RegisterCUDA.cpp").read_text()
    boxing = "TORCH_BOX" if stable else "TORCH_FN"
    macro = "STABLE_TORCH_LIBRARY_IMPL" if stable else "TORCH_LIBRARY_IMPL"
    assert f"{macro}(st, CUDA, m) {{" in cuda
    assert f'm.impl("g", {boxing}((static_cast<' in cuda
    generated = "&st_f_out_CUDA" if stable else "st_f_out_CUDA"
    assert f'm.impl("f.out", {boxing}({generated}));' in cuda


@pytest.mark.parametrize("stable", [False, True], ids=["classic", "stable"])
def test_the_registrations_are_written_in_the_requests_dialect(
    stable: bool, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the request chooses the dialect in one place: a request answering another one changes the output
    marked = replace(STABLE if stable else CLASSIC, impl_macro="MARKED_LIBRARY_IMPL")
    monkeypatch.setattr(BuildRequest, "dialect", property(lambda _: marked))
    out = tmp_path / "out"
    result = run_cli(
        "generate", "--native-functions", tmp_yaml("nf.yaml", _YAML), "--derivatives", tmp_yaml("d.yaml", ""),
        "--namespace", "st", "--out", str(out), "--register-backends", "CPU,Meta", "--torch-version", "2.13",
        *(["--stable-abi", "2.10"] if stable else []),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "MARKED_LIBRARY_IMPL(st, CPU, m) {" in (out / "RegisterCPU.cpp").read_text()


def _torch_lookups(config: str) -> list[str]:
    """The ``execute_process`` calls of the CMake config that ask the interpreter about its torch."""
    calls = [part.split("\n)", 1)[0] for part in config.split("execute_process(")[1:]]
    return [c for c in calls if "torch" in c.split("RESULT_VARIABLE", 1)[0]]


def test_cmake_writes_the_generate_command_once_and_finds_torch_one_way() -> None:
    config = (ROOT / "cmake" / "vtgen_buildConfig.cmake").read_text()
    # the output options of the command (and the build step running it) once, for both modes
    assert config.count('--depfile "${depfile}"') == 1
    assert config.count('_vtgen_add_generate_step("${target}"') == 1
    # one question to the interpreter about its torch, asked by the classic and the stable branch
    assert len(_torch_lookups(config)) == 1
    assert config.count('_vtgen_locate_torch("${python}"') == 2


@pytest.mark.parametrize("name", sorted(CPP))
def test_every_cpp_type_is_spelled_by_the_stable_dialect_or_refused_with_a_reason(name: str) -> None:
    """The stable column of the one C++ table decides: a spelling is the kernel's parameter type, none
    is an error saying what to write instead (never the catch-all)."""
    where = Location("nf.yaml", 1)
    spelled = CPP[name].stable
    if spelled is None:
        with pytest.raises(VtgenError) as caught:
            stable_argument_type(BaseType(name), False, where, "st::f: argument 'x'")
        assert "it has no stable-ABI C++ type" not in caught.value.message
    elif name == "Tensor":
        assert stable_argument_type(BaseType(name), False, where, "x").cpp() == f"const {spelled} &"
    else:
        assert stable_argument_type(BaseType(name), False, where, "x").cpp() == spelled
