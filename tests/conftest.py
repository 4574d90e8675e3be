"""Shared fixtures: the real PyTorch yaml files, small yaml files written per test, and a CLI runner."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import Phase
from hypothesis import settings as hypothesis_settings

from vtgen_build.cli import commands as cli
from vtgen_build.engine.generate import install_incremental_failure_hook
from vtgen_build.model import Inputs, Model, load_model

if TYPE_CHECKING:
    from tests.edited_checkout import SharedEdits

# Property tests: "ci" (the default) draws the same examples on every run, keeps no example
# database and does not shrink (a failure is reported as drawn, at once), so a failure reproduces
# from the test name alone; VTGEN_HYPOTHESIS=explore draws new random examples (10x as many where a
# test does not fix its count), shrinks them and remembers the failing ones.
hypothesis_settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True, phases=[Phase.explicit, Phase.generate]
)
hypothesis_settings.register_profile("explore", derandomize=False, max_examples=2000, deadline=None)
hypothesis_settings.load_profile(os.environ.get("VTGEN_HYPOTHESIS", "ci"))


def strict_incremental(exc: Exception) -> None:
    """The suite's incremental-failure hook (``engine.generate``): a bug in the incremental path raises,
    never becomes a full run with a notice.  Installed in every test process and by tests/faulty.py."""
    raise exc


install_incremental_failure_hook(strict_incremental)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_project"
OP_LIBRARY = ROOT / "tests" / "packages" / "op_library"


def default_ctrl_c() -> None:
    """``preexec_fn`` of a child a test sends SIGINT to: Ctrl-C's default action, even where the suite
    itself runs with SIGINT ignored (a shell starts background jobs that way, and Python keeps an
    ignored SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def copy_package_source(dest: Path) -> Path:
    """Copy what building vtgen_build's wheel reads into ``dest`` (a build writes build/ and
    *.egg-info beside its sources, so tests build from a copy); returns ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("vtgen_build", "cmake"):
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def sample_inputs(root: Path = SAMPLE, derivatives: Path | None = None) -> list[str]:
    """CLI options for the sample project's yaml (or a copy of it under ``root``) and its helper header."""
    return [
        "--native-functions",
        str(root / "native_functions.yaml"),
        "--derivatives",
        str(derivatives or root / "derivatives.yaml"),
        "--tags",
        str(root / "tags.yaml"),
        "--namespace",
        "vtsample",
        "--manual-header",
        "vtsample/helpers.h",
        "--using-namespace",
        "torch::autograd::generated::details",
    ]


# What pip installs into isolated build environments: the sample needs torch to build.
BUILD_REQUIREMENTS = ["setuptools>=68", "scikit-build-core>=0.10", "pyyaml>=6", "torch==2.13.0"]


def clean_env() -> dict[str, str]:
    """The environment without PYTHON*/PIP_* variables, a CMake generator or make flags."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
    env.pop("CMAKE_GENERATOR", None)
    env.pop("MAKEFLAGS", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run_clean(args: list[str | Path], cwd: Path, **extra_env: str) -> tuple[int, str]:
    """Run ``args`` in clean_env() (plus ``extra_env``): exit code and output (stdout and stderr together)."""
    env = {**clean_env(), **extra_env}
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return proc.returncode, proc.stdout


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vtgen_build's wheel (built from a copy of this checkout) and the other build requirements,
    downloaded once per session (from pip's cache or the machine's wheel directory when it has them)."""
    if shutil.which("cmake") is None:
        pytest.skip("cmake is not on PATH")
    tmp = tmp_path_factory.mktemp("wheelhouse")
    house = tmp / "wheels"
    src = copy_package_source(tmp / "src")
    code, log = run_clean(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", house, src], tmp
    )
    assert code == 0, log
    code, log = run_clean([sys.executable, "-m", "pip", "download", "-q", "-d", house, *BUILD_REQUIREMENTS], tmp)
    if code != 0:
        pytest.skip(f"cannot download the build requirements (offline?):\n{log[-2000:]}")
    return house


def nested_venv(venv: Path, cwd: Path, parents: Sequence[str] | None = None) -> Path:
    """A new venv at ``venv`` that sees this interpreter's packages (torch, scikit-build-core, PyYAML);
    returns its python.  It has no pip of its own (tests run ``pip --python`` of this interpreter).
    ``--system-site-packages`` reaches the base interpreter's packages only: when the tests run in a
    venv of their own (the README's command in a fresh venv), that venv's site-packages join through
    a ``.pth`` file -- as plain paths, so the ``.pth`` files in them never run (``parents``: other
    directories than this interpreter's purelib and platlib)."""
    code, log = run_clean([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv], cwd)
    assert code == 0, log
    python = venv / "bin" / "python"
    ours = parents if parents is not None else [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    code, site = run_clean([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd)
    assert code == 0, site
    lines = "".join(f"{p}\n" for p in dict.fromkeys(ours))
    (Path(site.strip().splitlines()[-1]) / "_tests_parent.pth").write_text(lines)
    return python


def install_wheel(python: Path, wheelhouse: Path, name: str, cwd: Path) -> None:
    """Install ``name`` from ``wheelhouse`` into the venv of ``python`` (no index, no dependencies) and
    check that this venv's own copy is what it imports.

    ``--ignore-installed``: the packages the venv sees may hold ``name`` already, and that copy is
    not the wheel under test.  In the tests' own venv it is an editable install, whose dist-info pip
    sees through the plain ``.pth`` path while its import hook (a ``.pth`` line of its own) never
    runs: pip would skip the wheel and the import fail.  Outside a venv the base interpreter's
    editable install is importable, and would silently be what runs instead of the wheel."""
    pip: list[str | Path] = [sys.executable, "-m", "pip", "--python", python, "install", "-v", "--no-index"]
    code, log = run_clean([*pip, "--no-deps", "--ignore-installed", "--find-links", wheelhouse, name], cwd)
    assert code == 0, log[-6000:]
    where = f"import importlib.metadata as m, {name} as p\nprint(p.__file__)\n"
    where += f"print(m.distribution({name!r}).locate_file(''))"
    code, out = run_clean([python, "-c", where], cwd)
    assert code == 0, f"{log[-3000:]}\n{out}"
    venv = python.parent.parent.resolve()
    for found in out.strip().splitlines()[-2:]:
        assert Path(found).resolve().is_relative_to(venv), f"{name} comes from {found}, not from {venv}:\n{out}"


def copy_sample(dest: Path) -> Path:
    """A copy of sample_project/ at ``dest`` (without build outputs); returns ``dest``."""
    return Path(shutil.copytree(SAMPLE, dest, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info")))


@dataclass(frozen=True)
class TorchTree:
    """A configured CMake build of the op library: a copy of the sample plus two view ops."""

    source: Path
    binary: Path

    @property
    def derivatives(self) -> Path:
        return self.source / "derivatives.yaml"

    @property
    def library(self) -> Path:
        return self.binary / "_vtsample_ops.so"

    def build(self) -> tuple[int, str]:
        """Build what the source's current state needs (Ninja rebuilds only what changed)."""
        return run_clean(["cmake", "--build", self.binary, "--parallel", "2"], self.binary)


@pytest.fixture(scope="session")
def torch_tree(tmp_path_factory: pytest.TempPathFactory) -> TorchTree:
    """Ninja, VTSAMPLE_USE_TORCH=ON, one shard, unoptimised (headers precompiled: the default): the
    real op library against the installed torch, shared by tests/test_op_library.py (the views of
    tests/packages/op_library, which are appended to the copy's yaml and kernels) and
    tests/test_sample_runtime.py (wrong formulas).
    Each test builds after its own edits and restores what it changed."""
    pytest.importorskip("torch")
    for tool in ("cmake", "ninja"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not on PATH")
    tmp = tmp_path_factory.mktemp("torch_tree")
    tree = TorchTree(copy_sample(tmp / "sample"), tmp / "build")
    for name in ("native_functions.yaml", "derivatives.yaml"):
        with (tree.source / name).open("a", encoding="utf-8") as f:
            f.write((OP_LIBRARY / f"extra_{name}").read_text(encoding="utf-8"))
    with (tree.source / "src" / "kernels.cpp").open("a", encoding="utf-8") as f:
        f.write("\n" + (OP_LIBRARY / "views.cpp").read_text(encoding="utf-8"))
    code, log = run_clean(
        [
            "cmake",
            "-S",
            tree.source,
            "-B",
            tree.binary,
            "-G",
            "Ninja",
            # No optimisation (-O3 takes a fifth longer to compile): a build type without flags;
            # an empty one would get vtgen_generate()'s default, Release.
            "-DCMAKE_BUILD_TYPE=None",
            "-DVTSAMPLE_USE_TORCH=ON",
            "-DVTSAMPLE_SHARDS=1",
            f"-Dvtgen_build_DIR={ROOT / 'cmake'}",
            f"-Dvtgen_build_PYTHON_EXECUTABLE={sys.executable}",
        ],
        tmp,
    )
    assert code == 0, log
    assert "warning" not in log.lower(), log  # find_package(Torch) made quiet
    return tree


BAD_KERNELS = ROOT / "tests" / "packages" / "bad_kernels"


@pytest.fixture(scope="session")
def bad_kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/packages/bad_kernels/kernels.cpp built against the installed torch, once per session (~15 s):
    an op library whose CPU kernels crash, spin, exit and run out of memory (tests/test_gradcheck_crashes.py)."""
    pytest.importorskip("torch")
    from vtgen_build.check.run import find_compiler
    from vtgen_build.torchlib import locate_torch

    torch = locate_torch()
    library = tmp_path_factory.mktemp("bad_kernels") / "libvtbad.so"
    command = [find_compiler(None), "-std=c++17", "-O0", "-shared", "-fPIC", *torch.compile_flags()]
    command += [str(BAD_KERNELS / "kernels.cpp"), "-o", str(library), *torch.link_flags()]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return library


# CI sets it after ``tools/torch_envs.py`` made the environments: a missing release is then a failure
REQUIRE_RELEASE_ENVS = bool(os.environ.get("VTGEN_REQUIRE_STABLE_MATRIX"))


def release_python(release: str) -> Path | None:
    """The interpreter whose torch is ``release``: this one when its torch is that release (by its
    metadata: nothing imported), else the environment ``tools/torch_envs.py`` keeps for it; None: no
    environment. Under ``REQUIRE_RELEASE_ENVS`` a missing one is made (or its making fails the test)."""
    import importlib.metadata

    if importlib.metadata.version("torch").split("+")[0] == release:
        return Path(sys.executable)
    spec = importlib.util.spec_from_file_location("torch_envs", ROOT / "tools" / "torch_envs.py")
    assert spec is not None and spec.loader is not None
    envs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(envs)
    python = envs.default_root() / f"torch-{release}" / "bin" / "python"
    if python.is_file():
        return Path(python)
    if REQUIRE_RELEASE_ENVS:  # CI: install it (the one-time cost)
        return Path(envs.ensure(release, envs.default_root())[0])
    return None


def release_python_or_skip(release: str) -> Path:
    """``release_python``, the test skipped (never under the CI requirement) when there is none."""
    python = release_python(release)
    if python is None:
        pytest.skip(f"no environment with torch {release} (python tools/torch_envs.py {release} makes one)")
    return python


def installed_torch_dir() -> Path | None:
    """The installed torch package's directory, found without importing torch; None: not installed."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def installed_torch_include(needs: str = "ATen/ATen.h") -> Path:
    """The installed torch's C++ include directory; the test is skipped when torch is not installed or
    its install has no ``needs`` there (a wheel without C++ headers)."""
    torch = installed_torch_dir()
    if torch is None:
        pytest.skip("torch is not installed")
    include = torch / "include"
    if not (include / needs).is_file():
        pytest.skip(f"this torch install has no C++ headers ({include / needs})")
    return include


@dataclass(frozen=True)
class RealYaml:
    """The three files shipped in the installed torchgen package."""

    torchgen_dir: Path
    native_functions: Path
    tags: Path
    derivatives: Path

    @property
    def inputs(self) -> Inputs:
        return Inputs(str(self.native_functions), str(self.derivatives), str(self.tags))


@pytest.fixture(scope="session")
def real_yaml() -> RealYaml:
    """The real native_functions.yaml / tags.yaml / derivatives.yaml, found without importing torch."""
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed: the real yaml files ship in its torchgen package")
    root = Path(next(iter(spec.submodule_search_locations)))
    packaged = root / "packaged"
    found = RealYaml(
        root,
        packaged / "ATen" / "native" / "native_functions.yaml",
        packaged / "ATen" / "native" / "tags.yaml",
        packaged / "autograd" / "derivatives.yaml",
    )
    missing = [p for p in (found.native_functions, found.tags, found.derivatives) if not p.is_file()]
    if missing:
        pytest.skip(f"torchgen at {root} does not ship {', '.join(map(str, missing))}")
    return found


@pytest.fixture(scope="session")
def edited_real_yaml(real_yaml: RealYaml, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedEdits]:
    """ONE copy of the real yaml with every edit of the reach, formulas and norm-samples gradcheck tests, and
    the ``--out`` their gradcheck runs share (tests/edited_checkout.py): one precompiled header and one
    reach map for the three, each op family's unit compiled once, and one warm worker for their runs."""
    from tests.edited_checkout import shared_edits, warm_worker
    from tests.test_gradcheck_formulas import EDITS as FORMULAS
    from tests.test_gradcheck_norm_samples import EDITS as NORMS
    from tests.test_gradcheck_reach import EDITS as REACHED

    shared = shared_edits(real_yaml, tmp_path_factory.mktemp("edited-real-yaml"), (*REACHED, *FORMULAS, *NORMS))
    with warm_worker(shared.out):
        yield shared


@pytest.fixture(scope="session")
def batched_real_yaml(real_yaml: RealYaml, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedEdits]:
    """The batched gradcheck test's copy of the real yaml (value-right, vmap-breaking edits of sin, exp and cos,
    which ``edited_real_yaml`` edits otherwise, and a wrong formula of native_dropout) and the ``--out`` its
    runs share with the shard test's, whose ops it does not edit (and one warm worker for them)."""
    from tests.edited_checkout import shared_edits, warm_worker
    from tests.test_gradcheck_batched import RANDOM_EDIT, VMAP_EDITS

    shared = shared_edits(real_yaml, tmp_path_factory.mktemp("batched-real-yaml"), (*VMAP_EDITS, RANDOM_EDIT))
    with warm_worker(shared.out):
        yield shared


@pytest.fixture(scope="session")
def edited_plain_check(
    edited_real_yaml: SharedEdits, tmp_path_factory: pytest.TempPathFactory
) -> subprocess.CompletedProcess[str]:
    """Plain ``check`` (no --gradcheck) of every op ``edited_real_yaml`` edits: each wrong formula compiles."""
    from tests.edited_checkout import plain_check

    return plain_check(edited_real_yaml, tmp_path_factory.mktemp("edited-plain"))


@pytest.fixture(scope="session")
def real_model(real_yaml: RealYaml) -> Model:
    """Our model of the real files, loaded once per session."""
    return load_model(real_yaml.inputs)


YamlWriter = Callable[[str, str], str]


@pytest.fixture
def tmp_yaml(tmp_path: Path) -> YamlWriter:
    """``tmp_yaml(name, text)`` writes dedented ``text`` to ``tmp_path/name`` and returns the path."""

    def write(name: str, text: str) -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return str(path)

    return write


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


CliRunner = Callable[..., CliResult]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> CliRunner:
    """Run ``vtgen_build.cli.commands.main(args)`` in-process and capture its exit code and output."""

    def run(*args: str) -> CliResult:
        code = cli.main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from the current output")
    if not pluginmanager.has_plugin("xdist"):  # not installed, or -p no:xdist: see _without_xdist below
        group = parser.getgroup("xdist", "without pytest-xdist (not installed): one process")
        # xdist's own spelling; pytest reserves lowercase short options for itself and plugins (_addoption)
        group._addoption("-n", "--numprocesses", dest="numprocesses", default="0", metavar="N",
                        help="accepted (pyproject.toml gives it); without pytest-xdist, one process")  # fmt: skip
        group.addoption("--dist", dest="dist", default="no", metavar="MODE",
                        help="accepted (pyproject.toml's addopts give it); without pytest-xdist, ignored")  # fmt: skip
    if not pluginmanager.has_plugin("timeout"):  # pytest-timeout not installed: the limit cannot be set
        group = parser.getgroup("timeout", "without pytest-timeout (not installed): no per-test limit")
        group.addoption("--timeout", dest="timeout", default=None, metavar="SECONDS",
                        help="accepted (in pyproject.toml's addopts); without pytest-timeout, no limit")  # fmt: skip


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


# --- Running on two workers -------------------------------------------------------------------
# The suite runs under pytest-xdist (`-n 2 --dist loadgroup`, pyproject.toml).  Each worker has
# its own session, so a session fixture is built once per worker that uses it.  To build each
# expensive shared artifact once, every test is put in a group, and a group runs on one worker:
# a test module is a group, and modules that share one of these fixtures are one group.
SHARED_BUILDS = (
    "torch_tree",
    "installed_sample",
    "runtime_results",
    "bad_kernels",
    "edited_real_yaml",  # tests/test_gradcheck_{reach,formulas,norm_samples}.py
    "batched_real_yaml",  # tests/test_gradcheck_{batched,shard}.py
)


def _xdist_groups(items: list[pytest.Item]) -> dict[str, str]:
    """Module name -> group name: the modules joined by the shared builds their tests use."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for item in items:
        module = item.path.stem
        for fixture in SHARED_BUILDS:
            if fixture in getattr(item, "fixturenames", ()):
                a, b = sorted((find(module), find(f"build:{fixture}")))
                parent[b] = a
    return {item.path.stem: find(item.path.stem) for item in items}


def _without_xdist(config: pytest.Config) -> bool:
    return not config.pluginmanager.has_plugin("xdist")


def pytest_configure(config: pytest.Config) -> None:
    if _without_xdist(config):  # the group marks below are xdist's; --strict-markers needs them declared
        config.addinivalue_line("markers", "xdist_group(name): tests run on one worker (pytest-xdist; unused here)")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Say so when an option of pyproject.toml's addopts has no plugin to honour it: ``-n N`` without
    pytest-xdist runs one process, ``--timeout`` without pytest-timeout sets no limit."""
    lines = []
    workers = str(config.getoption("numprocesses", "0"))
    if _without_xdist(config) and workers not in ("0", "None"):
        lines.append(f"pytest-xdist is not installed (or -p no:xdist): -n {workers} runs the tests in one process")
    limit = config.getoption("timeout", None)
    if not config.pluginmanager.has_plugin("timeout") and limit:
        lines.append(f"pytest-timeout is not installed (or -p no:timeout): --timeout={limit} sets no limit")
    return lines


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks into the test ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = _xdist_groups(items)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.path.stem]))
