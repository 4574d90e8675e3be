"""``generate``: inputs → model → plan → files, doing the least work a change requires.

The output directory holds a manifest (``manifest.py``) recording each input's
size, mtime and content hash, the settings (options, generator version, a digest
of the templates, the policy and the generator's own code), every file written
with its content hash and stat signature, and the token of the cache
(``incremental.py``) written just before it.  Three paths:

* nothing changed (size and mtime, else content hash, of every input; every
  output present): done before any YAML is read, importing nothing heavy;
* only entries of derivatives.yaml changed: ``incremental.incremental_run``
  re-plans the ops using them and reassembles the shards they land in;
* anything else (or a missing, torn or foreign manifest or cache): a clean run.

Either way only files whose content changed are rewritten, each atomically, and
the manifest is written last, so a run killed at any point leaves a directory
the next run repairs.  A lock serialises two runs on one directory.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..base import store
from ..base.errors import VtgenError
from ..base.names import check_identifier, check_include, check_qualified_name, module_name_problem
from ..base.write import fault_point, locked, remove_outputs, remove_stale_temporaries, write_atomic
from ..inputs.files import Inputs, file_digest
from ..plan.policy import DEFAULT_RELEASE
from ..plan.request import CLI, CMAKE, BuildRequest, StableTarget, make_request, request_problems
from .manifest import MANIFEST, FileRecord, InputRecord, Manifest, file_stamp, read_manifest, write_manifest
from .noop import discard, generator_files

if TYPE_CHECKING:
    from ..plan.kernel import Plan
    from .incremental import Outcome
    from .planned import RunPlan

__all__ = [
    "MANIFEST",
    "MAX_SHARDS",
    "GenerateOptions",
    "GenerateResult",
    "IncrementalFailureHook",
    "arguments_problems",
    "check_options",
    "default_shards",
    "depfile_inputs",
    "generate",
    "input_paths",
    "install_incremental_failure_hook",
    "manifest_files",
    "option_problems",
    "run_plan",
    "settings_key",
    "touch",
    "write_depfile",
]

IncrementalFailureHook = Callable[[Exception], None]
# Empty in production: an unexpected exception of the incremental path becomes a full run with a
# notice.  A test harness installs a hook that raises it (tests/conftest.py, tests/faulty.py), so an
# incremental bug cannot stay green; nothing here reads the environment.
_INCREMENTAL_FAILURE_HOOKS: list[IncrementalFailureHook] = []
MAX_SHARDS = 1024  # --shards: 1..1024 (each shard is three files)
# A build that names no shard count (CMake's vtgen_generate(), the setuptools hook) gets one
# shard per ENTRIES_PER_SHARD entries of native_functions.yaml, 1..MAX_DEFAULT_SHARDS: a
# small library compiles its kernels in one unit per kind, PyTorch's own yaml in ten.
ENTRIES_PER_SHARD = 32
MAX_DEFAULT_SHARDS = 10
_ENTRY = re.compile(r"^-[ \t]+func:", re.MULTILINE)  # cmake/vtgen_buildConfig.cmake counts the same lines
_PACKAGE = Path(os.path.abspath(__file__)).parent.parent  # as noop.generator_files() spells it


def default_shards(native_functions_text: str) -> int:
    """The shard count of a build that names none: one per 32 entries (``- func:`` lines) of
    native_functions.yaml, at least 1, at most 10 (vtgen_generate() applies the same rule)."""
    entries = len(_ENTRY.findall(native_functions_text))
    return max(1, min(MAX_DEFAULT_SHARDS, -(-entries // ENTRIES_PER_SHARD)))


@dataclass(frozen=True)
class GenerateOptions:
    """How one run writes ``out_dir``; what it is asked to build (the namespace, manual headers, backend keys,
    stable target, release, Python outputs) is the front end's ``request`` (vtgen_build.plan.request)."""

    out_dir: str
    shards: int = 10
    request: BuildRequest = field(default_factory=BuildRequest)
    # `#line` to the yaml around formulas (--line-directives; check, CMake and setuptools builds). The path
    # written is the yaml's absolute path: identical output for the same inputs at the same place.
    line_directives: bool = False
    policy_root: str | None = None  # --pytorch-root: its own generator sources give the policy lists
    # --allow-overwrite: a directory with no manifest may hold same-named files we did not write; replace them
    allow_overwrite: bool = False


@dataclass(frozen=True)
class GenerateResult:
    plan: Plan | None  # what this run planned: everything, the re-planned ops, or None (nothing to do)
    written: tuple[str, ...]
    unchanged: int
    seconds: float
    changed_inputs: tuple[str, ...]
    mode: str = "full"  # "up-to-date", "incremental" or "full"
    explanations: tuple[str, ...] = ()  # per re-planned op (or for all of them): which input changed
    outputs: tuple[str, ...] = ()  # every file the output directory holds for this run (relative paths)
    stable: StableTarget | None = None  # the stable-ABI target of the run (no kernels or Nodes of autograd)
    warnings: tuple[str, ...] = ()  # ``path:line: warning: ...``: what the command prints on stderr
    # the model and plan of every op, where the run made them: a clean run's; an incremental run's whose
    # request writes a Python output (planned once for both writers); none for an up-to-date run (``run_plan``)
    planned: RunPlan | None = None

    def summary(self) -> str:
        if self.plan is None:
            return f"vtgen-build: up to date (0 files written) in {self.seconds:.3f}s"
        if self.stable is not None:
            return (
                f"vtgen-build: stable-abi {self.stable}: registrations and kernel declarations, no C++ autograd; "
                f"{len(self.written)} files written, {self.unchanged} unchanged in {self.seconds:.3f}s"
            )
        kernels = sum(k.kind == "kernel" for k in self.plan.kernels)
        fallbacks = sum(k.kind == "fallback" for k in self.plan.kernels)
        ops = len({k.op for k in self.plan.kernels})
        what = "re-planned " if self.mode == "incremental" else ""
        return (
            f"vtgen-build: {what}{ops} ops, {kernels} kernels, {fallbacks} fallbacks, {len(self.plan.infos)} Nodes; "
            f"{len(self.written)} files written, {self.unchanged} unchanged in {self.seconds:.3f}s"
        )


def input_paths(inputs: Inputs) -> list[str]:
    return [p for p in (inputs.native_functions, inputs.derivatives, inputs.tags) if p]


def _stat(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        raise VtgenError(f"no such file: {path}") from None
    return st.st_size, st.st_mtime_ns


def _generator_files() -> list[Path]:
    """Files that decide the output besides the inputs: templates, the policy, the generator's own code."""
    return [Path(p) for p in generator_files()]


def _generator_stats() -> tuple[tuple[str, int, int], ...]:
    def stat(p: Path) -> tuple[str, int, int]:
        st = p.stat()
        return str(p.relative_to(_PACKAGE)), st.st_size, st.st_mtime_ns

    return tuple(stat(p) for p in _generator_files())


def _generator_digest(manifest: Manifest | None, stats: tuple[tuple[str, int, int], ...]) -> str:
    """Any change to a template, the policy or the code regenerates everything.

    The digest of the last run is reused while every file keeps its size and mtime
    (hashing ~50 files and importing hashlib would cost the no-op path ~10 ms).
    """
    if manifest is not None and manifest.generator_stats == stats:
        return manifest.generator
    import hashlib

    h = hashlib.sha256()
    for path in _generator_files():
        h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _settings(
    options: GenerateOptions, inputs: Inputs, manifest: Manifest | None, stats: tuple[tuple[str, int, int], ...]
) -> dict[str, object]:
    r = options.request
    return {
        "version": __version__,
        "shards": options.shards,
        "namespace": r.namespace,
        "input_namespace": inputs.namespace,
        "manual_headers": list(r.manual_headers),
        "using": list(r.using_namespaces),
        "generator": _generator_digest(manifest, stats),
        **({"line_directives": True} if options.line_directives else {}),
        **({"stub_decls": True} if r.stub_decls else {}),
        **({"register_backends": list(r.register_backends)} if r.register_backends else {}),
        **({"fake_module": r.fake_module} if r.fake_module else {}),
        **({"stable_abi": str(r.stable)} if r.stable else {}),
        **({"release": r.target.release} if r.target.release != DEFAULT_RELEASE else {}),
        **({"policy": _policy_digest(options.policy_root)} if options.policy_root else {}),
    }


def settings_key(settings: dict[str, object]) -> str:
    return json.dumps(settings, sort_keys=True)


def _policy_digest(root: str) -> str:
    """The content of the generator sources a ``--pytorch-root``'s policy lists are read from."""
    import hashlib

    from ..plan.policy import policy_source_files

    h = hashlib.sha256()
    for path in policy_source_files(root):
        try:
            h.update(path.encode() + b"\0" + Path(path).read_bytes())
        except OSError:
            h.update(path.encode() + b"\0-")
    return h.hexdigest()


def _changed_inputs(manifest: Manifest | None, inputs: Inputs, settings: dict[str, object]) -> list[str] | None:
    """Inputs whose content changed; None when the manifest cannot be trusted (regenerate all)."""
    if manifest is None or manifest.settings != settings_key(settings):
        return None
    paths = input_paths(inputs)
    if {r.path for r in manifest.inputs} != set(paths) or len(manifest.inputs) != len(paths):
        return None
    changed = []
    for path in paths:
        old = manifest.input(path)
        assert old is not None
        if (old.size, old.mtime_ns) != _stat(path) and old.sha256 != file_digest(path):
            changed.append(path)
    return changed


def _outputs_intact(out_dir: Path, manifest: Manifest | None) -> bool:
    """Every file the manifest lists is there with the content it was written with: the stat signature
    recorded just after the run, else (touched, replaced, edited in place) its size and content hash."""
    if manifest is None:
        return False
    base = str(out_dir)
    for f in manifest.files:
        path = os.path.join(base, f.path)
        stamp = file_stamp(path)
        if stamp == f.stamp:
            continue
        if stamp == "-" or int(stamp.partition(":")[0]) != f.size or file_digest(path) != f.sha256:
            return False
    return True


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """No cycle collection during a run: it builds hundreds of thousands of objects that live to its end, and
    each full collection walks them all (a fifth of a clean run's time).  Reference counting
    still frees everything else; peak memory is unchanged on the real yaml."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def option_problems(options: GenerateOptions) -> list[tuple[str, str]]:
    """Every problem of the options that name things (``(option, message)``, the option as the command line
    spells it): the one rule of the CLI, the setuptools hook and CMake's ``vtgen_generate()``, which asks it
    at configure time (``arguments_problems``)."""
    found: list[tuple[str, str]] = []
    if not 1 <= options.shards <= MAX_SHARDS:
        found.append(("--shards", f"--shards must be between 1 and {MAX_SHARDS}, got {options.shards}"))
    r = options.request
    checks: list[tuple[str, Callable[[str, str], None], Iterable[str]]] = [
        ("--namespace", check_identifier, (r.namespace,)),
        ("--manual-header", check_include, r.manual_headers),
        ("--using-namespace", check_qualified_name, r.using_namespaces),
    ]
    for option, check, values in checks:
        for value in values:
            try:
                check(value, option)
            except VtgenError as exc:
                found.append((option, exc.message))
    if r.fake_module is not None and (problem := module_name_problem(r.fake_module)) is not None:
        found.append(("--fake-module", f"--fake-module: {problem}"))
    return found


def arguments_problems(argv: Iterable[str]) -> list[tuple[str, str]]:
    """``option_problems`` of ``--namespace NS``, ``--using-namespace NS``, ``--manual-header H``,
    ``--register-backends KEYS`` and ``--fake-module M`` as a build system passes them (CMake's
    ``vtgen_generate()`` at configure time); an option it does not know is itself a problem."""
    words = list(argv)
    values: dict[str, list[str]] = {}
    for option, value in zip(words[0::2], words[1::2], strict=False):
        values.setdefault(option, []).append(value)
    known = ("--namespace", "--using-namespace", "--manual-header", "--register-backends", "--fake-module")
    found = [(o, f"{o}: not an option validate knows") for o in values if o not in known]
    keys: tuple[str, ...] = ()
    for text in values.get("--register-backends", []):
        from ..plan.registrations import parse_keys

        try:
            keys = parse_keys(text)
        except VtgenError as exc:
            found.append(("--register-backends", exc.message))
    request = BuildRequest(
        namespace=(values.get("--namespace") or ["aten"])[-1],
        manual_headers=tuple(values.get("--manual-header", [])),
        using_namespaces=tuple(values.get("--using-namespace", [])),
        register_backends=keys,
        fake_module=values["--fake-module"][-1] if "--fake-module" in values else None,
    )
    options = GenerateOptions(out_dir="-", request=request)
    return found + option_problems(options)


_REQUEST_OPTIONS = ("--stable-abi", "--python-autograd", "--python-formulas")


def configure_answers(argv: Sequence[str]) -> list[str]:
    """What CMake's ``vtgen_generate()`` asks at configure time, as lines: the problems of its arguments
    (``OPTION<TAB>PROBLEM``, the option as the command line spells it, or ``-`` for a problem said in
    CMake's words), else the answers of its build request: ``files<TAB>`` the files only a classic op
    library has (``;``-separated) and ``stable-macro<TAB>`` a stable target's ``TORCH_TARGET_VERSION``."""
    pairs = list(zip(argv[0::2], argv[1::2], strict=False))
    problems = arguments_problems([word for pair in pairs if pair[0] not in _REQUEST_OPTIONS for word in pair])
    if problems:
        return [f"{option}\t{problem}" for option, problem in problems]

    def given(option: str) -> list[str]:
        return [value for name, value in pairs if name == option]

    def last(option: str) -> str | None:
        return given(option)[-1] if given(option) else None

    try:
        request = make_request(
            CMAKE,
            namespace=(given("--namespace") or ["aten"])[-1],
            register_backends=",".join(given("--register-backends")),
            stable_abi=last("--stable-abi"),
            built_against=installed_torch_version(),  # the generator's interpreter's: the one the build uses
            manual_headers=given("--manual-header"),
            using_namespaces=given("--using-namespace"),
            python_autograd=last("--python-autograd"),
            python_formulas=last("--python-formulas"),
        )
    except VtgenError as exc:
        return [f"-\t{exc.message}"]
    return [
        f"files\t{';'.join(request.library_files)}",
        f"stable-macro\t{request.stable.macro if request.stable else ''}",
    ]


def installed_torch_version() -> str | None:
    """The version of the torch installed for this interpreter (its metadata: nothing imported)."""
    import importlib.metadata

    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def check_options(options: GenerateOptions) -> None:
    """The options' own errors, before anything is read or written."""
    if not options.out_dir:
        raise VtgenError("--out: the output directory must not be empty")
    problems = option_problems(options)
    problems += [("", problem) for problem in request_problems(options.request, CLI)]
    if problems:
        raise VtgenError(problems[0][1])


def generate(
    inputs: Inputs, options: GenerateOptions, finish: Callable[[GenerateResult], None] | None = None
) -> GenerateResult:
    """Bring ``options.out_dir`` up to date; ``finish`` runs with the result while the lock is still held
    (the CLI writes its depfile, stamp and no-op record there, so they describe this run's outputs)."""
    start = time.perf_counter()
    check_options(options)
    check_identifier(inputs.namespace, "--namespace")
    out_dir = Path(options.out_dir)
    with locked(out_dir), _cyclic_gc_paused():
        discard(options.out_dir)  # whatever happens next, the last run's no-op record no longer holds
        result = _generate_locked(inputs, options, out_dir, start)
        if finish is not None:
            finish(result)
        return result


def _generate_locked(inputs: Inputs, options: GenerateOptions, out_dir: Path, start: float) -> GenerateResult:
    manifest = read_manifest(out_dir)
    stats = _generator_stats()
    settings = _settings(options, inputs, manifest, stats)
    changed = _changed_inputs(manifest, inputs, settings)
    if changed == [] and manifest is not None and _outputs_intact(out_dir, manifest):
        fresh = _refresh(out_dir, manifest, inputs, stats)
        if fresh != manifest:
            write_manifest(out_dir, fresh)
        files = tuple(f.path for f in manifest.files)
        return GenerateResult(None, (), len(files), time.perf_counter() - start, (), "up-to-date", outputs=files)
    return _regenerate(inputs, options, out_dir, manifest, (settings, stats), changed, start)


def _refresh(out_dir: Path, manifest: Manifest, inputs: Inputs, stats: tuple[tuple[str, int, int], ...]) -> Manifest:
    """The manifest of an up-to-date directory with today's stats (touched inputs, outputs and generator files),
    so the next run need not hash them again."""
    records = []
    for r in manifest.inputs:
        size, mtime = _stat(r.path)
        records.append(r if (r.size, r.mtime_ns) == (size, mtime) else InputRecord(r.path, size, mtime, r.sha256))
    base = str(out_dir)
    files = tuple(replace(f, stamp=file_stamp(os.path.join(base, f.path))) for f in manifest.files)
    return replace(manifest, generator_stats=stats, inputs=tuple(records), files=files)


def _regenerate(
    inputs: Inputs,
    options: GenerateOptions,
    out_dir: Path,
    manifest: Manifest | None,
    generator: tuple[dict[str, object], tuple[tuple[str, int, int], ...]],
    changed: list[str] | None,
    start: float,
) -> GenerateResult:
    from . import incremental

    settings, stats = generator
    remove_stale_temporaries(out_dir)
    explanations: list[str] = []
    outcome: incremental.Outcome | str = "no usable manifest" if changed is None else "outputs missing or modified"
    if changed and manifest is not None and _outputs_intact(out_dir, manifest):
        outcome = _try_incremental(inputs, options, settings, (out_dir, manifest), explanations)
    old = {f.path: f for f in manifest.files} if manifest is not None else {}
    if isinstance(outcome, str):
        explanations = [f"all ops: {outcome}"]
        outcome = incremental.full_run(inputs, options, settings, explanations)
        mode, kept = "full", {}
    else:
        mode, kept = "incremental", dict(old)
    if manifest is None and not options.allow_overwrite:
        _refuse_foreign_files(out_dir, outcome.files)
    written = [rel for rel, content in outcome.files if write_atomic(out_dir / rel, content)]
    sizes_and_hashes = {rel: _file_record(content) for rel, content in outcome.files}
    if mode == "full":
        remove_outputs(out_dir, set(old) - set(outcome.all_files))
    fault_point("outputs written")
    token = incremental.save_cache(out_dir, outcome.cache)
    fault_point("cache written")
    base = str(out_dir)
    files = []
    for rel in sorted({*kept, *sizes_and_hashes}):
        size, sha = sizes_and_hashes[rel] if rel in sizes_and_hashes else (kept[rel].size, kept[rel].sha256)
        files.append(FileRecord(rel, size, sha, file_stamp(os.path.join(base, rel))))
    write_manifest(out_dir, _manifest(inputs, settings, stats, tuple(files), token))
    unchanged = (len(outcome.files) if mode == "full" else len(files)) - len(written)
    return GenerateResult(
        outcome.plan,
        tuple(written),
        unchanged,
        time.perf_counter() - start,
        tuple(changed) if changed else tuple(input_paths(inputs)),
        mode,
        tuple(outcome.explanations),
        tuple(f.path for f in files),
        options.request.stable,
        outcome.warnings,
        _run_plan(inputs, options, outcome, mode),
    )


def _writes_python(request: BuildRequest) -> bool:
    return request.python_api is not None or request.python_autograd is not None


def _run_plan(inputs: Inputs, options: GenerateOptions, outcome: Outcome, mode: str) -> RunPlan | None:
    """The model and plan of every op the Python writers render from: a clean run's own; an incremental
    run re-planned only the edited ops, so one whose request writes a Python output plans every op here."""
    if outcome.model is not None and mode == "full":
        from .planned import RunPlan

        return RunPlan(inputs, outcome.model, outcome.plan)
    return _plan_every_op(inputs, options) if _writes_python(options.request) else None


def run_plan(inputs: Inputs, options: GenerateOptions, result: GenerateResult) -> RunPlan:
    """The model and plan of every op of ``result``'s run; an up-to-date run made none (it read no yaml): loaded
    and planned here, for a front end that has a Python output to write."""
    return result.planned if result.planned is not None else _plan_every_op(inputs, options)


def _plan_every_op(inputs: Inputs, options: GenerateOptions) -> RunPlan:
    from ..plan.policy import policy_for
    from .planned import plan_inputs

    return plan_inputs(inputs, policy_for(options.policy_root, options.request.target.release))


def _refuse_foreign_files(out_dir: Path, files: Iterable[tuple[str, str]]) -> None:
    """With no manifest (a damaged one counts as ours), files this run would replace by other content
    are someone else's: refuse rather than overwrite them."""
    if (out_dir / MANIFEST).exists():
        return
    foreign = []
    for rel, content in files:
        path = out_dir / rel
        try:
            if path.is_file() and path.read_bytes() != content.encode("utf-8"):
                foreign.append(rel)
        except OSError:  # unreadable: writing it fails too, and says why
            continue
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise VtgenError(
            f"--out {out_dir}: holds {', '.join(foreign[:3])}{more}, which vtgen-build did not write (no "
            f"{MANIFEST} there) and would replace; move them away, or pass --allow-overwrite"
        )


def _try_incremental(
    inputs: Inputs,
    options: GenerateOptions,
    settings: dict[str, object],
    previous: tuple[Path, Manifest],
    explanations: list[str],
) -> Outcome | str:
    """An incremental run from the cache, or why not (a cache that is inconsistent in a way its
    decoder could not see is one more reason for a clean run, never a crash)."""
    from . import incremental

    out_dir, manifest = previous
    if options.request.stable is not None:
        return "stable-ABI mode: every run is a clean run (a few files, no Nodes)"
    cache = incremental.load_cache(out_dir, manifest.cache)
    if cache is None:
        return "no usable cache"
    try:
        return incremental.incremental_run(inputs, options, settings, (out_dir, cache), explanations)
    except (LookupError, ValueError, TypeError, AssertionError) as exc:
        for hook in _INCREMENTAL_FAILURE_HOOKS:  # a test harness: a bug in the incremental path must not stay green
            hook(exc)
        explanations.clear()
        reason = f"the incremental path failed ({type(exc).__name__}: {str(exc)[:200]})"
        print(f"vtgen-build: note: {reason}; regenerating everything", file=sys.stderr)
        return reason


def install_incremental_failure_hook(hook: IncrementalFailureHook) -> None:
    """Call ``hook(exc)`` when the incremental path raises, before a full run replaces it: a hook that
    raises ends the run with that exception (a test harness; production installs none)."""
    _INCREMENTAL_FAILURE_HOOKS.append(hook)


def _file_record(content: str) -> tuple[int, str]:
    data = content.encode("utf-8")
    return len(data), store.sha256_hex(data)


def _manifest(
    inputs: Inputs,
    settings: dict[str, object],
    stats: tuple[tuple[str, int, int], ...],
    files: tuple[FileRecord, ...],
    cache: str | None,
) -> Manifest:
    records = tuple(InputRecord(p, *_stat(p), file_digest(p)) for p in input_paths(inputs))
    return Manifest(settings_key(settings), str(settings["generator"]), stats, records, files, cache)


def manifest_files(out_dir: Path) -> tuple[str, ...] | None:
    """The files the last run in ``out_dir`` wrote (relative paths), or None when it left no usable manifest."""
    manifest = read_manifest(out_dir)
    return None if manifest is None else tuple(f.path for f in manifest.files)


def depfile_inputs(inputs: Inputs) -> list[str]:
    """Every file a run reads to decide the output: the yaml inputs, the templates, the policy and the
    generator's own modules (an upgrade of vtgen_build in place reruns the generator)."""
    return [os.path.abspath(p) for p in input_paths(inputs)] + [str(p) for p in _generator_files()]


def write_depfile(path: str, target: str, inputs: Inputs) -> None:
    """A Make-style depfile: ``target: every input read``."""

    def esc(p: str) -> str:
        if "\n" in p or "\r" in p:
            raise VtgenError(f"--depfile: a depfile cannot name a path holding a line break: {p!r}")
        return p.replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")

    deps = " \\\n  ".join(esc(p) for p in depfile_inputs(inputs))
    write_atomic(Path(path), f"{esc(target)}: \\\n  {deps}\n")


def touch(path: str) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.touch()
    os.utime(p)
