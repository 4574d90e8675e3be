"""Incremental regeneration: redo only the ops an edit of ``derivatives.yaml`` touches.

A clean run (``full_run``) records, in ``.vtgen-cache/`` next to the outputs (``cache.py``:
data-only, hash-checked state files), per derivatives.yaml entry what an edit needs, the
native functions an edit may re-plan, and the rendered fragment of every kernel and Node
of each shard, so unchanged ops are reassembled without being planned or rendered again.
An edit rewrites the index and the shard files it changed, never the whole cache.

``incremental_run`` handles an edit that keeps the file's *structure* (same
entries in the same order, same schemas and keys): it parses only the changed
entries, plans a small model holding them, the functions using them, their
signature groups and every earlier entry sharing their Node-name prefix (so
``AddBackward1`` keeps its number), checks that the result has exactly the
shape recorded (same kernels per function, same Nodes per entry), and
reassembles the shards those land in.  Anything else -- a native_functions.yaml
or tags.yaml edit, an added, removed or moved entry, a schema change, a Node
appearing or vanishing, a parse error, a cache from another version -- returns
the reason, and the caller runs the clean path, whose output is the reference.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..base.errors import Location, VtgenError
from ..emit.files import (
    EmitOptions,
    KernelFragment,
    NodeFragment,
    assemble_functions,
    assemble_node_header,
    assemble_outputs,
    assemble_variable_type,
    kernel_fragments,
    library_files,
    node_fragments,
)
from ..emit.output_index import node_header_name
from ..inputs.files import Inputs, file_digest
from ..inputs.load import Entry, load_text, read_text
from ..model import Model, load_model
from ..model.derivatives import DerivativeEntry
from ..model.native import NativeFunction
from ..plan.formulas import concrete_sizes
from ..plan.infos import node_prefix
from ..plan.kernel import Plan, build_plan
from ..plan.library import plan_library
from ..plan.policy import Policy, policy_for
from ..plan.request import BuildRequest
from .cache import (
    CACHE,
    INDEX,
    CacheIndex,
    EntryRecord,
    FunctionStore,
    ShardFragments,
    load_functions,
    load_index,
    load_shard,
)
from .cache import save as _save

if TYPE_CHECKING:
    from ..plan.stable import StablePlan

__all__ = [
    "CACHE",
    "INDEX",
    "CacheIndex",
    "CacheWrite",
    "EntryRecord",
    "FunctionStore",
    "Outcome",
    "ShardFragments",
    "full_run",
    "incremental_run",
    "load_cache",
    "save_cache",
    "split_entries",
]


# A line at column 0 that is neither an entry start ("- "), a comment nor blank:
# the file is not a plain list of block mappings, so it is never split by text.
_UNSPLITTABLE = re.compile(r"^(?:[^-#\s]|-[^\s])", re.M)
_ENTRY_START = re.compile(r"^-", re.M)
_ODD_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_MAYBE_ANCHOR = re.compile(r"(?:^|[\s\[\]{},])[&*][^\s\[\]{},]")


@dataclass(frozen=True)
class Chunk:
    """One top-level entry's text, as written (up to the next entry), and its first line (0-based)."""

    line: int
    text: str

    @functools.cached_property
    def digest(self) -> str:
        return hashlib.blake2b(self.text.encode(), digest_size=16).hexdigest()


def split_entries(text: str) -> list[Chunk] | None:
    """The file's entries by text alone, or None when only a YAML parser can tell them apart."""
    if _UNSPLITTABLE.search(text) or _ODD_BREAKS.search(text):
        return None
    starts = [m.start() for m in _ENTRY_START.finditer(text)]
    if not starts or any(line.strip()[:1] not in ("", "#") for line in text[: starts[0]].split("\n")):
        return None  # no entries, or something other than comments before the first one
    chunks, line = [], text.count("\n", 0, starts[0])
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=False):
        chunks.append(Chunk(line, text[begin:end]))
        line += text.count("\n", begin, end)
    return chunks


def _has_anchor(chunk: Chunk) -> bool:
    """Does the chunk define or use a YAML anchor (``&a`` / ``*a``)?  Such entries are not parsed alone."""
    if not _MAYBE_ANCHOR.search(chunk.text):
        return False
    import yaml

    try:
        return any(
            isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None)
            for e in yaml.parse(chunk.text, yaml.SafeLoader)
        )
    except yaml.YAMLError:
        return True


def _parse_chunk(chunk: Chunk, path: str) -> Entry | None:
    """Parse one entry on its own, with the line numbers it has in the whole file."""
    entries = load_text("\n" * chunk.line + chunk.text, path)
    return entries[0] if len(entries) == 1 and entries[0].location.line == chunk.line + 1 else None


@dataclass(frozen=True)
class CacheWrite:
    """The cache files a run (re)writes: always the index, then the shards and functions it changed."""

    index: CacheIndex
    shards: tuple[tuple[int, ShardFragments], ...]
    functions: FunctionStore | None  # None: the file on disk stays right


@dataclass(frozen=True)
class Outcome:
    """What a run produced: files to write (path → content), and what was re-planned."""

    files: tuple[tuple[str, str], ...]  # (relative path, content) to write, sorted by path
    all_files: tuple[str, ...]  # the whole output file set (a clean run), or () for an incremental one
    plan: Plan
    explanations: tuple[str, ...]
    cache: CacheWrite
    warnings: tuple[str, ...] = ()  # ``path:line: warning: ...`` lines the command prints
    model: Model | None = None  # a clean run's: what ``plan`` was made from


def _token() -> str:
    return os.urandom(8).hex()  # not `secrets`: one import less on the edit path


def _fkey(f: NativeFunction) -> str:
    return f"{f.namespace}::{f.name}"


def _settings_key(settings: dict[str, object]) -> str:
    return json.dumps(settings, sort_keys=True)


class RunOptions(Protocol):
    """What a run reads of its options (``engine.generate.GenerateOptions``, which imports this module)."""

    @property
    def shards(self) -> int: ...

    @property
    def line_directives(self) -> bool: ...

    @property
    def policy_root(self) -> str | None: ...

    @property
    def request(self) -> BuildRequest: ...


def _emit_options(options: RunOptions, policy: Policy) -> EmitOptions:
    views = frozenset(n for n, _ in policy.view_functions)
    r = options.request
    return EmitOptions(options.shards, r.manual_headers, views, r.using_namespaces, options.line_directives,
                       r.target.release, r.register_backends, r.fake_module, r.namespace)  # fmt: skip


def full_run(inputs: Inputs, options: RunOptions, settings: dict[str, object], explanations: list[str]) -> Outcome:
    """Load, plan and render everything; record what an incremental run needs."""
    model = load_model(inputs)
    policy = policy_for(options.policy_root, options.request.target.release)
    if options.request.stable is not None:
        # what the ABI cannot carry first: a derivatives.yaml entry that no longer matches an edited schema
        # follows from it, and its did-you-mean would suggest the unsupported type
        stable = _plan_stable(model, policy, options)
        plan = build_plan(model, policy)  # derivatives.yaml is checked: the Python autograd reads it
        return _stable_outcome(inputs, settings, (model, policy, plan), stable, explanations, options.shards,
                               options.request.python_autograd is not None)  # fmt: skip
    plan = _cpp_plan(model, policy)
    emit = _emit_options(options, policy)
    kernels = kernel_fragments(plan.kernels, emit)
    nodes = node_fragments(plan.infos, emit)
    files = assemble_outputs(kernels, nodes, emit)
    library = plan_library(model.native_functions, plan, policy, options.request)
    files.update(library_files(library, emit))  # kept as they are by edits
    if options.request.stub_decls:
        from ..stubs.gen_decls import render_decls

        files.update(render_decls(model.native_functions))  # declarations the stub headers include
    shims = library.aoti_shims.skipped if library.aoti_shims is not None else ()
    warnings = tuple(s.warning() for s in shims if s.warn)  # of native_functions.yaml: an edit keeps them
    cache = _record(inputs, _settings_key(settings), (model, policy, plan), kernels, nodes, options.shards)
    cache = replace(cache, index=replace(cache.index, warnings=warnings))
    return Outcome(tuple(sorted(files.items())), tuple(sorted(files)), plan, tuple(explanations), cache, warnings,
                   model)  # fmt: skip


def _cpp_plan(model: Model, policy: Policy) -> Plan:
    """The plan of a run generating C++ autograd: its formulas read no concrete size (``concrete_sizes``)."""
    plan = build_plan(model, policy)
    for info in plan.infos:
        for b in info.backward:
            concrete_sizes(b.original, b.location)
    return plan


def _plan_stable(model: Model, policy: Policy, options: RunOptions) -> StablePlan:
    from ..plan.stable import plan_stable

    return plan_stable(model.native_functions, options.request, policy.pytorch_tags)


def _stable_outcome(
    inputs: Inputs,
    settings: dict[str, object],
    planned: tuple[Model, Policy, Plan],
    stable: StablePlan,
    explanations: list[str],
    shards: int,
    python_autograd: bool,
) -> Outcome:
    """A stable-ABI library: its registrations and kernel declarations, no autograd C++ (a cache
    without fragments: the next run is a clean run again)."""
    from ..emit.stable_registrations import stable_files
    from ..plan.autocast import autocast_unregistered

    model, plan = planned[0], planned[2]
    files = stable_files(stable)
    record = _record(inputs, _settings_key(settings), planned, [], [], shards)
    cache = CacheWrite(record.index, (), None)
    unregistered = () if python_autograd else autocast_unregistered(model.native_functions)
    warnings = tuple(s.warning() for s in stable.aoti_shims.skipped if s.warn)  # named like an aten op
    return Outcome(tuple(sorted(files.items())), tuple(sorted(files)), plan, tuple(explanations), cache,
                   warnings + unregistered, model)  # fmt: skip


def _shard_files(
    kernels: Sequence[KernelFragment], nodes: Sequence[NodeFragment], shards: int
) -> tuple[tuple[int, ShardFragments], ...]:
    return tuple(
        (
            k,
            ShardFragments(
                _token(), tuple(f for f in kernels if f.shard == k), tuple(n for n in nodes if n.shard == k)
            ),
        )
        for k in range(shards)
    )


def _record(
    inputs: Inputs,
    settings: str,
    planned: tuple[Model, Policy, Plan],
    kernels: list[KernelFragment],
    nodes: list[NodeFragment],
    shards: int,
) -> CacheWrite:
    """The cache of a clean run (``entries`` is None when edits cannot be handled piecewise)."""
    model, policy, plan = planned
    chunks = split_entries(read_text(inputs.derivatives))
    usable = (
        chunks is not None
        and len(chunks) == len(model.derivatives)
        and all(c.line + 1 == e.location.line for c, e in zip(chunks, model.derivatives, strict=False))
        and not any(_has_anchor(c) for c in chunks)
    )
    index_of_line = {e.location.line: i for i, e in enumerate(model.derivatives)}

    def entry_of(location: Location) -> int:
        if location.file != inputs.derivatives or location.line not in index_of_line:
            raise LookupError(location)
        return index_of_line[location.line]

    shard_files = _shard_files(kernels, nodes, shards)
    fkey = {id(f): _fkey(f) for f in model.native_functions}
    try:
        kernel_owner = tuple(
            (fkey[id(k.function)], None if k.info is None else entry_of(k.info.location)) for k in plan.kernels
        )
        node_entry = tuple(entry_of(i.location) for i in plan.infos)
    except LookupError:
        usable = False
    index = CacheIndex(
        _token(),
        settings,
        file_digest(inputs.native_functions),
        file_digest(inputs.tags) if inputs.tags else None,
        None,
        tuple(s.token for _, s in shard_files),
        _token(),
        model.entry_count,
        model.tags,
        policy,
        (),
        tuple(k.shard for k in kernels),
        (),
        tuple(n.node for n in nodes),
        tuple(n.shard for n in nodes),
        (),
        (),
    )
    if not usable or chunks is None:
        return CacheWrite(index, (), None)
    index, functions = _dependency_tables(index, model, chunks, (kernel_owner, node_entry), fkey)
    return CacheWrite(index, shard_files, functions)


def _dependency_tables(
    index: CacheIndex,
    model: Model,
    chunks: list[Chunk],
    owners: tuple[tuple[tuple[str, int | None], ...], tuple[int, ...]],
    fkey: dict[int, str],
) -> tuple[CacheIndex, FunctionStore]:
    """Which entry each kernel and Node came from, which functions each entry touches (its
    signature group and the functions borrowing it), and those functions."""
    kernel_owner, node_entry = owners
    by_schema = {str(f.func): f for f in model.native_functions}
    signature_groups: dict[str, list[str]] = {}
    for f in model.native_functions:
        signature_groups.setdefault(str(f.func.signature()), []).append(fkey[id(f)])
    dependents: list[list[str]] = [[] for _ in model.derivatives]
    for key, entry in dict.fromkeys(kernel_owner):
        if entry is not None:
            dependents[entry].append(key)
    entries = tuple(
        EntryRecord(
            c.digest,
            c.line,
            str(e.schema),
            tuple(s.dispatch_key for s in e.formula_sets),
            node_prefix(e.schema.name.name),
            str(by_schema[str(e.schema)].func.signature()),
            tuple(d),
        )
        for c, e, d in zip(chunks, model.derivatives, dependents, strict=True)
    )
    needed = {k for e in entries for k in signature_groups[e.group]} | {k for d in dependents for k in d}
    functions = FunctionStore(
        index.functions_token,
        tuple((fkey[id(f)], f) for f in model.native_functions if fkey[id(f)] in needed),
    )
    index = replace(
        index,
        entries=entries,
        kernel_owner=kernel_owner,
        node_entry=node_entry,
        signature_groups=tuple((g, tuple(fs)) for g, fs in signature_groups.items()),
        order=tuple(fkey[id(f)] for f in model.native_functions),
    )
    return index, functions


def incremental_run(
    inputs: Inputs,
    options: RunOptions,
    settings: dict[str, object],
    cache: tuple[Path, CacheIndex],
    explanations: list[str],
) -> Outcome | str:
    """The outputs after an edit of derivatives.yaml entries, or why a clean run is needed."""
    out_dir, index = cache
    why = _unusable(inputs, settings, index)
    if why is not None or index.entries is None:
        return why or "the previous run left no per-entry record"
    chunks = split_entries(read_text(inputs.derivatives))
    if chunks is None:
        return f"{inputs.derivatives} is not a plain list of entries"
    if len(chunks) != len(index.entries):
        return f"{inputs.derivatives}: entries added or removed"
    if options.line_directives and [e.line for e in index.entries] != [c.line for c in chunks]:
        return f"{inputs.derivatives}: entries moved (the #line directives of a check build follow them)"
    changed = [i for i, (c, e) in enumerate(zip(chunks, index.entries, strict=True)) if c.digest != e.digest]
    parsed: dict[int, DerivativeEntry] = {}
    for i in changed:
        try:
            entry = _parse_chunk(chunks[i], inputs.derivatives) if not _has_anchor(chunks[i]) else None
            if entry is None:
                return f"{inputs.derivatives}:{chunks[i].line + 1}: entry not parseable on its own"
            parsed[i] = DerivativeEntry.parse(entry)
        except VtgenError:  # which error comes first is the clean run's to say, whatever was edited when
            return f"{inputs.derivatives}:{chunks[i].line + 1}: an edited entry has an error"
        record = index.entries[i]
        if (
            str(parsed[i].schema) != record.schema
            or tuple(s.dispatch_key for s in parsed[i].formula_sets) != record.keys
        ):
            return f"{inputs.derivatives}:{chunks[i].line + 1}: schema or dispatch keys changed"
    outcome = _replan(inputs, options, (out_dir, index), chunks, changed, parsed)
    if isinstance(outcome, str):
        return outcome
    for i in changed:
        record = index.entries[i]
        who = ", ".join(f.split("::", 1)[1] for f in record.dependents) or "no kernel"
        explanations.append(f"{who}: {inputs.derivatives}:{chunks[i].line + 1} ('{record.schema}') changed")
    return replace(outcome, explanations=tuple(explanations))


def _unusable(inputs: Inputs, settings: dict[str, object], index: CacheIndex) -> str | None:
    if index.settings != _settings_key(settings):
        return "settings, templates or generator changed"
    if index.native != file_digest(inputs.native_functions):
        return f"{inputs.native_functions} changed"
    if index.tags != (file_digest(inputs.tags) if inputs.tags else None):
        return f"{inputs.tags} changed"
    return None


def _involved(entries: tuple[EntryRecord, ...], changed: list[int]) -> list[int]:
    """The entries to re-plan with the changed ones: their signature groups, and the earlier
    entries sharing their Node-name prefix (which decide their Nodes' numbers)."""
    changed_set = set(changed)
    prefixes = {entries[i].prefix for i in changed}
    groups = {entries[i].group for i in changed}
    last = max(changed, default=-1)
    return [
        i for i, e in enumerate(entries) if i in changed_set or (i < last and e.prefix in prefixes) or e.group in groups
    ]


def _mini_plan(
    inputs: Inputs,
    cache: tuple[Path, CacheIndex],
    chunks: list[Chunk],
    involved: list[int],
    parsed: dict[int, DerivativeEntry],
    fkeys: set[str],
) -> Plan | str:
    """Plan a model holding only the involved entries and the functions using them."""
    out_dir, index = cache
    stored = load_functions(out_dir, index.functions_token, fkeys)
    if stored is None:
        return "no usable cache"
    position = {k: i for i, k in enumerate(index.order)}
    try:
        for i in involved:
            if i not in parsed:
                entry = _parse_chunk(chunks[i], inputs.derivatives)
                if entry is None:
                    return "an unchanged entry does not parse on its own"
                parsed[i] = DerivativeEntry.parse(entry)
        functions = tuple(stored[k] for k in sorted(fkeys, key=position.__getitem__))
        mini = Model(index.entry_count, functions, tuple(parsed[i] for i in involved), index.tags_set)
        return _cpp_plan(mini, index.policy)
    except VtgenError as exc:
        return f"re-planning failed ({exc.message})"


def _replan(
    inputs: Inputs,
    options: RunOptions,
    cache: tuple[Path, CacheIndex],
    chunks: list[Chunk],
    changed: list[int],
    parsed: dict[int, DerivativeEntry],
) -> Outcome | str:
    out_dir, index = cache
    entries = index.entries or ()
    involved = _involved(entries, changed)
    groups = dict(index.signature_groups)
    wanted = {f for i in changed for f in entries[i].dependents}
    plan = _mini_plan(
        inputs, cache, chunks, involved, parsed, wanted | {k for i in involved for k in groups[entries[i].group]}
    )
    if isinstance(plan, str):
        return plan
    line_to_entry = {chunks[i].line + 1: i for i in involved}
    new_kernels = [k for k in plan.kernels if _fkey(k.function) in wanted]
    if any(k.view_of is not None and not k.modifies_arguments for k in new_kernels):
        return "a view op's entry changed (its ADInplaceOrView kernel follows its differentiability)"
    owners = [
        (_fkey(k.function), None if k.info is None else line_to_entry.get(k.info.location.line)) for k in new_kernels
    ]
    old_kernels = [p for p, (f, _) in enumerate(index.kernel_owner) if f in wanted]
    if owners != [index.kernel_owner[p] for p in old_kernels]:
        return "the edited entries' kernels changed shape"
    changed_set = set(changed)
    new_infos = [i for i in plan.infos if line_to_entry.get(i.location.line) in changed_set]
    old_nodes = [q for q, e in enumerate(index.node_entry) if e in changed_set]
    if sorted(str(i.node) for i in new_infos) != sorted(index.node_names[q] for q in old_nodes):
        return "the edited entries' Nodes changed (names or numbering)"
    emit = _emit_options(options, index.policy)
    kernel_updates = dict(zip(old_kernels, kernel_fragments(new_kernels, emit), strict=True))
    by_name = {f.node: f for f in node_fragments(new_infos, emit)}
    node_updates = {q: by_name[index.node_names[q]] for q in old_nodes}
    if any(f.shard != index.kernel_shard[p] for p, f in kernel_updates.items()):
        return "the edited entries' kernels changed shard"
    return _reassemble(
        out_dir, index, emit, (kernel_updates, node_updates), Plan(tuple(new_kernels), tuple(new_infos)), chunks
    )


def _slots(shards: Sequence[int]) -> list[int]:
    """Each item's position among the items of its shard."""
    seen: dict[int, int] = {}
    slots = []
    for shard in shards:
        slots.append(seen.get(shard, 0))
        seen[shard] = slots[-1] + 1
    return slots


def _reassemble(
    out_dir: Path,
    index: CacheIndex,
    emit: EmitOptions,
    updates: tuple[dict[int, KernelFragment], dict[int, NodeFragment]],
    plan: Plan,
    chunks: list[Chunk],
) -> Outcome | str:
    """Splice the new fragments into their shards' recorded ones and assemble those shards' files."""
    kernel_updates, node_updates = updates
    kernel_slots, node_slots = _slots(index.kernel_shard), _slots(index.node_shard)
    touched = {index.kernel_shard[p] for p in kernel_updates} | {index.node_shard[q] for q in node_updates}
    shards: dict[int, ShardFragments] = {}
    for shard in sorted(touched):
        loaded = load_shard(out_dir, shard, index.shard_tokens[shard])
        if loaded is None:
            return "no usable cache"
        kernels, nodes = list(loaded.kernels), list(loaded.nodes)
        for p, fragment in kernel_updates.items():
            if index.kernel_shard[p] == shard:
                kernels[kernel_slots[p]] = fragment
        for q, node in node_updates.items():
            if index.node_shard[q] == shard:
                nodes[node_slots[q]] = node
        shards[shard] = ShardFragments(_token(), tuple(kernels), tuple(nodes))
    node_shards = dict(zip(index.node_names, index.node_shard, strict=True))
    files: dict[str, str] = {}
    for shard in sorted({index.kernel_shard[p] for p in kernel_updates}):
        files[f"VariableType_{shard}.cpp"] = assemble_variable_type(
            shard, list(shards[shard].kernels), emit, node_shards
        )
    for shard in sorted({index.node_shard[q] for q in node_updates}):
        in_shard = list(shards[shard].nodes)
        files[f"Functions_{shard}.cpp"] = assemble_functions(shard, in_shard, emit)
        files[node_header_name(shard)] = assemble_node_header(shard, in_shard, emit)
    tokens = tuple(shards[k].token if k in shards else t for k, t in enumerate(index.shard_tokens))
    entries = tuple(
        e if (e.digest, e.line) == (c.digest, c.line) else replace(e, digest=c.digest, line=c.line)
        for e, c in zip(index.entries or (), chunks, strict=True)
    )
    new_index = replace(index, token=_token(), entries=entries, shard_tokens=tokens)
    cache = CacheWrite(new_index, tuple(sorted(shards.items())), None)
    return Outcome(tuple(sorted(files.items())), (), plan, (), cache, index.warnings)


def load_cache(out_dir: Path, token: object) -> CacheIndex | None:
    """The cache index of the run whose manifest holds ``token``; None when missing, damaged or another run's."""
    return load_index(out_dir, token)


def save_cache(out_dir: Path, cache: CacheWrite) -> str:
    """Write the cache files atomically, the index last; the manifest written after names its token."""
    return _save(out_dir, cache.index, cache.shards, cache.functions)
