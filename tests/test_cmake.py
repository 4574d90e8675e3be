"""CMake integration: ``find_package(vtgen_build)`` and ``vtgen_generate()``, configured and built for real.

The consumer is a copy of ``sample_project/`` (two shards, so seven translation units)
built with Ninja and with Unix Makefiles.  What the build did is read from its log:
the custom command's comment says the generator ran, "Building CXX object …" names
each compiled translation unit.  Everything that runs cmake is marked ``slow``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest

import vtgen_build
from vtgen_build.cli import commands as cli
from vtgen_build.engine.generate import default_shards
from vtgen_build.model import Inputs, load_model

from .conftest import SAMPLE, copy_package_source, sample_inputs

ROOT = Path(__file__).resolve().parents[1]
TARGET = "vtsample_autograd"
GENERATED = f"vtgen_build: generating autograd kernels for {TARGET}"
SHARDS = 2
# Every file the generator writes is compiled, in stub mode too (RegisterSchema.cpp and the
# ADInplaceOrViewType shards included).
ALL_TUS = {
    f"{kind}_{k}.cpp" for kind in ("VariableType", "ADInplaceOrViewType", "Functions") for k in range(SHARDS)
} | {"RegisterSchema.cpp"}
_COMPILED = re.compile(r"Building CXX object \S*/(\w+\.cpp)\.o\b")
GENERATORS = {"Ninja": "ninja", "Unix Makefiles": "make"}


def _require(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH")


def _run(args: list[str | Path], cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return proc.returncode, proc.stdout


def _fresh_build(tree: Build) -> tuple[bool, set[str], str]:
    """The first build of ``tree``: whether the generator ran, which units compiled, the log."""
    code, log = _run(["cmake", "--build", tree.binary, "--parallel", "2"], env=tree.env)
    assert code == 0, log
    return GENERATED in log, set(_COMPILED.findall(log)), log


@dataclass
class Build:
    """One configured build tree of a copy of the sample project."""

    source: Path
    binary: Path
    generator: str
    env: dict[str, str]

    @property
    def out_dir(self) -> Path:
        return self.binary / "vtgen" / TARGET

    @property
    def stamp(self) -> Path:
        return self.binary / "CMakeFiles" / f"{TARGET}.dir" / "vtgen.stamp"

    def configure(self, *defines: str) -> str:
        code, log = _run(["cmake", "-S", self.source, "-B", self.binary, "-G", self.generator, *defines], env=self.env)
        assert code == 0, log
        return log

    def build(self, *, ok: bool = True) -> tuple[bool, set[str], str]:
        """Build; return whether the generator ran, the compiled TUs (basenames) and the log."""
        code, log = _run(["cmake", "--build", self.binary, "--parallel", "2"], env=self.env)
        assert (code == 0) == ok, log
        return GENERATED in log, set(_COMPILED.findall(log)), log

    def assert_up_to_date(self) -> None:
        """A further build would do nothing (asked of the build tool itself under Ninja)."""
        if self.generator == "Ninja":
            code, log = _run(["ninja", "-C", self.binary, "-n"], env=self.env)
            assert code == 0 and "no work to do" in log, log
        ran, compiled, log = self.build()
        assert not ran and not compiled, log

    def snapshot(self) -> dict[str, str]:
        return {p.name: p.read_text() for p in self.out_dir.glob("*.cpp")}


def _consumer_env(*, isolated: bool = False) -> dict[str, str]:
    """The environment builds run in.

    By default this checkout comes first on PYTHONPATH, so the interpreter running the
    generator imports the package under test whatever is installed; ``isolated`` drops
    everything that would let Python see packages outside its own environment.
    """
    env = dict(os.environ)
    env.pop("MAKEFLAGS", None)  # a -j from an outer make would change the log format
    env.pop("CMAKE_GENERATOR", None)
    if isolated:
        for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE"):
            env.pop(name, None)
    else:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _copy_sample(dest: Path) -> Path:
    shutil.copytree(SAMPLE, dest, ignore=shutil.ignore_patterns("build", "_skbuild", "*.egg-info", "dist"))
    return dest


def _edit(path: Path, old: str, new: str, *, newer_than: Path) -> None:
    """Replace ``old`` (once) and make sure the file ends up newer than ``newer_than``."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not in {path} exactly once"
    _touch(path, newer_than, text.replace(old, new))


def _touch(path: Path, newer_than: Path, text: str | None = None) -> None:
    """Rewrite (or just touch) ``path`` with an mtime strictly after ``newer_than``'s."""
    floor = newer_than.stat().st_mtime_ns
    while True:
        if text is None:
            os.utime(path)
        else:
            path.write_text(text)
        if path.stat().st_mtime_ns > floor:
            return
        time.sleep(0.01)


def _line_of(path: Path, text: str) -> int:
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, f"{text!r} is on lines {lines} of {path}"
    return lines[0]


@pytest.fixture(params=list(GENERATORS), ids=["ninja", "make"])
def build(request: pytest.FixtureRequest, tmp_path: Path) -> Build:
    """A configured copy of the sample project using this checkout (how the interpreter is
    found without being named is the wheel tests' business)."""
    generator = request.param
    _require("cmake", GENERATORS[generator])
    source = _copy_sample(tmp_path / "sample")
    tree = Build(source, tmp_path / "build", generator, _consumer_env())
    tree.configure(
        f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
        f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        f"-DVTSAMPLE_SHARDS={SHARDS}",
    )
    return tree


@pytest.mark.slow
def test_incremental_build(build: Build) -> None:
    derivatives = build.source / "derivatives.yaml"

    # 1. A fresh build generates and compiles every translation unit, warning-free (the stub
    #    headers included: a declared-only template instantiated for an internal kernel warns).
    ran, compiled, log = _fresh_build(build)
    assert ran, log
    assert compiled == ALL_TUS, log
    assert "warning" not in log.lower(), log
    assert {p.name for p in build.out_dir.glob("*.cpp")} == ALL_TUS

    # 2. Nothing changed: no generator run, no compile.
    build.assert_up_to_date()
    if build.generator == "Ninja":  # what makes step 3 possible there: restat on the generator's edge
        edge = (build.binary / "build.ninja").read_text().split("# Custom command for ")
        (generator_edge,) = [e for e in edge if e.startswith(f"CMakeFiles/{TARGET}.dir/vtgen.stamp")]
        assert "restat = 1" in generator_edge, generator_edge

    # 3. One backward formula edited: the generator reruns and only the translation
    #    units whose text changed are compiled (the Node's Functions shard, plus the
    #    VariableType shard because `auto_element_wise` derives the forward formula from it).
    before = build.snapshot()
    _edit(
        derivatives,
        "self: softsign_backward(grad, self)",
        "self: maybe_multiply(softsign_backward(grad, self), 2)",
        newer_than=build.stamp,
    )
    ran, compiled, log = build.build()
    after = build.snapshot()
    changed = {name for name in after if after[name] != before.get(name)}
    node_shard = {name for name, text in after.items() if "SoftsignBackward0::apply" in text}
    kernel_shards = {n for n, text in after.items() if n.startswith("VariableType_") and "SoftsignBackward0" in text}
    assert ran, log
    assert compiled == changed, log
    assert len(node_shard) == 1 and node_shard <= compiled, log
    assert compiled <= node_shard | kernel_shards and len(compiled) <= 2, log
    build.assert_up_to_date()

    # 4. The yaml touched but not changed: nothing is compiled.
    _touch(derivatives, newer_than=build.stamp)
    _, compiled, log = build.build()
    assert not compiled, log
    build.assert_up_to_date()

    # 5. A mistake in the yaml fails the build with the file and line.
    line = _line_of(derivatives, "tensors: stack_mean_backward")
    _edit(derivatives, "tensors: stack_mean_backward", "tensor: stack_mean_backward", newer_than=build.stamp)
    _, _, log = build.build(ok=False)
    assert f"derivatives.yaml:{line}: error:" in log, log
    assert "'tensor' is not an argument or output of 'stack_mean'" in log, log
    # ... and fixing it builds again, compiling nothing (the output is what it was).
    _edit(derivatives, "tensor: stack_mean_backward", "tensors: stack_mean_backward", newer_than=derivatives)
    ran, compiled, log = build.build()
    assert ran and not compiled, log
    build.assert_up_to_date()


@pytest.mark.slow
def test_yaml_error_fails_the_build(build: Build) -> None:
    """A mistake fails the build at the generator step (before any compile), with the yaml file:line."""
    derivatives = build.source / "derivatives.yaml"
    line = _line_of(derivatives, "tensors: stack_mean_backward")
    _edit(
        derivatives,
        "tensors: stack_mean_backward",
        "tensor: stack_mean_backward",
        newer_than=build.binary / "CMakeCache.txt",
    )
    _, compiled, log = build.build(ok=False)
    assert f"derivatives.yaml:{line}: error: 'tensor' is not an argument or output of 'stack_mean'" in log, log
    assert not compiled and not (build.out_dir / "Functions.h").exists(), log
    # Still failing on the next build: the failed step left no stamp behind.
    _, _, log = build.build(ok=False)
    assert f"derivatives.yaml:{line}: error:" in log, log


@pytest.mark.slow
def test_saved_variable_change_converges(build: Build) -> None:
    """A formula that saves something else changes the Node header too; one build catches up."""
    derivatives = build.source / "derivatives.yaml"
    _fresh_build(build)
    _edit(
        derivatives,
        "self: sum_to_sizes(grad, self.sym_sizes())",
        "self: sum_to_sizes(grad, size)",
        newer_than=build.stamp,
    )
    ran, compiled, log = build.build()
    assert ran and compiled and len(compiled) <= 2, log
    build.assert_up_to_date()


@pytest.mark.slow
def test_use_torch(tmp_path: Path) -> None:
    """USE_TORCH compiles against the installed PyTorch (found through the generator's Python), not the stubs."""
    pytest.importorskip("torch")
    _require("cmake", "ninja")
    tree = Build(_copy_sample(tmp_path / "sample"), tmp_path / "build", "Ninja", _consumer_env())
    log = tree.configure(
        f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
        f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        f"-DVTSAMPLE_SHARDS={SHARDS}",
        "-DVTSAMPLE_USE_TORCH=ON",
    )
    assert "warning" not in log.lower(), log  # find_package(Torch) is quiet (no "kineto not found")
    ninja = (tree.binary / "build.ninja").read_text()
    includes = {line for line in ninja.splitlines() if "INCLUDES =" in line}
    assert includes, log
    for line in includes:
        assert "/torch/include" in line and "stubs/include" not in line, line
    # One shared library, hidden by default, bound to its own symbols, proven complete at link time.
    assert "-fvisibility=hidden" in ninja and "-fvisibility-inlines-hidden" in ninja
    assert "-Wl,-Bsymbolic" in ninja and "-Wl,--no-undefined" in ninja
    assert "libtorch_cpu.so" in ninja and "libc10.so" in ninja
    # a classic op library's own units, as the generator's request names them (plan/request.py)
    assert "RegisterFunctionalize.cpp.o:" in ninja and "AOTIShims.cpp.o:" in ninja
    # The generated code follows the release of the torch found (its major.minor).
    import torch

    release = ".".join(torch.__version__.split(".")[:2])
    assert f"--torch-version {release}" in ninja, [
        line for line in ninja.splitlines() if "vtgen_build generate" in line
    ]
    # Release by default; the generated units (glue calling libtorch) at -O1, after the build
    # type's -O3 so it wins; the author's own kernels keep the build type's flags.
    assert _levels(ninja, "VariableType_0.cpp") == ["-O3", "-O1"], _flags(ninja, "VariableType_0.cpp")
    assert _levels(ninja, "RegisterCPU.cpp") == ["-O3", "-O1"]
    assert _levels(ninja, "kernels.cpp") == ["-O3"]
    # The precompiled header: what every generated unit of a non-aten library includes, no more.
    pch = (tree.binary / "CMakeFiles" / "vtsample_ops.dir" / "cmake_pch.hxx").read_text()
    assert "VariableTypeUtils.h" in pch and "torch/library.h" in pch and "RedispatchFunctions.h" not in pch, pch
    # VTGEN_GENERATED_OPTIMIZATION overrides -O1; empty leaves the build type's flags alone.
    tree.configure("-DVTGEN_GENERATED_OPTIMIZATION=-O2;-fno-math-errno")
    ninja = (tree.binary / "build.ninja").read_text()
    assert _levels(ninja, "VariableType_0.cpp") == ["-O3", "-O2"]
    assert _flags(ninja, "VariableType_0.cpp")[-2:] == ["-O2", "-fno-math-errno"]
    tree.configure("-DVTGEN_GENERATED_OPTIMIZATION=")
    ninja = (tree.binary / "build.ninja").read_text()
    assert _levels(ninja, "VariableType_0.cpp") == ["-O3"]


def _flags(ninja: str, unit: str) -> list[str]:
    """The compile flags of ``unit`` in build.ninja, without the precompiled-header ones."""
    (block,) = [b for b in ninja.split("\nbuild ") if b.split(":", 1)[0].endswith(f"/{unit}.o")]
    (line,) = [line for line in block.splitlines() if line.strip().startswith("FLAGS =")]
    flags = line.split("=", 1)[1].split()
    return flags[: flags.index("-Winvalid-pch")] if "-Winvalid-pch" in flags else flags


def _levels(ninja: str, unit: str) -> list[str]:
    return [flag for flag in _flags(ninja, unit) if flag.startswith("-O")]


# ---------------------------------------------------------------------------------------------
# find_package() from a wheel installed into a fresh virtual environment
# ---------------------------------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


@dataclass(frozen=True)
class Installed:
    """A venv holding only vtgen_build (from a wheel, or an editable install of a copy of this
    checkout) and the machine's pyyaml; ``cmake_dir`` is where its CMake package must be found."""

    venv: Path
    cmake_dir: Path
    editable: bool


@pytest.fixture(scope="module", params=["wheel", "editable"])
def installed(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    _require("cmake", "ninja")
    tmp = tmp_path_factory.mktemp(request.param)
    src = copy_package_source(tmp / "src")
    venv = tmp / "venv"
    code, log = _run([sys.executable, "-m", "venv", "--without-pip", venv])
    assert code == 0, log
    python = _venv_python(venv)
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])[1].strip())
    _copy_pyyaml(site)
    install = [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps"]
    if request.param == "editable":
        # Build isolation on (the venv has no setuptools): pip fetches setuptools, as for a user.
        code, log = _run([*install, "-e", src])
        assert code == 0, log
        return Installed(venv, src / "cmake", editable=True)  # the checkout's cmake/, not a copy
    code, log = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", tmp / "dist", src]
    )
    assert code == 0, log
    code, log = _run([*install, "--no-build-isolation", "--no-index", "--find-links", tmp / "dist", "vtgen_build"])
    assert code == 0, log
    return Installed(venv, site / "vtgen_build" / "cmake", editable=False)


def _copy_pyyaml(site: Path) -> None:
    """Make the machine's pyyaml (package and metadata) part of ``site``, without a package index."""
    dist = metadata.distribution("PyYAML")
    for file in dist.files or ():
        source = Path(str(dist.locate_file(file)))
        if source.is_file() and not file.parts[0].startswith(".."):
            target = site / file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    assert (site / "yaml" / "__init__.py").is_file(), list(site.iterdir())


def _in_venv(venv: Path, code: str) -> str:
    # Not from this checkout: its directory on sys.path would shadow the installed package.
    rc, out = _run([_venv_python(venv), "-c", code], cwd=venv, env=_consumer_env(isolated=True))
    assert rc == 0, out
    return out.strip()


def _cache(binary: Path, name: str) -> str:
    for line in (binary / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split("=", 1)[1]
    raise AssertionError(f"{name} is not in {binary / 'CMakeCache.txt'}")


@pytest.mark.slow
def test_find_package_with_cmakedir(installed: Installed, tmp_path: Path) -> None:
    """`--cmakedir` of the venv's interpreter is all CMake needs; that interpreter runs the generator."""
    venv_python = _venv_python(installed.venv)
    code, cmakedir = _run(
        [venv_python, "-m", "vtgen_build", "--cmakedir"], cwd=installed.venv, env=_consumer_env(isolated=True)
    )
    assert code == 0, cmakedir
    assert Path(cmakedir.strip()) == installed.cmake_dir, cmakedir
    assert (installed.cmake_dir / "vtgen_buildConfig.cmake").is_file()

    tree = Build(_copy_sample(tmp_path / "sample"), tmp_path / "build", "Ninja", _consumer_env(isolated=True))
    # The interpreter is found from where a wheel is installed, not from PATH (whose python3
    # has another copy of vtgen_build, or none); a checkout cannot tell, so it is named.
    named = [f"-Dvtgen_build_PYTHON_EXECUTABLE={venv_python}"] if installed.editable else []
    log = tree.configure(f"-Dvtgen_build_DIR={installed.cmake_dir}", f"-DVTSAMPLE_SHARDS={SHARDS}", *named)
    assert Path(_cache(tree.binary, "vtgen_build_PYTHON_EXECUTABLE")).parent == venv_python.parent, log
    ran, compiled, log = _fresh_build(tree)
    assert ran and compiled == ALL_TUS, log
    tree.assert_up_to_date()


@pytest.mark.slow
@pytest.mark.parametrize("group", ["cmake.root", "cmake.prefix"])
def test_find_package_with_entry_points(installed: Installed, tmp_path: Path, group: str) -> None:
    """The entry points resolved as scikit-build-core resolves them find the package, with no path given."""
    resolved = _in_venv(
        installed.venv,
        (
            "from importlib import metadata, resources\n"
            f"(ep,) = [e for e in metadata.entry_points(group={group!r}) if e.name == 'vtgen_build']\n"
            "print(resources.files(ep.load()))\n"
        ),
    )
    assert Path(resolved) == installed.cmake_dir
    define = "-Dvtgen_build_ROOT=" if group == "cmake.root" else "-DCMAKE_PREFIX_PATH="
    python = _in_venv(installed.venv, "import sys; print(sys.executable)")
    tree = Build(_copy_sample(tmp_path / "sample"), tmp_path / "build", "Ninja", _consumer_env(isolated=True))
    # scikit-build-core also passes the interpreter running the build as Python_EXECUTABLE.
    tree.configure(define + resolved, f"-DPython_EXECUTABLE={python}", f"-DVTSAMPLE_SHARDS={SHARDS}")
    assert Path(_cache(tree.binary, "vtgen_build_DIR")).resolve() == installed.cmake_dir.resolve()
    assert _cache(tree.binary, "vtgen_build_PYTHON_EXECUTABLE") == python


# ---------------------------------------------------------------------------------------------
# Argument checking and find_package() details (configure only)
# ---------------------------------------------------------------------------------------------

_ARGS = "NATIVE_FUNCTIONS native_functions.yaml DERIVATIVES derivatives.yaml"


Configure = Callable[[str], tuple[int, str]]


@pytest.fixture(scope="module")
def configure_only(tmp_path_factory: pytest.TempPathFactory) -> Configure:
    """``configure(body)`` writes a CMakeLists.txt around ``body`` and configures it (compiler checks cached)."""
    _require("cmake", "ninja")
    src = tmp_path_factory.mktemp("args")
    for name in ("native_functions.yaml", "derivatives.yaml"):
        shutil.copy2(SAMPLE / name, src / name)
    binary = src / "build"

    def configure(body: str) -> tuple[int, str]:
        (src / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.20)\nproject(args LANGUAGES CXX)\n" + body + "\n"
        )
        config = ROOT / "cmake"
        python = f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}"
        return _run(
            ["cmake", "-S", src, "-B", binary, "-G", "Ninja", f"-Dvtgen_build_DIR={config}", python],
            env=_consumer_env(),
        )

    return configure


_FIND = "find_package(vtgen_build CONFIG REQUIRED)\nadd_library(lib OBJECT)\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("body", "message"),
    [
        (f"vtgen_generate(lib {_ARGS} SHARD 2)", "vtgen_generate(): unknown argument(s): SHARD 2"),
        (
            f"vtgen_generate(lib {_ARGS} ABI_AUDIT_ALLOW cblas_*)",
            "vtgen_generate(): ABI_AUDIT_ALLOW shapes the ABI audit of a STABLE_ABI library",
        ),
        (f"vtgen_generate(lib {_ARGS} SHARDS)", "vtgen_generate(): missing value for SHARDS"),
        (f'vtgen_generate(lib {_ARGS} OUTPUT_DIR "")', "vtgen_generate(): missing value for OUTPUT_DIR"),
        (f"vtgen_generate(lib {_ARGS} MANUAL_HEADERS)", "vtgen_generate(): missing value for MANUAL_HEADERS"),
        (
            "vtgen_generate(lib NATIVE_FUNCTIONS native_functions.yaml)",
            "vtgen_generate(): DERIVATIVES <file> is required",
        ),
        (f"vtgen_generate({_ARGS})", "vtgen_generate(): the first argument must be the target"),
        ("vtgen_generate(lib)", "vtgen_generate(): NATIVE_FUNCTIONS <file> is required"),
        (f"vtgen_generate(nolib {_ARGS})", "vtgen_generate(): 'nolib' is not a target"),
        (
            f"add_library(iface INTERFACE)\nvtgen_generate(iface {_ARGS})",
            "vtgen_generate(): 'iface' has type INTERFACE_LIBRARY",
        ),
        (f"vtgen_generate(lib {_ARGS} SHARDS 0)", "vtgen_generate(): SHARDS must be a positive integer"),
        (f"vtgen_generate(lib {_ARGS} SHARDS 1025)", "vtgen_generate(): SHARDS must be in 1..1024, got '1025'"),
        (f"vtgen_generate(lib {_ARGS} SHARDS 99999999999999999999)", "vtgen_generate(): SHARDS must be in 1..1024"),
        (f"vtgen_generate(lib {_ARGS} NAMESPACE a::b)", "vtgen_generate(): NAMESPACE must be an identifier"),
        (
            f"vtgen_generate(lib {_ARGS} PRECOMPILE_HEADERS NO_PRECOMPILE_HEADERS)",
            "vtgen_generate(): PRECOMPILE_HEADERS and NO_PRECOMPILE_HEADERS contradict each other",
        ),
        (
            "vtgen_generate(lib NATIVE_FUNCTIONS nf.yaml DERIVATIVES derivatives.yaml)",
            "vtgen_generate(): NATIVE_FUNCTIONS: no such file",
        ),
        (
            f"vtgen_generate(lib {_ARGS})\nvtgen_generate(lib {_ARGS})",
            "vtgen_generate(): 'lib' already has generated kernels",
        ),
    ],
    ids=[
        "unknown-keyword",
        "audit-allow-without-stable-abi",
        "missing-value",
        "empty-value",
        "missing-list",
        "required",
        "no-target",
        "target-only",
        "not-a-target",
        "interface",
        "shards",
        "shards-over",
        "shards-huge",
        "namespace",
        "pch-both",
        "no-file",
        "twice",
    ],
)
def test_vtgen_generate_rejects(configure_only: Configure, body: str, message: str) -> None:
    code, log = configure_only(_FIND + body)
    assert code != 0, log
    assert message in " ".join(log.split()), log


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("NAMESPACE class", "vtgen_generate(): NAMESPACE must be an identifier, got 'class': 'class' is a C++ keyword"),
        (
            "USING_NAMESPACES helpers::delete",
            "vtgen_generate(): USING_NAMESPACES: 'helpers::delete' is not a C++ qualified name ('delete' is a C++",
        ),
        (
            "REGISTER_BACKENDS Mta",
            "vtgen_generate(): REGISTER_BACKENDS: unknown dispatch key 'Mta'; did you mean 'Meta'?",
        ),
        ("FAKE_MODULE my.-fake", "vtgen_generate(): FAKE_MODULE: 'my.-fake' is not a Python module name"),
        (
            "STABLE_ABI 2.10 REGISTER_BACKENDS CPU MANUAL_HEADERS h.h",
            "vtgen_generate(): MANUAL_HEADERS does not apply with STABLE_ABI (no C++ autograd is generated)",
        ),
    ],
    ids=["keyword-namespace", "keyword-using", "dispatch-key", "fake-module", "stable-manual-header"],
)
def test_vtgen_generate_checks_names_by_the_generators_rules(
    configure_only: Configure, args: str, message: str
) -> None:
    """The names vtgen_generate() hands the generator are checked at configure time by the generator's own
    rules (base/names.py, plan/registrations.py), the ones `vtgen-build generate` and the setuptools hook
    apply: a C++ keyword is no namespace here either (the configure-time copy of the rule accepted it)."""
    code, log = configure_only(f"{_FIND}vtgen_generate(lib {_ARGS} {args})")
    assert code != 0, log
    assert message in " ".join(log.split()), log


@pytest.mark.slow
@pytest.mark.parametrize(("entries", "shards"), [(12, 1), (32, 1), (33, 2), (320, 10), (2000, 10), (None, 10)])
def test_default_shards_follow_the_op_count(
    configure_only: Configure, tmp_path: Path, entries: int | None, shards: int
) -> None:
    """No SHARDS: CMake counts the `- func:` entries as vtgen_build.engine.generate.default_shards does
    (None: PyTorch's own yaml), and lists that many units per kind."""
    if entries is None:
        spec = importlib.util.find_spec("torchgen")
        if spec is None or not spec.submodule_search_locations:
            pytest.skip("torch is not installed")
        yaml = Path(next(iter(spec.submodule_search_locations)), "packaged", "ATen", "native", "native_functions.yaml")
    else:
        yaml = tmp_path / "native_functions.yaml"
        yaml.write_text(
            "".join(f"- func: op{i}(Tensor self) -> Tensor\n  variants: function\n" for i in range(entries))
        )
    assert default_shards(yaml.read_text(encoding="utf-8")) == shards
    body = _FIND + (
        f"vtgen_generate(lib NATIVE_FUNCTIONS {yaml} DERIVATIVES derivatives.yaml)\n"
        'get_target_property(sources lib SOURCES)\nmessage(STATUS "sources: ${sources}")\n'
    )
    code, log = configure_only(body)
    assert code == 0, log
    (line,) = [line for line in log.splitlines() if line.startswith("-- sources: ")]
    units = re.findall(r"/(VariableType|ADInplaceOrViewType|Functions)_(\d+)\.cpp", line)
    for kind in ("VariableType", "ADInplaceOrViewType", "Functions"):
        assert sorted(int(k) for name, k in units if name == kind) == list(range(shards)), line


@pytest.mark.slow
@pytest.mark.parametrize(
    ("request_", "ok"),
    [("0.1", True), ("0.1.0", True), ("0.1...<0.3", True), ("0.2", False), ("1.0", False), ("0.0.1...0.0.9", False)],
)
def test_version_file(configure_only: Configure, request_: str, ok: bool) -> None:
    code, log = configure_only(f"find_package(vtgen_build {request_} CONFIG REQUIRED)")
    assert (code == 0) == ok, log


@pytest.mark.slow
def test_found_from_two_directories(configure_only: Configure, tmp_path: Path) -> None:
    """The config runs once per configure (include_guard); a second find_package() elsewhere still works."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "CMakeLists.txt").write_text(
        "find_package(vtgen_build CONFIG REQUIRED)\n"
        "add_library(sublib OBJECT)\n"
        f"vtgen_generate(sublib NATIVE_FUNCTIONS {SAMPLE / 'native_functions.yaml'} "
        f"DERIVATIVES {SAMPLE / 'derivatives.yaml'} SHARDS 1)\n"
        "if(NOT TARGET vtgen::stub_aten OR NOT vtgen_build_PYTHON_EXECUTABLE)\n"
        '  message(FATAL_ERROR "not visible here")\nendif()\n'
    )
    body = _FIND + f"vtgen_generate(lib {_ARGS} SHARDS 1)\nadd_subdirectory({sub} sub)\n"
    code, log = configure_only(body)
    assert code == 0, log


@pytest.mark.slow
def test_named_interpreter_must_have_the_package(configure_only: Configure, tmp_path: Path) -> None:
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    code, log = configure_only(
        f'set(vtgen_build_PYTHON_EXECUTABLE "{fake}")\nfind_package(vtgen_build CONFIG REQUIRED)'
    )
    assert code != 0, log
    assert f"vtgen_build_PYTHON_EXECUTABLE={fake}: cannot import vtgen_build" in " ".join(log.split()), log


# ---------------------------------------------------------------------------------------------
# Quick checks (no cmake)
# ---------------------------------------------------------------------------------------------


def test_cmake_dir_is_the_checkouts_cmake() -> None:
    """In a checkout the CMake package is the top-level cmake/ (a wheel ships it as vtgen_build/cmake)."""
    cmake_dir = Path(vtgen_build.get_cmake_dir())
    assert cmake_dir == ROOT / "cmake"
    assert (cmake_dir / "vtgen_buildConfig.cmake").is_file()
    assert not (ROOT / "vtgen_build" / "cmake").exists()
    version_file = (cmake_dir / "vtgen_buildConfigVersion.cmake").read_text()
    assert "__init__.py" in version_file  # the version is read from the package, not repeated
    config = (cmake_dir / "vtgen_buildConfig.cmake").read_text()
    assert "include_guard(GLOBAL)" in config


def test_cmakedir_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--cmakedir"]) == 0
    assert capsys.readouterr().out.strip() == vtgen_build.get_cmake_dir()


def test_sample_project_inputs_load() -> None:
    """The sample's yaml loads and covers what it claims to (see sample_project/README.md)."""
    model = load_model(
        Inputs(str(SAMPLE / "native_functions.yaml"), str(SAMPLE / "derivatives.yaml"), str(SAMPLE / "tags.yaml"))
    )
    names = {str(f.name) for f in model.native_functions}
    assert {"softsign", "softsign_", "softsign.out", "scale_add", "scale_add_", "scale_add.out"} <= names
    (view,) = [f for f in model.native_functions if str(f.name) == "swap_dims"]  # a view: Tensor(a) -> Tensor(a)
    annotation = view.func.returns[0].annotation
    assert annotation is not None and not annotation.is_write and "a" in annotation.alias_set
    entries = {str(e.schema.name): e for e in model.derivatives}
    assert entries["topk_abs"].output_differentiability == (True, False)
    formulas = [f for e in model.derivatives for s in e.formula_sets for f in s.formulas]
    assert any(f.expression == "auto_element_wise" for f in formulas)
    assert any(f.not_implemented for f in formulas)
    assert any("sym_sizes()" in f.expression for f in formulas)
    types = {str(a.type) for e in model.derivatives for a in e.schema.arguments.all}
    assert {"Tensor[]", "Tensor?", "SymInt[]", "Scalar"} <= types


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("self: sum_to_sizes(grad, self.sym_sizes())", "self: sum_to_sizes(grad, size)"),  # saves `size`, not sizes
        ("self: softsign_backward(grad, self)", "self: softsign_backward(grad, result)"),  # saves the output
        ("output_differentiability: [True, False]", "output_differentiability: [True, True]"),
        ("tensors: stack_mean_backward(grad, dim, tensors.size())", "tensors: stack_mean_backward(grad, 0, 2)"),
    ],
    ids=["saved-sizes", "saved-result", "differentiability", "nothing-saved"],
)
def test_node_header_change_changes_its_translation_units(tmp_path: Path, old: str, new: str) -> None:
    """When a Node's declaration changes (in ``Functions_<k>.h``), the translation units including
    that header change too, so Ninja's restat and Make recompile them in the same build."""
    source = _copy_sample(tmp_path / "sample")
    out = tmp_path / "out"
    args = ["generate", *sample_inputs(source), "--shards", str(SHARDS), "--out", str(out)]

    def snapshot() -> dict[str, str]:
        return {p.relative_to(out).as_posix(): p.read_text(errors="replace") for p in out.rglob("*") if p.is_file()}

    assert cli.main(args) == 0
    before = snapshot()
    derivatives = source / "derivatives.yaml"
    derivatives.write_text(derivatives.read_text().replace(old, new))
    assert cli.main(args) == 0
    after = snapshot()
    changed = {name for name in after if after[name] != before.get(name)}
    headers = {name for name in changed if name.startswith("Functions_") and name.endswith(".h")}
    assert changed - {".vtgen-manifest.json"}, "the edit changed nothing"
    for name, text in after.items():
        if name.endswith(".cpp"):
            included = {h for h in headers if f'#include "{h}"' in text}
            assert not included or name in changed, f"{name} includes the changed {included} but did not change"
