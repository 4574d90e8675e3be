"""Op libraries: backend registrations generated from ``dispatch:`` (``--register-backends``),
structured groups, the fake-kernel module, errors at the yaml line, and libraries smaller than
their shard count.  Real compiler runs here use the stub headers; the runtime side (the sample
built against the real torch, opcheck, torch.compile, export) is in tests/test_sample_runtime.py.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from vtgen_build.linkcheck import kernel_sites, missing_kernels

from .conftest import SAMPLE, sample_inputs

if TYPE_CHECKING:
    from tests.conftest import CliRunner, YamlWriter

THREE_OPS = """\
- func: twice(Tensor self) -> Tensor
  dispatch:
    CPU: twice
- func: pair(Tensor self, Tensor other) -> Tensor
  dispatch:
    CPU, CUDA: pair
- func: lone(Tensor self, SymInt n) -> Tensor
  dispatch:
    CompositeExplicitAutograd: lone
"""

THREE_DERIVATIVES = """\
- name: twice(Tensor self) -> Tensor
  self: grad * 2
- name: pair(Tensor self, Tensor other) -> Tensor
  self: grad
  other: grad
"""


def _generate(run_cli: CliRunner, native: str, derivatives: str, out: Path, *extra: str) -> tuple[int, str]:
    result = run_cli(
        "generate", "--native-functions", native, "--derivatives", derivatives, "--namespace", "three",
        "--out", str(out), *extra,
    )  # fmt: skip
    return result.code, result.err


# -- item 1: any shard count ---------------------------------------------------------------------
CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_more_shards_than_ops_compile(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """Three ops in 10 shards (the default is 1 for them): most shards are empty, and every unit
    compiles (stubs)."""
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    result = run_cli(
        "check", "--native-functions", native, "--derivatives", derivatives, "--namespace", "three",
        "--out", str(tmp_path / "out"), "--shards", "10",
    )  # fmt: skip
    assert result.code == 0, result.err[-3000:]
    # 10 shards of three kinds, RegisterSchema.cpp, the CPU, CUDA, CompositeExplicitAutograd registrations,
    # RegisterFunctionalize.cpp and AOTIShims.cpp
    assert "36 translation units" in result.out and "OK, 0 errors" in result.out, result.out[-500:]
    empty = (tmp_path / "out" / "VariableType_0.cpp").read_text()
    assert "TORCH_LIBRARY_IMPL" not in empty or "namespace torch::autograd::generated {}" in empty


# -- item 2: registrations -------------------------------------------------------------------
def test_header_declares_native_signatures(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    code, err = _generate(run_cli, native, derivatives, tmp_path / "out", "--register-backends", "CPU")
    assert code == 0, err
    header = (tmp_path / "out" / "NativeKernels.h").read_text()
    assert f"// {native}:3: CPU kernel of three::twice\nat::Tensor twice(const at::Tensor & self);" in header
    assert "at::Tensor pair(const at::Tensor & self, const at::Tensor & other);" in header
    assert "lone" not in header  # a key this build does not register: not required
    units = sorted(p.name for p in (tmp_path / "out").glob("Register*.cpp"))
    assert units == ["RegisterCPU.cpp", "RegisterFunctionalize.cpp", "RegisterSchema.cpp"]
    unit = (tmp_path / "out" / "RegisterCPU.cpp").read_text()
    assert "TORCH_LIBRARY_IMPL(three, CPU, m)" in unit and 'm.impl("pair",' in unit and "&three::pair" in unit


def test_only_an_op_library_gets_functionalize_and_shim_units(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """RegisterFunctionalize.cpp and AOTIShims.cpp/.h are an op library's (--namespace other than aten,
    as CMake decides from NAMESPACE): the same yaml as aten's ops gets neither (nothing would be in
    them), and a rerun as aten removes the ones an op-library run wrote."""
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    units = ("RegisterFunctionalize.cpp", "AOTIShims.cpp", "AOTIShims.h")
    out = tmp_path / "out"
    code, err = _generate(run_cli, native, derivatives, out, "--register-backends", "CPU")
    assert code == 0, err
    assert all((out / name).is_file() for name in units)
    as_aten = run_cli("generate", "--native-functions", native, "--derivatives", derivatives, "--out", str(out),
                      "--register-backends", "CPU")  # fmt: skip
    assert as_aten.code == 0, as_aten.err
    assert not any((out / name).exists() for name in units), sorted(p.name for p in out.iterdir())
    assert (out / "RegisterCPU.cpp").is_file()


def test_all_keys_and_symint_spelling(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """`all`: one unit per key the yaml uses; SymInt is int64_t unless the kernel is ``*_symint``."""
    native = tmp_yaml(
        "nf.yaml", THREE_OPS + "- func: grow(Tensor self, SymInt n) -> Tensor\n  dispatch:\n    CPU: grow_symint\n"
    )
    derivatives = tmp_yaml("d.yaml", THREE_DERIVATIVES)
    code, err = _generate(run_cli, native, derivatives, tmp_path / "out", "--register-backends", "all")
    assert code == 0, err
    units = sorted(p.name for p in (tmp_path / "out").glob("Register*.cpp"))
    assert units == [
        "RegisterCPU.cpp",
        "RegisterCUDA.cpp",
        "RegisterCompositeExplicitAutograd.cpp",
        "RegisterFunctionalize.cpp",
        "RegisterSchema.cpp",
    ]
    header = (tmp_path / "out" / "NativeKernels.h").read_text()
    assert "at::Tensor lone(const at::Tensor & self, int64_t n);" in header
    assert "at::Tensor grow_symint(const at::Tensor & self, c10::SymInt n);" in header


def test_without_the_flag_nothing_is_registered(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    code, err = _generate(run_cli, native, derivatives, tmp_path / "out")
    assert code == 0, err
    assert not (tmp_path / "out" / "NativeKernels.h").exists()
    assert [p.name for p in (tmp_path / "out").glob("Register*.cpp")] == ["RegisterSchema.cpp"]


def test_fake_module_is_named_by_the_schema_registration(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    code, err = _generate(run_cli, native, derivatives, tmp_path / "out", "--fake-module", "three._fake")
    assert code == 0, err
    text = (tmp_path / "out" / "RegisterSchema.cpp").read_text()
    assert 'TORCH_LIBRARY(three, m) {\n  m.set_python_module("three._fake");' in text
    code, err = _generate(run_cli, native, derivatives, tmp_path / "bad", "--fake-module", "three.-x")
    assert code == 1 and "--fake-module: 'three.-x' is not a Python module name" in err


# -- errors at the yaml line -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "line", "message"),
    [
        (
            "- func: f(Tensor self) -> Tensor\n  dispatch:\n    CPUU: f\n",
            3,
            "unknown dispatch key 'CPUU'; did you mean 'CPU'?",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  tags: [pointwize]\n",
            2,
            "unknown tag 'pointwize'; did you mean 'pointwise'?",
        ),
        (
            "- func: f(Tensor self) -> Tensor\n  structured_delegate: f.outt\n",
            1,
            "structured_delegate 'f.outt' is not a 'structured: True' op; did you mean 'f.out'?",
        ),
        (
            "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n  dispatch:\n"
            "    CPU: f_out\n    Meta: f_meta\n",
            5,
            "a structured op's Meta kernel is generated from its meta function; name only backend impls",
        ),
    ],
)
def test_yaml_mistakes_are_located(
    entry: str, line: int, message: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    structured = (
        "- func: f.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)\n  structured: True\n  dispatch:\n    CPU: f_out\n"
    )
    base = "" if entry.startswith("- func: f.out") else structured
    native = tmp_yaml("nf.yaml", entry + base)
    tags = tmp_yaml("tags.yaml", "- tag: pointwise\n  desc: x\n")
    derivatives = tmp_yaml("d.yaml", "")
    code, err = _generate(run_cli, native, derivatives, tmp_path / "out", "--tags", tags, "--register-backends", "all")
    assert code == 1
    assert err.strip() == f"{native}:{line}: error: {message}", err


def test_unknown_backend_key_on_the_command_line(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    code, err = _generate(run_cli, native, derivatives, tmp_path / "out", "--register-backends", "CPU,Mta")
    assert code == 1 and "unknown dispatch key 'Mta'; did you mean 'Meta'?" in err, err


# -- structured ---------------------------------------------------------------------------------
def test_sample_structured_group(run_cli: CliRunner, tmp_path: Path) -> None:
    """softsign: one meta function and one impl declared; every variant's CPU and Meta kernel generated."""
    result = run_cli("generate", *sample_inputs(), "--out", str(tmp_path), "--register-backends", "CPU,Meta")
    assert result.code == 0, result.err
    header = (tmp_path / "NativeKernels.h").read_text()
    assert "void softsign_meta(vtgen::MetaOutputs & outputs, const at::Tensor & self);" in header
    assert "void softsign_out(const at::Tensor & self, const at::Tensor & out);" in header
    meta = (tmp_path / "RegisterMeta.cpp").read_text()
    for op in ("softsign", "softsign_", "softsign.out", "scale_add", "scale_add_", "scale_add.out", "topk_abs"):
        assert f'm.impl("{op}",' in meta, op
    assert "softsign_out(" not in meta.split("TORCH_LIBRARY_IMPL")[0].split("vtgen_resize_out(outputs_, 0, out);")[-1]
    cpu = (tmp_path / "RegisterCPU.cpp").read_text()
    assert "vtsample::softsign_out(self, self);" in cpu  # the in-place kernel: impl writes into self


# A structured op on TensorIterator with precomputed values (its dispatch: ends the text: more keys may follow).
LERP_TO = """\
- func: lerp_to(Tensor self, Tensor end, int dim) -> Tensor
  structured_delegate: lerp_to.out
- func: lerp_to.out(Tensor self, Tensor end, int dim, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  precomputed:
  - dim -> int wrapped_dim, float weight
  dispatch:
    CPU: lerp_to_out
"""


def test_iterator_and_precomputed(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native = tmp_yaml("nf.yaml", LERP_TO)
    code, err = _generate(run_cli, native, tmp_yaml("d.yaml", ""), tmp_path, "--register-backends", "CPU,Meta")
    assert code == 0, err
    header = (tmp_path / "NativeKernels.h").read_text()
    assert "struct lerp_to_precomputed {\n  int64_t wrapped_dim;\n  double weight;\n};" in header
    assert (
        "lerp_to_precomputed lerp_to_meta(at::TensorIteratorConfig & config, const at::Tensor & self, "
        "const at::Tensor & end, int64_t dim);" in header
    )
    assert (
        "void lerp_to_out(at::TensorIteratorBase & iter, const at::Tensor & self, const at::Tensor & end, "
        "int64_t wrapped_dim, double weight, const at::Tensor & out);" in header
    )
    cpu = (tmp_path / "RegisterCPU.cpp").read_text()
    assert "three::lerp_to_out(iter_, self, end, precomputed_.wrapped_dim, precomputed_.weight, out_);" in cpu


# -- a kernel no source defines ------------------------------------------------------------------
@pytest.mark.parametrize("lines", [(), ("--line-directives",)], ids=["plain", "line-directives"])
def test_link_errors_map_to_the_yaml_line(
    lines: tuple[str, ...], tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    """The link launcher's mapping, on GNU ld's and lld's spelling of an undefined kernel (CMake and
    setuptools builds generate with ``--line-directives``: each declaration then follows a ``#line``)."""
    native, derivatives = tmp_yaml("nf.yaml", THREE_OPS), tmp_yaml("d.yaml", THREE_DERIVATIVES)
    code, err = _generate(run_cli, native, derivatives, tmp_path, "--register-backends", "all", *lines)
    assert code == 0, err
    assert ("#line 6 " in (tmp_path / "NativeKernels.h").read_text()) == bool(lines)
    sites = kernel_sites((tmp_path / "NativeKernels.h").read_text())
    ld = "RegisterCPU.cpp:(.text+0x1d): undefined reference to `three::pair(at::Tensor const&, at::Tensor const&)'"
    lld = "ld.lld: error: undefined symbol: three::lone(at::Tensor const&, long)"
    found = missing_kernels(ld + "\n" + lld, sites)
    assert [(s.name, s.where) for s in found] == [("three::pair", f"{native}:6"), ("three::lone", f"{native}:9")]
    assert missing_kernels("undefined reference to `other::pair(int)'", sites) == []


def test_sample_yaml_is_consistent() -> None:
    """The sample's yaml names every kernel that src/kernels.cpp defines, and no other."""
    text = (SAMPLE / "src" / "kernels.cpp").read_text()
    defined = set(re.findall(r"^\S.* (\w+)\(.*\) \{$", text, re.M)) | set(re.findall(r"^void (\w+)\(", text, re.M))
    assert {"softsign_meta", "softsign_out", "scale_add_meta", "scale_add_out", "topk_abs_meta"} <= defined
    assert "TORCH_LIBRARY_IMPL" not in text


def test_setuptools_keys() -> None:
    from vtgen_build.setuptools_hook import ConfigError, read_settings

    base = {"native-functions": "n.yaml", "derivatives": "d.yaml", "output-dir": "src/p/_gen"}
    settings = read_settings({**base, "register-backends": ["Meta", "CPU"], "fake-module": "p._fake"})
    assert settings.register_backends == ("CPU", "Meta") and settings.fake_module == "p._fake"
    text = '[tool.vtgen_build]\nnative-functions = "n.yaml"\nregister-backends = ["CPUU"]\n'
    with pytest.raises(
        ConfigError, match=r"pyproject.toml:3: error: .*unknown dispatch key 'CPUU'; did you mean 'CPU'\?"
    ):
        read_settings({**base, "register-backends": ["CPUU"]}, text=text)


# -- issue 35, item 6: check compiles the registrations ------------------------------------------
CHECKED = (
    LERP_TO
    + """\
    SparseCPU: lerp_sparse
- func: other(Tensor self) -> Tensor
  dispatch:
    XPU, MPS, PrivateUse1: other_kernel
- func: f(Tensor self) -> Tensor
  dispatch:
    CPU: k
- func: g(Tensor self) -> (Tensor, Tensor)
  dispatch:
    CPU: k
"""
)


def test_stub_dispatch_keys_cover_every_key() -> None:
    from vtgen_build.check.run import STUB_INCLUDE
    from vtgen_build.model.native import DISPATCH_KEYS

    text = (STUB_INCLUDE / "c10/core/DispatchKeySet.h").read_text()
    enum = re.search(r"enum class DispatchKey : uint16_t \{(.*?)\};", text, re.S)
    assert enum is not None
    assert {k.strip() for k in re.sub(r"//.*", "", enum.group(1)).split(",")} >= DISPATCH_KEYS


@pytest.mark.slow
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_check_compiles_the_registrations(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    """Registrations of every kind compile against the stubs; one that cannot (`k` declared for f's
    signature, registered for g's) fails check at its yaml line, where before check never compiled it."""
    native, derivatives = tmp_yaml("nf.yaml", CHECKED), tmp_yaml("d.yaml", "")
    result = run_cli("check", "--native-functions", native, "--derivatives", derivatives, "--namespace", "lib",
                     "--shards", "1", "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.code == 1, result.out + result.err[-3000:]
    assert re.search(rf"^{re.escape(native)}:19:\d+: error: invalid .static_cast.", result.err, re.M), result.err
    for key in ("Meta", "SparseCPU", "XPU", "MPS", "PrivateUse1"):
        assert f"Register{key}.cpp: ok" in result.err + result.out, key
    assert "FAILED, 7 errors in RegisterCPU.cpp" in result.err + result.out
