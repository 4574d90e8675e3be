"""``vtgen-build check --gradcheck``: build the chosen ops into a library, gradcheck them in a child."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base import store
from ..base.errors import VtgenError
from ..base.write import locked, write_atomic
from ..check import (
    CHECK_LOCK,
    CheckOptions,
    changed_ops,
    helper_files,
    helper_roots,
    op_digests,
    read_state,
    select_ops,
    with_helpers,
    write_state,
)
from ..compile import Headers, default_std, find_compiler, identify, include_flags, launcher_argv, remove_legacy
from ..emit.output_index import OutputIndex, read_index
from ..engine.generate import GenerateOptions, generate
from ..gradcheck_child.protocol import CheckRequest, InstalledSchemas, ProtocolError, SchemasQuery
from ..inputs.files import Inputs
from ..model.schema import SchemaError, op_name
from ..plan.target import Target as Release
from ..plan.target import running_target
from ..torchlib import BuildSettings, TorchInstall, locate_torch
from ..torchlib.build import Session
from ..worker import Versions, Worker, run_python
from ..worker import find as find_worker
from .analyses import child_files, recall, remember, torch_key
from .coverage import RunIdentity, coverage, render, run_identity, to_json
from .formulas import FormulaPlaces, formula_places
from .library import LibraryBuild, build_library
from .manual_source import find_manual_source
from .reach import Target, reach_map, targets
from .records import AT, FAILED, Entry, entries_of, mark_of, read_entries, read_rows
from .reference import REFERENCE_DIR, judge_failures
from .report import NO_ENTRY, STOPPED, Report
from .schema_run import schema_fallback, schema_whys
from .shard import base_of, costs_text, load_costs, partition
from .supervise import Child, Stop, run_to_end
from .units import Registration
from .verdict import unverified

__all__ = ["GradcheckOptions", "op_variants", "run_gradcheck"]

WORK = ".vtgen-gradcheck"
SCHEMAS = "gradcheck_schemas"  # the artifact-cache kind of the installed torch's schemas (analyses.py)
EARLY = (
    "stopped at the first failure confirmed as ours (its rerun with PyTorch's own kernels passes): "
    "the checks after it did not run (--all-checks runs them all)"
)


@dataclass(frozen=True)
class GradcheckOptions:
    # what a compile check takes too: the ops (these and their in-place variants; none and not ``changed``:
    # every op; ``changed``: those whose code changed since their last gradcheck, and those that failed; ``since``:
    # whose entries differ from a git revision) and how their units compile (compiler, launcher, standard, -I,
    # torch headers: must be those of the torch of ``python``, artifact cache, PCH)
    check: CheckOptions = field(default_factory=CheckOptions)
    python: str | None = None  # the Python whose torch is used (default: this one)
    dtypes: tuple[str, ...] = ("float64", "complex128")
    max_samples: int = 0  # 0: every sample of an OpInfo
    timeout: int = 300  # seconds per OpInfo entry
    bind_hidden: bool = True  # call libtorch's hidden helpers through its symbol table
    pytorch_root: str | None = None  # a source checkout: its FunctionsManual.cpp is built into the library
    schema_samples: bool = True  # ops no OpInfo check verified get samples made from their schema
    hints: tuple[str, ...] = ()  # sample hints files besides the built-in one (schema_run.py)
    allow_unverified: bool = False  # a selected op no passing check entered does not fail the run
    reach_limit: int = 2  # entries (OpInfo, ModuleInfo, ...) whose calls reach it, per selected op
    coverage: str | None = None  # every op, checked on captured arguments only; the JSON report goes here
    batched: bool = True  # the batched (vmap) part of each check, where PyTorch's tests run it (batching.py)
    shard: tuple[int, int] | None = None  # (K, N): only part K of N of the selected ops (shard.py)
    all_checks: bool = False  # every check runs; default: the run stops at the first failure confirmed as ours
    use_worker: bool = True  # run the children through the warm worker of --out when one is up (``worker``)
    versions: Versions | None = field(default=None, compare=False)  # the caller's, for the worker's staleness
    worker: Worker | None = None  # that worker, once found (``run_gradcheck``)


def _selected(
    index: OutputIndex,
    regs: list[Registration],
    options: GradcheckOptions,
    digests: dict[str, str],
    state: dict[str, str],
) -> list[Registration]:
    chosen = options.check.since.select(index) if options.check.since is not None else None
    if options.check.ops or chosen is not None:
        names = set(select_ops(index, options.check.ops)) | set(chosen or ())
        families = {op_name(op).family for op in names}  # an op selects its in-place variant, and back
        names |= {r.op for r in regs if op_name(r.op).family in families}
        if options.check.changed:
            names |= set(changed_ops(state, digests))
        return [r for r in regs if r.op in names]
    if options.check.changed:
        return [r for r in regs if state.get(r.op) != digests.get(r.op)]
    return regs


def _installed_schemas(
    settings: BuildSettings, session: Session, regs: list[Registration], work: Path, worker: Worker | None
) -> InstalledSchemas:
    """Each op's arguments in the installed torch (``InstalledSchemas``); kept in the artifact cache
    (``analyses``), verified by the content of the torch libraries and the child package; a record that does
    not read as the answer is no record: the question is asked again."""
    torch = settings.torch
    names = sorted({f"{r.namespace}::{r.op}" for r in regs})
    key = torch_key(SCHEMAS, torch, settings.release, json.dumps(names))
    try:
        return InstalledSchemas.from_json(recall(session, key, SCHEMAS))
    except ProtocolError:
        pass
    remove_legacy(work, ("schemas.json",))  # earlier versions' record, keyed by version strings
    query, answer = work / "schemas-query.json", work / "schemas-answer.json"
    write_atomic(query, json.dumps(SchemasQuery(tuple(names)).to_json()))
    said = work / "schemas-stderr.txt"
    argv = child_package.command("child", "--schemas", str(query), str(answer))
    if run_python(worker, torch.python, argv, said) != 0:
        raise VtgenError(f"asking torch for its schemas failed: {said.read_text(errors='replace').strip()[-2000:]}")
    try:
        found = InstalledSchemas.from_json(json.loads(answer.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:  # ProtocolError is a ValueError
        raise VtgenError(f"asking torch for its schemas: its answer cannot be read ({exc})") from None
    remember(session, key, SCHEMAS, found.to_json(), [*torch.libraries, *child_files()])
    return found


def _schema_problems(
    regs: list[Registration], installed: InstalledSchemas, places: dict[str, FormulaPlaces]
) -> dict[str, str]:
    """Ops the installed torch lacks, or whose argument names differ from the yaml's."""
    problems: dict[str, str] = {}
    for r in regs:
        theirs = installed.of(f"{r.namespace}::{r.op}")
        mine = places.get(r.op)
        if theirs is None:
            problems[r.op] = "the installed torch has no such op"
            continue
        positional, keywords = list(theirs.positional), list(theirs.keywords)
        if mine is not None and (positional != list(mine.arguments) or sorted(keywords) != sorted(mine.keywords)):
            problems[r.op] = f"its schema differs in the installed torch (arguments {positional}, keywords {keywords})"
    return problems


def _uncheckable(regs: list[Registration], schemas: InstalledSchemas) -> dict[str, str]:
    """Op → why no CPU sample can reach it here (random, sparse-only, no CPU kernel), from the schemas query."""
    why: dict[str, str] = {}
    for r in regs:
        row = schemas.of(f"{r.namespace}::{r.op}")
        if row is not None and row.uncheckable:
            why[r.op] = row.uncheckable
    return why


def op_variants(ops: Iterable[str]) -> dict[str, list[str]]:
    """Op -> [family, OpInfo variant] for the child, which matches OpInfos by these, never by cutting names."""
    return {op: [(n := op_name(op)).family, "inplace" if n.inplace else "function"] for op in sorted(ops)}


def _run_child(
    torch: TorchInstall,
    build: LibraryBuild,
    ops: list[str] | None,
    out_ops: list[str],
    options: GradcheckOptions,
    work: Path,
    checks_of: Sequence[Target] = (),
) -> tuple[list[Entry], bool, float]:
    """Run the OpInfo checks in a child Python; restart it past an entry that crashes it.  Unless every
    check is asked for (``all_checks``, ``coverage``), stop at the first failure confirmed as ours: True.
    The records come judged (``judge_failures``: a failure PyTorch's own kernels share is not ours),
    with the seconds the judging took."""
    shutil.rmtree(work / REFERENCE_DIR, ignore_errors=True)
    autograd = {r.op for r in build.registered if r.key == "Autograd"}
    early = not (options.all_checks or options.coverage)
    whole: list[str] = []  # entries cut at a failure that was not ours: run again with every check

    variants = tuple((op, family, variant) for op, (family, variant) in op_variants(autograd).items())

    def request(skip: list[str]) -> CheckRequest:
        return CheckRequest(
            library=str(build.path),
            ops=None if ops is None else tuple(ops),
            out_ops=tuple(out_ops),
            autograd_ops=tuple(sorted(autograd)),
            variants=variants,
            dtypes=tuple(options.dtypes),
            max_samples=options.max_samples,
            timeout=options.timeout,
            skip=tuple(skip),
            targets=tuple(checks_of),
            reference_dir=str(work / REFERENCE_DIR),
            batched=options.batched,
            first_failure=early,
            whole=tuple(whole),
        )

    paths = (work / "request.json", work / "results.jsonl", work / "child-stderr.txt")
    what, launch = "the gradcheck process", tuple(child_package.command("child"))
    child = Child(torch.python, launch, *paths, what, "OpInfo", options.timeout, options.worker)

    last: list[tuple[list[Entry], list[Entry]]] = []  # the rows last judged, and their judgement
    spent = [0.0]  # seconds of judging

    def judge(rows: list[Entry]) -> list[Entry]:
        began = time.perf_counter()
        last[:] = [(rows, judge_failures(torch.python, rows, work, options.worker))]
        spent[0] += time.perf_counter() - began
        return last[0][1]

    def confirmed() -> bool:  # its reference rerun with PyTorch's own kernels passes: the failure is ours
        if any(c.status == FAILED for r in judge(read_entries(paths[1])) for c in r.checks):
            return True
        _run_again_whole(paths[1], whole)
        return False

    stop = Stop(_has_failed_check, confirmed) if early else None
    stopped = run_to_end(child, request, stop)
    rows = read_entries(paths[1])
    judged = last[0][1] if last and last[0][0] == rows else judge(rows)  # stopped at a failure: not judged twice
    return judged, stopped, spent[0]


def _run_again_whole(results: Path, whole: list[str]) -> None:
    """An entry the child cut at its first failed check (``cut``), a failure PyTorch's own kernels share: its
    rows go, and it is added to ``whole``, so that the child runs it again with every check."""
    rows = read_rows(results)
    cut = {r.name for r in entries_of(rows) if r.cut}
    whole.extend(sorted(cut - set(whole)))
    kept = [r for r in rows if (m := mark_of(r)) is None or m.kind == AT or m.name not in cut]
    write_atomic(results, "".join(json.dumps(r) + "\n" for r in kept))


def _has_failed_check(entry: Entry) -> bool:
    return any(c.status == FAILED for c in entry.checks)


def _next_state(state: dict[str, str], digests: dict[str, str], checked: set[str], failed: list[str]) -> dict[str, str]:
    """What ``--changed`` compares with next time: each op's code when it was last checked (or first seen).

    A failed op is left out, so that it is checked again; an op seen for the first time is
    recorded as it is, so that ``--changed`` after ``--op x`` checks only what is edited later.
    """
    new = {op: d for op, d in state.items() if op in digests}
    for op, digest in digests.items():
        if op in checked or op not in new:
            new[op] = digest
    for op in failed:
        new.pop(op, None)
    return dict(sorted(new.items()))


def _run_of(inputs: Inputs, options: GradcheckOptions, release: str, torch: TorchInstall) -> RunIdentity:
    """The identity a coverage part carries (``coverage.RunIdentity``): what the parts of one run share."""
    hints = [f"{h}\0{store.sha256_hex(Path(h).read_bytes()) if Path(h).is_file() else '-'}" for h in options.hints]
    words = [
        f"ops={','.join(sorted(str(s) for s in options.check.ops))}",
        f"since={options.check.since.revision if options.check.since is not None else ''}",
        f"dtypes={','.join(options.dtypes)}",
        f"max_samples={options.max_samples}",
        f"batched={options.batched}",
        f"schema_samples={options.schema_samples}",
        f"reach_limit={options.reach_limit}",
        f"all_checks={options.all_checks}",
        f"pytorch_root={bool(options.pytorch_root)}",
        *hints,
    ]
    return run_identity(inputs, release, torch.version, words)


def _coverage(
    path: str,
    run: tuple[list[Registration], dict[str, FormulaPlaces], list[Entry]],
    report: Report,
    shard: tuple[int, int] | None,
    identity: RunIdentity,
) -> str:
    """Write the coverage JSON of the selected ops' entries (``run``: the run's ops, their places, its
    records), with the run's identity; the summary table."""
    regs, places, records = run
    mine = {op: p for op, p in places.items() if op in {r.op for r in regs}}
    entries = coverage(mine, records, report.unverified, report.failed_ops)
    named = [r for r in records if not r.source and not r.schema]
    by_name = coverage(mine, named, report.unverified, report.failed_ops)
    write_atomic(Path(path), to_json(entries, shard, identity))
    part = f" (part {shard[0]} of {shard[1]}: `vtgen-build coverage merge` joins the parts)" if shard else ""
    return render(entries, by_name) + f"\n  per entry: {path}{part}"


def _phases(library: float, marks: Sequence[float], total: float) -> tuple[tuple[str, float], ...]:
    """Where a run's seconds went: the library, the checks' child, the reference reruns, the schema samples
    (``marks``: the clock before and after each of the last three) and the rest (generating, the schemas
    query, the reach map, the report)."""
    child, reference, schema = (b - a for a, b in pairwise(marks))
    rest = max(0.0, total - library - child - reference - schema)
    return (("library", library), ("checks", child), ("reference", reference), ("schema samples", schema),
            ("the rest", rest))  # fmt: skip


def _shard(
    torch: TorchInstall,
    options: GradcheckOptions,
    shard: tuple[int, int],
    work: Path,
    release: str,
    places: dict[str, FormulaPlaces],
    regs: list[Registration],
    session: Session,
) -> list[Registration]:
    """Part K of N of ``regs`` (``shard.py``), and a note of what each part is predicted to take."""
    costs = load_costs()  # the shipped measurement; damaged: estimated, and said
    if costs.damaged:
        print(f"vtgen-build: note: {costs.damaged}", file=sys.stderr)
    entries = {op: p.entry for op, p in places.items()}
    reach_all = reach_map(torch, work, session, release, options.worker)
    parts = partition(regs, shard[1], reach_all, options.reach_limit, costs, entries)
    k = shard[0]
    every = " + ".join(f"{s:.0f}" for s in parts.predicted)
    model = f"each counts {costs.once:.0f} s every run pays and {costs.per_kernel:.3f} s of compile per kernel"
    print(
        f"vtgen-build: note: part {k} of {shard[1]}: {parts.groups[k - 1]} op groups, {parts.kernels[k - 1]} kernels, "
        f"predicted {parts.predicted[k - 1]:.0f} s (the parts: {every} s; {model})",
        file=sys.stderr,
    )
    return [r for r in regs if parts.owner[r.op] == k]


def _group(aten: str) -> str | None:
    """The op group a record's seconds count for; none for an OpInfo named for no op (``nn.functional.cross_entropy``,
    run as a captured check: its seconds are the run's rest)."""
    try:
        return base_of(aten) if aten else None
    except SchemaError:
        return None


def _write_costs(path: Path, regs: list[Registration], records: list[Entry], torch_version: str, build: LibraryBuild,
                 seconds: float) -> None:  # fmt: skip
    """Each op group's seconds of checks in this run (0: none of its checks ran), over the ones an earlier run in
    this directory measured; the compile seconds per kernel (when this run compiled every unit) and the rest of
    the run's seconds: a whole run's file is what ``data/gradcheck_costs.json`` ships (``shard.py``)."""
    earlier = load_costs(path)  # a damaged one: measured again
    costs = dict(earlier.seconds)
    found = dict.fromkeys({base_of(r.op) for r in regs}, 0.0)
    for r in records:
        if group := _group(r.aten):
            found[group] = found.get(group, 0.0) + r.seconds
    costs.update(found)
    kernels = len({r.kernel for r in regs})
    fresh = build.compiled >= build.units and kernels > 0  # a cached library measures no compile
    per_kernel = build.seconds / kernels if fresh else earlier.per_kernel
    once = max(0.0, seconds - build.seconds - sum(found.values())) if fresh else earlier.once
    write_atomic(path, costs_text(costs, f"check --gradcheck, torch {torch_version}", per_kernel, once))


def _target(torch: TorchInstall, options: GradcheckOptions, gen_options: GenerateOptions) -> tuple[Release, str | None]:
    """The release the library is built for: the one of the torch that loads it (``plan.target.running_target``,
    from the target the command resolved); and a note when that is not the release the inputs pointed at.
    An explicit other release or include directory is an error."""
    # the release the command resolved, and where from; from an explicit --torch-version (its source), it
    # must be the release of the torch that runs the checks
    resolved = gen_options.request.target
    running = running_target(resolved, torch.version, torch.python)
    given = options.check.torch_include
    if given and Path(given).resolve() != torch.include_dirs[0].resolve():
        raise VtgenError(
            f"--torch-include {given}: --gradcheck compiles against the headers of the torch that "
            f"loads the library ({torch.include_dirs[0]}); leave the option out or name that directory"
        )
    if running.release == resolved.release:
        return running, None
    where = f", from {resolved.source}" if resolved.source else ""
    return (
        running,
        f"target: PyTorch {running.release}, {running.source} (the inputs point at {resolved.release}{where})",
    )


def _settings(torch: TorchInstall, options: GradcheckOptions, out: Path, release: str) -> BuildSettings:
    headers = Headers(str(torch.include_dirs[0]), options.check.include_dirs, options.check.manual_header_file)
    return BuildSettings(
        identify(find_compiler(options.check.cxx)),
        torch,
        out / WORK,
        std=options.check.std or default_std(torch.include_dirs[0]),
        extra_flags=tuple(include_flags(out, headers)),
        jobs=options.check.jobs,
        launcher=launcher_argv(options.check.launcher),
        use_cache=options.check.cache,
        release=release,
        use_pch=options.check.pch,
    )


@dataclass(frozen=True)
class _Built:
    """What a run has built by the time its records are judged (``_report`` and ``_schema_stage`` read it)."""

    inputs: Inputs
    options: GradcheckOptions
    torch: TorchInstall
    build: LibraryBuild
    work: Path
    regs: list[Registration]
    places: dict[str, FormulaPlaces]


def _schema_stage(built: _Built, cannot: dict[str, str], records: list[Entry]) -> tuple[list[Entry], dict[str, str]]:
    """Schema samples for the ops no OpInfo/ModuleInfo check verified and a dense CPU sample can reach."""
    options, build = built.options, built.build
    if not (options.schema_samples and build.registered):
        return [], {}
    run = (built.torch.python, str(build.path), built.work, options.timeout, options.batched)
    registered = [r.op for r in build.registered if r.key == "Autograd"]
    wanted = [
        r.op for r in built.regs if (p := built.places.get(r.op)) is not None and not p.out and r.op not in cannot
    ]  # out=: reach's rule
    return schema_fallback(built.inputs, options.hints, wanted, registered, records, run, options.worker)


def run_gradcheck(inputs: Inputs, gen_options: GenerateOptions, options: GradcheckOptions) -> Report:
    with locked(Path(gen_options.out_dir), CHECK_LOCK):  # as `check`: one run at a time per directory
        return _run_gradcheck_locked(inputs, gen_options, options)


def _run_gradcheck_locked(inputs: Inputs, gen_options: GenerateOptions, options: GradcheckOptions) -> Report:
    start = time.perf_counter()
    out = Path(gen_options.out_dir).resolve()
    warm = find_worker(out, options.python or sys.executable, options.versions) if options.use_worker else None
    options = replace(options, worker=warm)
    torch = locate_torch(options.python, warm)
    if torch.missing:
        raise VtgenError(
            f"--python {torch.python} cannot import {' and '.join(torch.missing)}, which PyTorch's OpInfo tests need: "
            "pip install 'vtgen_build[gradcheck]' there"
        )
    running, target_note = _target(torch, options, gen_options)
    release = running.release
    gen_options = replace(gen_options, line_directives=True, request=replace(gen_options.request, stub_decls=True,
                                                                             target=running))  # fmt: skip
    generate(inputs, gen_options)
    work = out / WORK
    work.mkdir(parents=True, exist_ok=True)
    index = read_index(out)
    settings = _settings(torch, options, out, release)
    session = Session.open(settings)  # one per run: the torch libraries are hashed once
    digests = _op_digests(index, settings, gen_options.request.manual_headers, options)
    state_file, state_key = work / "state.json", settings.key("changed-state", settings.flags(), "")
    state = read_state(state_file, "gradcheck_state", state_key)  # check's --changed record, its format
    regs = _selected(index, index.registrations, options, digests, state)
    places = formula_places(inputs, work, release, gen_options.policy_root) if regs else {}  # none: nothing to do
    if options.shard is not None:  # the reach map is cached: read again below
        regs = _shard(torch, options, options.shard, work, release, places, regs, session)
        if not regs:  # more parts than op groups: this one has none (its coverage part is empty)
            if options.coverage:
                write_atomic(
                    Path(options.coverage), to_json([], options.shard, _run_of(inputs, options, release, torch))
                )
            k, n = options.shard
            return Report.nothing_to_do(time.perf_counter() - start, f"part {k} of {n} of the selected ops has none")
    if not regs:
        since = (
            options.check.since.revision
            if options.check.since is not None and not (options.check.ops or options.check.changed)
            else None
        )
        why = f"no op's entries differ from {since}" if since else "no op changed or failed since the last run"
        return Report.nothing_to_do(time.perf_counter() - start, why)
    schemas = _installed_schemas(settings, session, regs, work, options.worker)
    problems = _schema_problems(regs, schemas, places)
    usable = [r for r in regs if r.op not in problems]
    if not usable and inputs.namespace != "aten":
        raise VtgenError(
            f"the installed torch has none of the selected {inputs.namespace}:: ops: check an op library's own ops "
            "with --library <the shared library its build produced, or a package that loads it>"
        )
    manual = find_manual_source(options.pytorch_root)
    extra_units, extra_settings = ([manual.unit()], manual.settings(settings)) if manual else ([], None)
    build = build_library(index, usable, settings, options.bind_hidden, extra_units, extra_settings, session)
    excluded = {**problems, **dict(build.excluded)}
    bases = (
        None
        if not (options.check.ops or options.check.changed or options.check.since or options.shard)
        else sorted({op_name(r.op).family for r in regs})
    )
    out_ops = sorted(r.op for r in build.registered if (p := places.get(r.op)) is not None and p.out)
    reach = reach_map(torch, work, session, release, options.worker) if bases is not None or options.coverage else None
    chosen = targets(reach, build.registered, places, options.reach_limit, load_costs().seconds) if reach else ()
    marks = [time.perf_counter()]
    records, early, judging = (
        _run_child(torch, build, bases, out_ops, options, work, chosen) if build.registered else ([], False, 0.0)
    )
    marks.append(time.perf_counter())
    marks[-1:] = [marks[-1] - judging, marks[-1]]  # the reference reruns ran inside: their seconds apart
    cannot = _uncheckable(regs, schemas)
    built = _Built(inputs, options, torch, build, work, regs, places)
    report, records = _report(built, (excluded, cannot), records, early)
    marks.append(time.perf_counter())
    report.seconds = marks[-1] - start
    report.phases = _phases(build.seconds, marks, report.seconds)
    if early:
        report.notes.append(EARLY)
    if options.coverage:
        run = _run_of(inputs, options, release, torch)
        report.notes.append(_coverage(options.coverage, (regs, places, records), report, options.shard, run))
    if build.registered:
        _write_costs(work / "costs.json", regs, records, torch.version, build, report.seconds)
    if manual is not None:
        report.notes.append(manual.summary(build.extra, torch.version))
    if target_note is not None:
        report.notes.append(target_note)
    checked = set(report.passed_ops) if early else {r.op for r in regs}  # what did not run stays to be checked
    write_state(state_file, "gradcheck_state", state_key, _next_state(state, digests, checked, report.failed_ops))
    return report


def _op_digests(
    index: OutputIndex, settings: BuildSettings, manual_headers: Sequence[str], options: GradcheckOptions
) -> dict[str, str]:
    """Each op's code digest (``check.op_digests``) with the content of the helper files naming a function its
    formulas call (``check.with_helpers``): the helpers (``check.helper_files``, searched in ``-I`` and the
    torch's include directories) and the FunctionsManual.cpp ``--pytorch-root`` builds in.  ``--changed``
    checks again the ops whose helpers were edited."""
    roots = helper_roots(options.check.include_dirs, settings.torch.include_dirs)
    files = helper_files(roots, manual_headers, options.check.manual_header_file)
    manual = find_manual_source(options.pytorch_root)
    files += [manual.path] if manual is not None else []
    return with_helpers(index, op_digests(index, index.out_dir), files)


def _report(
    built: _Built, left_out: tuple[dict[str, str], dict[str, str]], records: list[Entry], early: bool
) -> tuple[Report, list[Entry]]:
    """The report (and records) of the OpInfo records with the schema samples of the ops they left unverified;
    ``left_out``: (op → why it is not in the library, op → why no CPU sample reaches it); ``early`` (stopped at
    a confirmed failure): no schema samples, and what did not run is not "unverified"."""
    excluded, cannot = left_out
    build, regs, places = built.build, built.regs, built.places
    schema = _schema_stage(built, cannot, records) if not early else None
    more, unsampled = schema or ([], {})
    records = [*records, *more]
    autograd_ops = {r.op for r in build.registered if r.key == "Autograd"}
    unreached = STOPPED if early else NO_ENTRY
    report = Report.from_results(records, [r.op for r in regs], excluded, places, build, 0.0, autograd_ops, unreached)
    uncheckable = {**schema_whys(more), **unsampled, **cannot}
    if not early:
        report.unverified = unverified(regs, places, report.passed_ops, report.failed_ops, excluded, uncheckable)
    report.accept_unverified = built.options.allow_unverified
    return report, records
