"""setuptools integration: ``[tool.vtgen_build]`` in pyproject.toml makes ``build`` generate the kernels.

Enabled by listing ``vtgen_build`` in ``build-system.requires``: setuptools then calls
:func:`finalize_distribution_options` (a ``setuptools.finalize_distribution_options`` entry
point) for the project; a project without a ``[tool.vtgen_build]`` table is left alone.  With
one, ``build`` gets a first sub-command, ``build_vtgen`` (setuptools' ``SubCommand``
protocol), which

* regular build (``pip install .``, ``pip wheel .``): generates into ``build/temp.*/vtgen/``
  (kept between builds, so an unchanged input is a no-op: ``vtgen-build: up to date``) and
  copies the generated files into the wheel, at the package path ``output-dir`` names;
* editable build (``pip install -e .``, PEP 660): generates in place, into ``output-dir``
  in the source tree, which the editable install then points at;
* both: compile-checks the generated files afterwards when ``check = true``: exactly the files
  the build ships, in its own output directory (``check.check_generated``: nothing is
  generated a second time).

``sdist`` carries the yaml inputs and the manual headers, never the generated files.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from setuptools import Command  # type: ignore[import-untyped]
from setuptools.errors import SetupError  # type: ignore[import-untyped]

from .base.errors import VtgenError, did_you_mean
from .base.names import check_include, identifier_problem, module_name_problem, qualified_name_problem
from .engine.generate import (
    MANIFEST,
    MAX_SHARDS,
    GenerateOptions,
    GenerateResult,
    default_shards,
    generate,
    installed_torch_version,
    manifest_files,
    run_plan,
)
from .model import Inputs
from .plan.request import SETUPTOOLS, BuildRequest, StableTarget, make_request
from .plan.target import DEFAULT_TARGET, Target, resolve_target, supported_release

if TYPE_CHECKING:
    from .engine.planned import RunPlan

__all__ = ["ConfigError", "Settings", "build_release", "finalize_distribution_options", "read_settings", "shard_count"]

TABLE = "tool.vtgen_build"
COMMAND = "build_vtgen"
_CHECK_STAMP = ".vtgen-check-ok"


class ConfigError(SetupError):  # type: ignore[misc]
    """A bad ``[tool.vtgen_build]`` table (printed as ``pyproject.toml:<line>: error: ...``)."""


@dataclass(frozen=True)
class Settings:
    """``[tool.vtgen_build]``; every path is relative to the project root, written with ``/``."""

    native_functions: str
    """``native-functions``: the ``native_functions.yaml`` (required)."""
    derivatives: str
    """``derivatives``: the ``derivatives.yaml`` (required)."""
    output_dir: str
    """``output-dir``: where the generated files live, inside one of the project's packages
    (e.g. ``src/mypkg/_autograd``); the wheel holds them at that package path (required)."""
    tags: str | None = None
    """``tags``: the ``tags.yaml`` the entries' tags are checked against."""
    namespace: str = "aten"
    """``namespace``: operator namespace of ``func:``s written without ``ns::``."""
    shards: int | None = None
    """``shards``: translation units per generated kind; default: one per 32 entries of
    ``native-functions``, 1..10 (:func:`shard_count`; CMake's ``vtgen_generate()`` does the same)."""
    manual_headers: tuple[str, ...] = ()
    """``manual-headers``: helper headers formulas call, spelled as they are ``#include``d."""
    include_dirs: tuple[str, ...] = ()
    """``include-dirs``: where the manual headers are found (for the compile check and the sdist)."""
    using_namespaces: tuple[str, ...] = ()
    """``using-namespaces``: namespaces of the helpers, brought into scope for the formulas."""
    check: bool = True
    """``check``: compile-check the generated code after generating (``vtgen-build check``)."""
    register_backends: tuple[str, ...] = ()
    """``register-backends``: dispatch keys (e.g. ``["CPU", "Meta"]``) whose kernels, as ``dispatch:``
    names them, get generated registrations (``NativeKernels.h``, ``Register<Key>.cpp``); the
    project's extension compiles those units with its kernels."""
    fake_module: str | None = None
    """``fake-module``: the Python module registering the ops' fake kernels (``m.set_python_module``)."""
    torch_version: str | None = None
    """``torch-version``: the PyTorch release the code is built for (e.g. ``2.14``); default: the
    torch installed where the build runs (read from its package metadata), else 2.13."""
    stable_abi: StableTarget | None = None
    """``stable-abi``: build the op library on the LibTorch stable ABI for every PyTorch from this release
    (e.g. ``"2.10"``) on: stable registrations and kernel declarations, no C++ autograd; needs
    ``register-backends`` and ``check = false``; the extension compiles with the
    ``-DTORCH_TARGET_VERSION`` that ``NativeKernels.h`` names."""
    python_api: str | None = None
    """``python-api``: a directory inside one of the packages (e.g. ``src/mypkg/ops``) that gets the
    typed Python API of the ops (``__init__.py``, ``py.typed``); the wheel holds it at that package path."""
    python_autograd: str | None = None
    """``python-autograd``: a module path inside one of the packages (e.g. ``src/mypkg/_autograd.py``)
    that gets the ops' autograd as generated Python (``generate --python-autograd``; for kernels
    without C++ autograd); the wheel holds it at that package path."""
    python_formulas: str | None = None
    """``python-formulas``: the package's module of helper functions the formulas call (beside
    ``python-autograd``; ``generate --python-formulas``)."""

    @staticmethod
    def key(field_name: str) -> str:
        return field_name.replace("_", "-")

    @property
    def request(self) -> BuildRequest:
        """The build request of these settings (checked when they were read), for the default release."""
        return self.request_for(DEFAULT_TARGET)

    def request_for(self, target: Target) -> BuildRequest:
        """The build request of these settings for the release ``target`` (``build_target``)."""
        # the stub headers' declarations: classic mode only
        return BuildRequest(self.namespace, self.register_backends, self.stable_abi, self.manual_headers,
                            self.using_namespaces, self.stable_abi is None, self.python_autograd,
                            self.python_formulas, target, self.fake_module, self.python_api)  # fmt: skip


_REQUIRED = ("native_functions", "derivatives", "output_dir")


def _find_line(text: str, key: str | None) -> int:
    """The line of ``key =`` inside the ``[tool.vtgen_build]`` table (or of the table header)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip().startswith(f"[{TABLE}]")), None)
    if start is None:
        return 1
    if key is not None:
        for i in range(start + 1, len(lines)):
            stripped = lines[i].strip()
            if stripped.startswith("["):
                break
            if re.match(rf'["\']?{re.escape(key)}["\']?\s*=', stripped):
                return i + 1
    return start + 1


def read_settings(table: Mapping[str, Any], source: str = "pyproject.toml", text: str = "") -> Settings:
    """Check ``table`` (the parsed ``[tool.vtgen_build]``) and build the settings; unknown keys are errors."""

    def fail(message: str, key: str | None = None) -> ConfigError:
        return ConfigError(f"{source}:{_find_line(text, key)}: error: [{TABLE}] {message}")

    known = {Settings.key(f.name): f for f in fields(Settings)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            raise fail(f"unknown key '{key}'{did_you_mean(key, known)}", key)
        field = known[key]
        if field.name in ("shards",):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise fail(f"'{key}' must be a positive integer, got {value!r}", key)
            if value > MAX_SHARDS:
                raise fail(f"'{key}' must be at most {MAX_SHARDS}, got {value!r}", key)
        elif field.name == "check":
            if not isinstance(value, bool):
                raise fail(f"'{key}' must be true or false, got {value!r}", key)
        elif field.name in ("manual_headers", "include_dirs", "using_namespaces", "register_backends"):
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise fail(f"'{key}' must be a list of strings, got {value!r}", key)
            value = tuple(value)
        elif not isinstance(value, str) or not value:
            raise fail(f"'{key}' must be a non-empty string, got {value!r}", key)
        values[field.name] = value
    for name in _REQUIRED:
        if name not in values:
            raise fail(f"'{Settings.key(name)}' is required")
    if identifier_problem(values.get("namespace", "aten")) is not None:
        raise fail(f"'namespace' must be an identifier, got {values['namespace']!r}", "namespace")
    if "torch_version" in values:
        try:
            supported_release(values["torch_version"], "torch-version")
        except VtgenError as exc:
            raise fail(f"'torch-version': {exc.message.removeprefix('torch-version: ')}", "torch-version") from None
    _check_request(values, fail)
    module = values.get("fake_module")
    if module is not None and (problem := module_name_problem(module)) is not None:
        raise fail(f"'fake-module': {problem}", "fake-module")
    for ns in values.get("using_namespaces", ()):
        if (problem := qualified_name_problem(ns)) is not None:
            raise fail(f"'using-namespaces': {ns!r} is not a C++ namespace name ({problem})", "using-namespaces")
    for header in values.get("manual_headers", ()):
        try:
            check_include(header, "'manual-headers'")
        except VtgenError as exc:
            raise fail(exc.message, "manual-headers") from None
        if PurePosixPath(header).is_absolute() or ".." in PurePosixPath(header).parts:
            raise fail(
                f"'manual-headers': {header!r} must be relative to an include directory, without '..'",
                "manual-headers",
            )
    paths = ("native_functions", "derivatives", "tags", "output_dir", "include_dirs", "python_api", "python_autograd")
    for name in (*paths, "python_formulas"):
        for path in values[name] if isinstance(values.get(name), tuple) else [values.get(name)]:
            if path is not None and (PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts):
                raise fail(
                    f"'{Settings.key(name)}': {path!r} must be relative to the project, without '..'",
                    Settings.key(name),
                )
    return Settings(**values)


def _check_request(values: dict[str, Any], fail: Any) -> None:
    """The build request the settings make, checked by its own rules (vtgen_build.plan.request; a
    message names its key first); ``register-backends`` and ``stable-abi`` are stored parsed."""
    try:
        request = make_request(
            SETUPTOOLS,
            namespace=values.get("namespace", "aten"),
            register_backends=values.get("register_backends", ()),
            stable_abi=values.get("stable_abi"),
            built_against=installed_torch_version(),  # the stable target: from 2.10 up to the installed torch
            manual_headers=values.get("manual_headers", ()),
            using_namespaces=values.get("using_namespaces", ()),
            python_autograd=values.get("python_autograd"),
            python_formulas=values.get("python_formulas"),
        )
    except VtgenError as exc:
        named = re.match(r"'([a-z-]+)'", exc.message)
        raise fail(exc.message, named.group(1) if named else None) from None
    values["register_backends"], values["stable_abi"] = request.register_backends, request.stable
    if request.stable is not None and values.get("check", True):
        raise fail("'check' cannot compile a stable-ABI library (it builds against ATen): set check = false", "check")


def shard_count(settings: Settings, root: Path) -> int:
    """``shards``, else the default for the size of ``native-functions`` (read from ``root``)."""
    if settings.shards is not None:
        return settings.shards
    try:
        text = (root / settings.native_functions).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"pyproject.toml: error: [{TABLE}] 'native-functions': cannot read {settings.native_functions!r} "
            f"({exc.strerror or exc})"
        ) from None
    return default_shards(text)


def load_settings(project_dir: Path) -> Settings | None:
    """The settings of the project in ``project_dir``; None when it has no ``[tool.vtgen_build]``."""
    pyproject = project_dir / "pyproject.toml"
    if not pyproject.is_file():
        return None
    text = pyproject.read_text(encoding="utf-8")
    if TABLE not in text:  # cheap: most projects setuptools builds are not ours
        return None
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    data = tomllib.loads(text)
    table = data.get("tool", {}).get("vtgen_build")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError(f"pyproject.toml:{_find_line(text, None)}: error: [{TABLE}] must be a table")
    return read_settings(table, "pyproject.toml", text)


# ---------------------------------------------------------------------------------------------
# The hook
# ---------------------------------------------------------------------------------------------


def finalize_distribution_options(dist: Any) -> None:
    """``setuptools.finalize_distribution_options`` entry point: wire ``build_vtgen`` into ``build``/``sdist``."""
    settings = load_settings(Path(getattr(dist, "src_root", None) or os.curdir))
    if settings is None:
        return
    dist.vtgen_build_settings = settings
    base_build = dist.get_command_class("build")
    if COMMAND not in {name for name, _ in base_build.sub_commands}:

        class build(base_build):  # type: ignore[misc, valid-type]
            sub_commands = [(COMMAND, None), *base_build.sub_commands]

        dist.cmdclass["build"] = build
    dist.cmdclass[COMMAND] = build_vtgen
    base_sdist = dist.get_command_class("sdist")
    generated_dirs = [settings.output_dir, *(p for p in (settings.python_api, settings.python_autograd) if p)]

    class sdist(base_sdist):  # type: ignore[misc, valid-type]
        def prune_file_list(self) -> None:
            super().prune_file_list()
            for prefix in generated_dirs:
                self.filelist.exclude_pattern(None, prefix=prefix)

    dist.cmdclass["sdist"] = sdist


# Late in the order: other hooks may replace `build` first; we wrap whatever is there.
finalize_distribution_options.order = 100  # type: ignore[attr-defined]


class build_vtgen(Command):  # type: ignore[misc]
    """Generate the autograd kernels from ``[tool.vtgen_build]`` (and compile-check them)."""

    description = "generate autograd kernels with vtgen_build"
    user_options = [("force", "f", "regenerate even when no input changed")]
    boolean_options = ["force"]

    editable_mode: bool = False

    def initialize_options(self) -> None:
        self.build_lib: str | None = None
        self.build_temp: str | None = None
        self.force: bool | None = None
        self.editable_mode = False

    def finalize_options(self) -> None:
        self.set_undefined_options(
            "build", ("build_lib", "build_lib"), ("build_temp", "build_temp"), ("force", "force")
        )
        self.settings: Settings = self.distribution.vtgen_build_settings
        self.root = Path(getattr(self.distribution, "src_root", None) or os.curdir).resolve()

    # -- where things are ------------------------------------------------------------------

    def _package_path(self, key: str = "output-dir") -> PurePosixPath:
        """``output-dir`` (or ``python-api``) as a path inside the wheel (through the packages' source
        directories)."""
        build_py = self.get_finalized_command("build_py")
        configured = {"output-dir": self.settings.output_dir, "python-api": self.settings.python_api}.get(
            key, self.settings.python_autograd
        )
        assert configured is not None
        out = PurePosixPath(configured)
        best: tuple[int, PurePosixPath] | None = None
        for package in self.distribution.packages or ():
            source = PurePosixPath(Path(build_py.get_package_dir(package)).as_posix())
            if source.parts[:1] == (".",):
                source = PurePosixPath(*source.parts[1:])
            if out.parts[: len(source.parts)] == source.parts and (best is None or len(source.parts) > best[0]):
                best = (len(source.parts), PurePosixPath(*package.split("."), *out.parts[len(source.parts) :]))
        if best is None:
            line = _find_line((self.root / "pyproject.toml").read_text(encoding="utf-8"), key)
            raise ConfigError(
                f"pyproject.toml:{line}: error: [{TABLE}] '{key}' {configured!r} is not inside any "
                f"of the packages ({', '.join(self.distribution.packages or []) or 'none'})"
            )
        return best[1]

    def _generation_dir(self) -> Path:
        if self.editable_mode:
            return self.root / self.settings.output_dir
        assert self.build_temp is not None
        return Path(self.build_temp).resolve() / "vtgen" / self.settings.output_dir

    def _api_dir(self) -> Path:
        if self.editable_mode:
            assert self.settings.python_api is not None
            return self.root / self.settings.python_api
        assert self.build_temp is not None
        return Path(self.build_temp).resolve() / "vtgen-python-api"

    def _autograd_file(self) -> Path:
        """Where the Python autograd module is written: in place (editable), else under build_temp."""
        assert self.settings.python_autograd is not None
        if self.editable_mode:
            return self.root / self.settings.python_autograd
        assert self.build_temp is not None
        return (
            Path(self.build_temp).resolve()
            / "vtgen-python-autograd"
            / PurePosixPath(self.settings.python_autograd).name
        )

    def _autograd_mapping(self) -> dict[str, str]:
        """Wheel path → the generated Python autograd module (none without ``python-autograd``)."""
        if self.settings.python_autograd is None:
            return {}
        assert self.build_lib is not None
        package = self._package_path("python-autograd")
        return {os.path.join(self.build_lib, *package.parts): str(self._autograd_file())}

    def _api_mapping(self) -> dict[str, str]:
        """Wheel path → generated file of the typed Python API (none without ``python-api``)."""
        if self.settings.python_api is None:
            return {}
        from .engine.python_api import API_FILES

        assert self.build_lib is not None
        package = self._package_path("python-api")
        return {os.path.join(self.build_lib, *package.parts, name): str(self._api_dir() / name) for name in API_FILES}

    def _generated_files(self) -> list[str]:
        """The generated files (relative, ``/``-separated) without running anything: the manifest's
        list when the generator ran before, else the files whose names depend only on ``shards``."""
        files = manifest_files(self._generation_dir())
        if files is not None:
            return sorted(files)
        n = shard_count(self.settings, self.root)
        return sorted(
            ["Functions.h", "FunctionsBase.h"]
            + [f"{kind}_{k}.cpp" for kind in ("VariableType", "Functions") for k in range(n)]
        )

    # -- SubCommand protocol -------------------------------------------------------------

    def get_source_files(self) -> list[str]:
        s = self.settings
        files = [s.native_functions, s.derivatives] + ([s.tags] if s.tags else [])
        for header in s.manual_headers:
            for include_dir in s.include_dirs:
                candidate = PurePosixPath(include_dir) / header
                if (self.root / candidate).is_file():
                    files.append(str(candidate))
                    break
        return files

    def get_outputs(self) -> list[str]:
        return list(self.get_output_mapping())

    def get_output_mapping(self) -> dict[str, str]:
        assert self.build_lib is not None
        package = self._package_path()
        mapping = {}
        for name in self._generated_files():
            destination = os.path.join(self.build_lib, *package.parts, *name.split("/"))
            if self.editable_mode:
                mapping[destination] = str(PurePosixPath(self.settings.output_dir) / name)
            else:
                mapping[destination] = str(self._generation_dir() / name)
        return mapping | self._api_mapping() | self._autograd_mapping()

    def run(self) -> None:
        s = self.settings
        out = self._generation_dir()
        if self.force and (out / MANIFEST).exists():
            (out / MANIFEST).unlink()
        inputs = Inputs(
            str(self.root / s.native_functions),
            str(self.root / s.derivatives),
            str(self.root / s.tags) if s.tags else None,
            s.namespace,
        )
        try:
            # resolved once: generation, the Python APIs and the check share it
            request = s.request_for(build_target(s))
            options = GenerateOptions(
                str(out),
                shard_count(s, self.root),
                request,
                line_directives=True,  # a compiler error in a formula names its derivatives.yaml line
                allow_overwrite=bool(self.force),  # --force removed the manifest: the files there are ours
            )
            result = generate(inputs, options)
        except VtgenError as exc:
            # `<file>:<line>: error: ...` on a line of its own (paths relative to the project),
            # where editors and CI log parsers find it; setuptools prefixes its own message.
            print(_relative(str(exc), self.root), file=sys.stderr, flush=True)
            raise SetupError("vtgen_build: generating the autograd kernels failed (see above)") from None
        print(result.summary(), f"[{_relative(str(out), self.root)}]", flush=True)
        if s.python_api is not None or s.python_autograd is not None:
            self._write_python(inputs, options, result)
        if s.check:
            self._check(result, options)
        if not self.editable_mode:
            for api_file, source in (self._api_mapping() | self._autograd_mapping()).items():
                self.mkpath(str(Path(api_file).parent))
                self.copy_file(source, api_file, preserve_mode=False)
            package = self._package_path()
            assert self.build_lib is not None
            for name in self._generated_files():
                destination = Path(self.build_lib, *package.parts, *name.split("/"))
                self.mkpath(str(destination.parent))
                self.copy_file(str(out / name), str(destination), preserve_mode=False)

    def _write_python(self, inputs: Inputs, options: GenerateOptions, result: GenerateResult) -> None:
        """The typed Python API and the Python autograd, both from the run's model and plan (an up-to-date
        run made none: one load and plan of the yaml, shared, made only for an output its record does not
        show intact)."""

        @functools.cache
        def planned() -> RunPlan:
            try:
                return run_plan(inputs, options, result)
            except VtgenError as exc:
                print(_relative(str(exc), self.root), file=sys.stderr, flush=True)
                raise SetupError("vtgen_build: planning the Python outputs failed (see above)") from None

        current = result.mode == "up-to-date"
        if self.settings.python_api is not None:
            self._write_api(options, planned, current)
        if self.settings.python_autograd is not None:
            self._write_autograd(options, planned, current)

    def _write_api(self, options: GenerateOptions, planned: Callable[[], RunPlan], current: bool) -> None:
        """``current``: the yaml is as the last run found it (its record then says whether the API is too)."""
        from .engine.python_api import api_intact, write_python_api

        request, directory = options.request, str(self._api_dir())
        if current and api_intact(directory, options.out_dir):
            print("vtgen_build: typed Python API: up to date", flush=True)
            return
        try:
            # the shims the library defines: an op library's (classic: AOTIShims.cpp; stable: Register<Key>.cpp)
            keys = request.register_backends if request.op_library else ()
            rules = request.stable is None  # the stable mode's batching rules are its Python autograd module's
            written = write_python_api(planned(), directory, record_in=options.out_dir, register_backends=keys,
                                       batching_rules=rules)  # fmt: skip
        except VtgenError as exc:
            print(_relative(str(exc), self.root), file=sys.stderr, flush=True)
            raise SetupError("vtgen_build: generating the typed Python API failed (see above)") from None
        print(f"vtgen_build: typed Python API: {len(written)} files written", flush=True)

    def _write_autograd(self, options: GenerateOptions, planned: Callable[[], RunPlan], current: bool) -> None:
        """``current``: as for ``_write_api``."""
        from .engine.python_autograd import autograd_intact, write_python_autograd

        s, request = self.settings, options.request
        formulas = str(self.root / s.python_formulas) if s.python_formulas else None
        target = str(self._autograd_file())
        keys = request.register_backends if request.stable is not None else ()  # a stable library's Autocast
        if current and autograd_intact(target, formulas, keys, options.out_dir):
            print("vtgen_build: Python autograd: unchanged", flush=True)
            return
        try:
            written = write_python_autograd(planned(), target, formulas, beside=self.editable_mode,
                                            autocast_backends=keys, record_in=options.out_dir)  # fmt: skip
        except VtgenError as exc:
            print(_relative(str(exc), self.root), file=sys.stderr, flush=True)
            raise SetupError("vtgen_build: generating the Python autograd failed (see above)") from None
        print(f"vtgen_build: Python autograd: {'written' if written else 'unchanged'}", flush=True)

    # -- the compile check ---------------------------------------------------------------

    def _check(self, result: GenerateResult, options: GenerateOptions) -> None:
        """Compile-check exactly what the build ships: the files just generated into the build's own
        output directory (nothing is generated a second time), with the include directories it names."""
        from .check import CheckOptions, check_generated

        out = Path(options.out_dir)
        stamp = out / _CHECK_STAMP
        fingerprint = hashlib.sha256((out / MANIFEST).read_bytes()).hexdigest()
        if result.plan is None and stamp.is_file() and stamp.read_text().strip() == fingerprint:
            print("vtgen_build: compile check: up to date", flush=True)
            return
        stamp.unlink(missing_ok=True)
        print(f"vtgen_build: compile check: the generated files in {_relative(str(out), self.root)}", flush=True)
        include_dirs = tuple(str(self.root / d) for d in self.settings.include_dirs)
        try:
            checked = check_generated(options, result, CheckOptions(include_dirs=include_dirs, progress=False))
        except VtgenError as exc:
            print(_relative(str(exc), self.root), file=sys.stderr, flush=True)
            raise SetupError("vtgen_build: the compile check could not run (see above)") from None
        print(checked.summary(), flush=True)
        if not checked.ok:
            raise SetupError(f"vtgen-build check failed:\n{checked.summary()}")
        stamp.write_text(fingerprint + "\n")


def build_target(settings: Settings) -> Target:
    """The release the kernels are generated for: ``torch-version``, else that of the torch installed
    in the build environment (its distribution metadata: torch is never imported), else the default
    (``plan.target.resolve_target``, the one rule of the CLI too)."""
    version = None if settings.torch_version else installed_torch_version()
    installed = (version, f"torch {version}, installed in the build environment") if version else None
    return resolve_target(settings.torch_version, None, None, installed, f"[{TABLE}] torch-version")


def build_release(settings: Settings) -> str:
    """``build_target``'s release, as the ``check`` command line of the pre-commit hook passes it on."""
    return build_target(settings).release


def check_command(settings: Settings, root: Path) -> list[str]:
    """The ``vtgen-build check`` command line for ``settings`` (the pre-commit hook's check of a project,
    which generates nothing: the release is resolved here, once, and passed on as ``--torch-version``)."""
    s = settings
    command = [
        sys.executable,
        "-m",
        "vtgen_build",
        "check",
        "--native-functions",
        s.native_functions,
        "--derivatives",
        s.derivatives,
    ]
    if s.tags:
        command += ["--tags", s.tags]
    command += [
        "--namespace",
        s.namespace,
        "--shards",
        str(shard_count(s, root)),
        "--torch-version",
        build_release(s),  # the one resolution of this command (the pre-commit hook's)
    ]
    for header in s.manual_headers:
        command += ["--manual-header", header]
    for ns in s.using_namespaces:
        command += ["--using-namespace", ns]
    for include_dir in s.include_dirs:
        command += ["-I", str(root / include_dir)]
    return command


def _relative(text: str, root: Path) -> str:
    prefix = str(root) + os.sep
    return text.replace(prefix, "")
