"""The setuptools hook: ``[tool.vtgen_build]`` read strictly, and ``build``/``sdist`` of the fixture project.

The configuration tests are quick.  The build tests run the fixture (``tests/packages/setuptools_ops``)
through pip *without* build isolation, so they use this checkout's vtgen_build and need its
``setuptools.finalize_distribution_options`` entry point registered (``pip install -e .``);
``tests/test_pip.py`` does the same with isolation on, from a wheel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from vtgen_build.setuptools_hook import (
    ConfigError,
    Settings,
    build_release,
    check_command,
    load_settings,
    read_settings,
    shard_count,
)

from .conftest import CliRunner

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "packages" / "setuptools_ops"

_MINIMAL = {"native-functions": "n.yaml", "derivatives": "d.yaml", "output-dir": "src/p/_gen"}


def test_fixture_settings() -> None:
    settings = load_settings(FIXTURE)
    assert settings == Settings(
        native_functions="ops/native_functions.yaml",
        derivatives="ops/derivatives.yaml",
        output_dir="src/setuptools_ops/_autograd",
        tags="ops/tags.yaml",
        namespace="setuptools_ops",
        shards=2,
        manual_headers=("setuptools_ops/helpers.h",),
        include_dirs=("include",),
        using_namespaces=("setuptools_ops::autograd_helpers",),
        check=True,
        python_api="src/setuptools_ops/ops",
        python_autograd="src/setuptools_ops/_py_autograd.py",
        python_formulas="src/setuptools_ops/formulas.py",
    )


def test_default_shards_follow_the_op_count(tmp_path: Path) -> None:
    """No ``shards``: one per 32 entries of native-functions (CMake's vtgen_generate() rule)."""
    settings = read_settings(_MINIMAL)
    assert settings.shards is None
    for entries, shards in ((3, 1), (32, 1), (33, 2), (1000, 10)):
        (tmp_path / "n.yaml").write_text("".join(f"- func: op{i}(Tensor self) -> Tensor\n" for i in range(entries)))
        assert shard_count(settings, tmp_path) == shards
    assert shard_count(read_settings({**_MINIMAL, "shards": 7}), tmp_path) == 7
    (tmp_path / "n.yaml").unlink()
    with pytest.raises(ConfigError, match=r"'native-functions': cannot read 'n\.yaml'"):
        shard_count(settings, tmp_path)


def test_no_table_is_not_ours(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.other]\nvtgen_build = 1\n')
    assert load_settings(tmp_path) is None
    assert load_settings(tmp_path / "missing") is None


def test_unknown_key_did_you_mean_with_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.vtgen_build]\nnative-functions = "n.yaml"\nderivatives = "d.yaml"\n'
        'output-dir = "src/p/_gen"\nshard = 2\n'
    )
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert str(info.value) == "pyproject.toml:8: error: [tool.vtgen_build] unknown key 'shard'; did you mean 'shards'?"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"shards": 0}, "'shards' must be a positive integer, got 0"),
        ({"shards": True}, "'shards' must be a positive integer"),
        ({"check": "yes"}, "'check' must be true or false"),
        ({"manual-headers": [1]}, "'manual-headers' must be a list of strings"),
        ({"namespace": "a::b"}, "'namespace' must be an identifier"),
        ({"using-namespaces": ["a b"]}, "'using-namespaces': 'a b' is not a C++ namespace name"),
        # one rule with the CLI's --using-namespace (base/names.py): a C++ keyword is no namespace
        ({"using-namespaces": ["helpers::delete"]}, "'helpers::delete' is not a C++ namespace name ('delete' is a C++"),
        ({"namespace": "class"}, "'namespace' must be an identifier"),
        ({"fake-module": "p.-fake"}, "'fake-module': 'p.-fake' is not a Python module name (e.g. mypkg._fake)"),
        ({"tags": ""}, "'tags' must be a non-empty string"),
        ({"derivatives": "../d.yaml"}, "'derivatives': '../d.yaml' must be relative to the project"),
        ({"output-dir": "/abs"}, "'output-dir': '/abs' must be relative to the project"),
        ({"Derivatives": "d.yaml"}, "unknown key 'Derivatives'; did you mean 'derivatives'?"),
        ({"torch-version": "1.13"}, "'torch-version': PyTorch 1.13 is older than every supported release"),
        ({"torch-version": "latest"}, "'torch-version': 'latest' is not a PyTorch version"),
        (
            {"manual-headers": ["../../etc/passwd"]},
            "'manual-headers': '../../etc/passwd' must be relative to an include directory, without '..'",
        ),
        ({"manual-headers": ["/usr/include/h.h"]}, "'manual-headers': '/usr/include/h.h' must be relative"),
        ({"manual-headers": ['a"b.h']}, """'manual-headers': 'a"b.h' is not a header name"""),
        ({"python-formulas": "src/p/f.py"}, "'python-formulas' applies to 'python-autograd' only"),
        (
            {"python-autograd": "src/p/_autograd.py", "python-formulas": "src/q/f.py"},
            "'python-formulas' 'src/q/f.py' must sit beside 'python-autograd' 'src/p/_autograd.py'",
        ),
        ({"python-autograd": "../p/_autograd.py"}, "'python-autograd': '../p/_autograd.py' must be relative"),
    ],
)
def test_bad_values(extra: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        read_settings({**_MINIMAL, **extra})
    assert message in str(info.value)


@pytest.mark.parametrize("missing", ["native-functions", "derivatives", "output-dir"])
def test_required_keys(missing: str) -> None:
    table = {k: v for k, v in _MINIMAL.items() if k != missing}
    with pytest.raises(ConfigError, match=f"'{missing}' is required"):
        read_settings(table)


def test_the_target_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """torch-version, else the torch of the build environment (from its metadata), else 2.13; check gets it too."""
    import importlib.metadata

    assert build_release(read_settings({**_MINIMAL, "torch-version": "2.14.1"})) == "2.14"
    versions = {"torch": "2.14.0+cpu"}

    def version(name: str) -> str:
        if name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    settings = read_settings(_MINIMAL)
    assert build_release(settings) == "2.14"
    (tmp_path / "n.yaml").write_text("- func: op(Tensor self) -> Tensor\n")  # the default shards count it
    command = check_command(settings, tmp_path)
    assert command is not None and command[command.index("--torch-version") + 1] == "2.14"
    assert command[command.index("--shards") + 1] == "1"
    versions.clear()  # no torch where the build runs: the stub build
    assert build_release(settings) == "2.13"


def test_a_single_string_is_a_list() -> None:
    settings = read_settings({**_MINIMAL, "manual-headers": "p/h.h", "include-dirs": "include"})
    assert settings.manual_headers == ("p/h.h",) and settings.include_dirs == ("include",)


def test_bad_manual_header_is_reported_at_its_pyproject_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.vtgen_build]\nnative-functions = "n.yaml"\nderivatives = "d.yaml"\n'
        'output-dir = "src/p/_gen"\nmanual-headers = [\'a"b.h\']\n'
    )
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert str(info.value).startswith("pyproject.toml:8: error: [tool.vtgen_build] 'manual-headers': 'a\"b.h' is not")


def test_output_dir_outside_the_packages_is_reported_at_its_line(tmp_path: Path) -> None:
    from setuptools import Distribution

    from vtgen_build.setuptools_hook import build_vtgen

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.vtgen_build]\nnative-functions = "n.yaml"\nderivatives = "d.yaml"\n'
        'output-dir = "elsewhere/_gen"\n'
    )
    dist = Distribution({"name": "x", "packages": ["p"], "package_dir": {"": "src"}, "src_root": str(tmp_path)})
    dist.vtgen_build_settings = load_settings(tmp_path)
    command = build_vtgen(dist)
    command.ensure_finalized()
    with pytest.raises(ConfigError) as info:
        command.get_outputs()
    assert str(info.value) == (
        "pyproject.toml:7: error: [tool.vtgen_build] 'output-dir' 'elsewhere/_gen' is not inside any of the "
        "packages (p)"
    )


def test_setuptools_finds_the_hook_through_its_entry_point() -> None:
    import importlib.metadata

    from vtgen_build.setuptools_hook import finalize_distribution_options

    group = importlib.metadata.entry_points(group="setuptools.finalize_distribution_options")
    (ours,) = [e for e in group if e.name == "vtgen_build"]
    assert ours.load() is finalize_distribution_options  # what setuptools calls for every distribution


# ---------------------------------------------------------------------------------------------
# Building the fixture (no isolation: this environment's setuptools and vtgen_build)
# ---------------------------------------------------------------------------------------------


def _hook_registered(cwd: Path) -> bool:
    """Whether setuptools, run from ``cwd`` by this interpreter, would load our hook (asked in a
    subprocess: a stale ``*.egg-info`` next to this checkout must not answer for the installed metadata)."""
    code = (
        "from importlib import metadata; import sys\n"
        "sys.exit(not any(e.value.startswith('vtgen_build.') for e in "
        "metadata.entry_points(group='setuptools.finalize_distribution_options')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env).returncode == 0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    if not _hook_registered(tmp_path):
        pytest.skip("vtgen_build's setuptools entry point is not installed here: run `pip install -e .` again")
    project = Path(shutil.copytree(FIXTURE, tmp_path / "setuptools_ops"))
    pyproject = project / "pyproject.toml"  # about generation and packaging: no compile check here
    pyproject.write_text(pyproject.read_text().replace("\ncheck = true\n", "\ncheck = false\n"))
    return project


def _pip(project: Path, *args: str) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            *args,
            "--no-build-isolation",
            "--no-deps",
            "-v",
            "--disable-pip-version-check",
            str(project),
        ],
        cwd=project.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc.returncode, proc.stdout


GENERATED = {
    "Functions.h",
    "FunctionsBase.h",
    "RegisterSchema.cpp",
    *(f"{kind}_{k}.cpp" for kind in ("VariableType", "Functions", "ADInplaceOrViewType") for k in range(2)),
    *(f"Functions_{k}.h" for k in range(2)),
    "vtgen_decls/Functions.inc",
    "vtgen_decls/RedispatchFunctions.inc",
    "vtgen_decls/TensorMethods.inc",
}


@pytest.mark.slow
def test_wheel_and_sdist(project: Path) -> None:
    code, log = _pip(project, "wheel", "-w", str(project / "dist"))
    assert code == 0, log
    assert "running build_vtgen" in log and "14 files written" in log, log
    (wheel,) = (project / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    prefix = "setuptools_ops/_autograd/"
    assert {n[len(prefix) :] for n in names if n.startswith(prefix)} == GENERATED, names
    assert {"setuptools_ops/ops/__init__.py", "setuptools_ops/ops/py.typed"} <= names, names  # python-api
    assert {"setuptools_ops/_py_autograd.py", "setuptools_ops/formulas.py"} <= names, names  # python-autograd
    with zipfile.ZipFile(wheel) as archive:
        module = archive.read("setuptools_ops/_py_autograd.py").decode()
    assert "_formulas.cube_backward(" in module and "from . import formulas as _formulas" in module
    assert not (project / "src" / "setuptools_ops" / "_py_autograd.py").exists()
    assert not (project / "src" / "setuptools_ops" / "_autograd").exists()  # a regular build writes in build/

    # Again: the generator finds nothing changed.
    code, log = _pip(project, "wheel", "-w", str(project / "dist"))
    assert code == 0, log
    assert "vtgen-build: up to date (0 files written)" in log, log

    # The sdist carries the inputs and the manual header, never generated files (even after an
    # editable build left some in the source tree).
    (project / "src" / "setuptools_ops" / "_autograd").mkdir()
    (project / "src" / "setuptools_ops" / "_autograd" / "Functions.h").write_text("// stale\n")
    proc = subprocess.run(
        [sys.executable, "-c", "from setuptools.build_meta import build_sdist; print(build_sdist('sdist'))"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout
    (sdist,) = (project / "sdist").glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        members = {m.split("/", 1)[1] for m in archive.getnames() if "/" in m}
    assert {"ops/native_functions.yaml", "ops/derivatives.yaml", "ops/tags.yaml"} <= members, members
    assert "include/setuptools_ops/helpers.h" in members, members
    assert not [m for m in members if "_autograd" in m or "/ops/" in m], members


@pytest.mark.slow
def test_broken_formula_fails_the_build(project: Path) -> None:
    derivatives = project / "ops" / "derivatives.yaml"
    text = derivatives.read_text()
    line = text.splitlines().index("  end: scaled(grad, weight.toDouble())") + 1
    derivatives.write_text(text.replace("  end: scaled", "  ende: scaled"))
    code, log = _pip(project, "wheel", "-w", str(project / "dist"))
    assert code != 0, log
    assert f"ops/derivatives.yaml:{line}: error: 'ende' is not an argument or output of 'lerp_to'" in log, log


def test_readme_ci_job() -> None:
    """The README's GitHub Actions job is valid YAML and runs the check on the checkout."""
    import yaml

    readme = (ROOT / "README.md").read_text()
    (block,) = [b.split("```", 1)[0] for b in readme.split("```yaml\n")[1:] if "\njobs:" in b]
    workflow = yaml.safe_load(block)
    (job,) = workflow["jobs"].values()
    runs = [line for step in job["steps"] if "run" in step for line in step["run"].replace("\\\n", " ").splitlines()]
    checks = [line for line in runs if line.startswith("vtgen-build check --pytorch-root . ")]
    assert checks and all("--format github" in line for line in checks), runs
    assert any("--changed-since" in line for line in runs), runs  # a PR checks the ops it changed


@pytest.mark.slow
def test_the_build_check_compiles_the_files_the_build_ships_generated_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``check = true`` compiles exactly the translation units the build generated, where it generated
    them (the files it ships), and nothing is generated a second time; a shipped file that does not
    compile fails the build (a check of a copy generated elsewhere would pass)."""
    from setuptools.dist import Distribution

    from vtgen_build import setuptools_hook
    from vtgen_build.check import run as check_run
    from vtgen_build.engine.generate import manifest_files

    project = Path(shutil.copytree(FIXTURE, tmp_path / "project"))
    generated: list[str] = []
    compiled: list[Path] = []
    broken: list[Path] = []  # a generated file to break once the build generated it
    real_generate, real_compile = setuptools_hook.generate, check_run.compile_units

    def generate(*args: object, **kwargs: object) -> object:
        generated.append("build")
        result = real_generate(*args, **kwargs)  # type: ignore[arg-type]
        for unit in broken:
            unit.write_text(unit.read_text() + "\n#error the shipped file\n")
        return result

    def compile_units(units: list[object], *args: object) -> object:
        compiled.extend(u.source for u in units)  # type: ignore[attr-defined]
        return real_compile(units, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(setuptools_hook, "generate", generate)
    monkeypatch.setattr(check_run, "generate", lambda *a, **k: generated.append("check"))
    monkeypatch.setattr(check_run, "compile_units", compile_units)

    def build() -> None:
        dist = Distribution({"name": "setuptools_ops", "packages": ["setuptools_ops"]})
        dist.vtgen_build_settings = load_settings(project)  # type: ignore[attr-defined]
        command = setuptools_hook.build_vtgen(dist)
        command.initialize_options()
        command.editable_mode = True  # generates in place: no build directory needed
        command.settings, command.root = dist.vtgen_build_settings, project  # type: ignore[attr-defined]
        command.run()

    build()
    out = project / "src" / "setuptools_ops" / "_autograd"
    shipped = sorted(out / name for name in manifest_files(out) or () if name.endswith(".cpp"))
    assert generated == ["build"] and shipped and sorted(compiled) == shipped
    assert "OK, 0 errors" in capsys.readouterr().out

    (out / ".vtgen-check-ok").unlink()  # the check runs again on the next build
    broken.append(out / "VariableType_0.cpp")
    with pytest.raises(Exception, match="vtgen-build check failed"):
        build()
    assert "the shipped file" in capsys.readouterr().err


def _count_loads_and_plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each load of the yaml (``model.load_model``) and each plan of every op (``plan.kernel.build_plan``), as
    they happen, wherever they are called from (both look their helpers up in their own modules)."""
    import vtgen_build.model as model
    import vtgen_build.plan.kernel as kernel

    seen: list[str] = []
    real_model, real_infos = model.build_model, kernel.build_infos

    def build_model(*args: Any, **kwargs: Any) -> Any:
        seen.append("load")
        return real_model(*args, **kwargs)

    def build_infos(*args: Any, **kwargs: Any) -> Any:
        seen.append("plan")
        return real_infos(*args, **kwargs)

    monkeypatch.setattr(model, "build_model", build_model)
    monkeypatch.setattr(kernel, "build_infos", build_infos)
    return seen


def test_a_build_loads_and_plans_the_yaml_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels, the typed Python API and the Python autograd of one clean build come from one load and one
    plan of the yaml (the generate run's); an up-to-date rebuild, both Python outputs as their records say,
    loads and plans nothing; with one of them edited, once for both writers."""
    from dataclasses import replace

    from setuptools.dist import Distribution

    from vtgen_build import setuptools_hook

    project = Path(shutil.copytree(FIXTURE, tmp_path / "project"))
    settings = replace(load_settings(project), check=False)
    seen = _count_loads_and_plans(monkeypatch)
    dist = Distribution({"name": "setuptools_ops", "packages": ["setuptools_ops"]})
    dist.vtgen_build_settings = settings  # type: ignore[attr-defined]
    command = setuptools_hook.build_vtgen(dist)
    command.initialize_options()
    command.editable_mode = True  # generates in place: no build directory needed
    command.settings, command.root = settings, project
    command.run()
    assert (project / "src" / "setuptools_ops" / "_py_autograd.py").is_file()
    assert (project / "src" / "setuptools_ops" / "ops" / "__init__.py").is_file()
    assert seen == ["load", "plan"]
    seen.clear()
    command.run()  # up to date: the generate run read no yaml, and neither writer needs it
    assert seen == []
    module = project / "src" / "setuptools_ops" / "_py_autograd.py"
    written = module.read_text()
    module.write_text(written + "# edited\n")
    command.run()  # the module is not what the last build wrote: both writers share one load and plan
    assert seen == ["load", "plan"] and module.read_text() == written


def test_generate_with_the_python_outputs_loads_and_plans_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: CliRunner
) -> None:
    """``generate --python-api --python-autograd``: the Python writers take the run's plan."""
    pkg = ROOT / "tests" / "packages" / "py_autograd"
    formulas = tmp_path / "pyag" / "formulas.py"
    formulas.parent.mkdir()
    shutil.copy(pkg / "pyag" / "formulas.py", formulas)
    seen = _count_loads_and_plans(monkeypatch)
    out = tmp_path / "pyag"
    args = ["generate", "--native-functions", str(pkg / "native_functions.yaml"), "--derivatives",
            str(pkg / "derivatives.yaml"), "--namespace", "pyag", "--out", str(tmp_path / "out"),
            "--python-api", str(out / "ops"), "--python-autograd", str(out / "_autograd.py"),
            "--python-formulas", str(formulas)]  # fmt: skip
    assert run_cli(*args).code == 0
    assert (tmp_path / "pyag" / "_autograd.py").is_file() and (tmp_path / "pyag" / "ops" / "__init__.py").is_file()
    assert seen == ["load", "plan"]


def test_an_incremental_generate_plans_the_python_outputs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: CliRunner
) -> None:
    """After an edit of derivatives.yaml, ``generate`` re-plans the edited ops for the C++ files and plans every
    op once more for both Python writers (which render every op): one load of the yaml, not one per writer;
    an up-to-date run whose Python module is gone loads it once too."""
    pkg = Path(shutil.copytree(ROOT / "tests" / "packages" / "py_autograd", tmp_path / "pkg"))
    out = pkg / "pyag"
    args = ["generate", "--native-functions", str(pkg / "native_functions.yaml"), "--derivatives",
            str(pkg / "derivatives.yaml"), "--namespace", "pyag", "--out", str(tmp_path / "out"),
            "--python-api", str(out / "ops"), "--python-autograd", str(out / "_autograd.py"),
            "--python-formulas", str(out / "formulas.py")]  # fmt: skip
    assert run_cli(*args).code == 0
    derivatives = pkg / "derivatives.yaml"
    old = "self: handle_r_to_c(self.scalar_type(), grad)\n"
    derivatives.write_text(derivatives.read_text().replace(old, "self: handle_r_to_c(self.scalar_type(), -grad)\n"))
    seen = _count_loads_and_plans(monkeypatch)
    edited = run_cli(*args)
    assert edited.code == 0 and "re-planned" in edited.out, edited.out + edited.err
    assert "-grad" in (out / "_autograd.py").read_text()
    assert seen == ["plan", "load", "plan"]  # the edited ops; then every op, once for both writers
    (out / "_autograd.py").unlink()
    (tmp_path / "out" / ".vtgen-quick").unlink(missing_ok=True)  # past the no-op record, to generate's own check
    seen.clear()
    again = run_cli(*args)
    assert again.code == 0 and (out / "_autograd.py").is_file(), again.out + again.err
    assert seen == ["load", "plan"]


def test_an_up_to_date_generate_plans_nothing_for_an_intact_python_autograd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_cli: CliRunner
) -> None:
    """Past the no-op record (the full command line, as after a touched input), an up-to-date ``generate
    --python-autograd`` whose module is what its last run wrote, from the same formulas module, neither loads
    nor plans the yaml; an edited formulas module, a hand-edited module or a damaged record each does, once."""
    from vtgen_build.engine.python_api import API_RECORD
    from vtgen_build.engine.python_autograd import AUTOGRAD_RECORD

    pkg = Path(shutil.copytree(ROOT / "tests" / "packages" / "py_autograd", tmp_path / "pkg"))
    out, module, formulas = pkg / "pyag", pkg / "pyag" / "_autograd.py", pkg / "pyag" / "formulas.py"
    args = ["generate", "--native-functions", str(pkg / "native_functions.yaml"), "--derivatives",
            str(pkg / "derivatives.yaml"), "--namespace", "pyag", "--out", str(tmp_path / "out"),
            "--python-api", str(out / "ops"), "--python-autograd", str(module),
            "--python-formulas", str(formulas)]  # fmt: skip
    assert run_cli(*args).code == 0
    written = module.read_text()
    seen = _count_loads_and_plans(monkeypatch)
    assert run_cli(*args).code == 0 and module.read_text() == written
    assert seen == []  # the typed API's record and the module's both verified: no yaml read
    record = tmp_path / "out" / AUTOGRAD_RECORD
    for damage in (
        lambda: formulas.write_text(formulas.read_text() + "\n\ndef an_added_helper(x):\n    return x\n"),
        lambda: module.write_text(written + "# edited\n"),
        lambda: record.write_bytes(record.read_bytes()[:-1] + b"!"),
    ):
        damage()
        seen.clear()
        assert run_cli(*args).code == 0 and module.read_text() == written
        assert seen == ["load", "plan"]
        seen.clear()
        assert run_cli(*args).code == 0 and seen == []  # recorded again
    # a run that regenerates for an edited yaml and stops before the Python outputs: their records are of
    # other inputs (what is written into --out, the manifest included, tells them apart)
    api, api_record = out / "ops" / "__init__.py", tmp_path / "out" / API_RECORD
    old = [(f, f.read_bytes()) for f in (module, record, api, api_record)]
    derivatives = pkg / "derivatives.yaml"
    formula = "self: handle_r_to_c(self.scalar_type(), grad)\n"
    derivatives.write_text(derivatives.read_text().replace(formula, "self: handle_r_to_c(self.scalar_type(), -grad)\n"))
    with (pkg / "native_functions.yaml").open("a") as native:
        native.write("\n- func: an_added_op(Tensor self) -> Tensor\n")
    assert run_cli(*args).code == 0 and "-grad" in module.read_text() and "def an_added_op(" in api.read_text()
    for path, data in old:
        path.write_bytes(data)
    seen.clear()
    assert run_cli(*args).code == 0 and "-grad" in module.read_text() and "def an_added_op(" in api.read_text()
    assert seen == ["load", "plan"]
