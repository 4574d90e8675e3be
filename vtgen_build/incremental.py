"""Incremental regeneration: redo only the ops an edit of ``derivatives.yaml`` touches.

A clean run (``full_run``) records, next to the outputs, a cache holding

* the hash of every derivatives.yaml entry's own text, its schema, autograd keys
  and Node-name prefix, and the signature group of the function it names;
* which native functions use the infos of which entry (their kernels, including
  in-place / out= / ``_foreach_`` / ``_copy`` variants borrowing it), pickled one
  by one so an edit unpickles only the ones it needs;
* the rendered fragment of every kernel and Node (``emit.files``), so unchanged
  ops are reassembled without being planned or rendered again.

``incremental_run`` handles an edit that keeps the file's *structure* (same
entries in the same order, same schemas and keys): it parses only the changed
entries, plans a small model holding them, the functions using them, their
signature groups and every earlier entry sharing their Node-name prefix (so
``AddBackward1`` keeps its number), checks that the result has exactly the
shape recorded (same kernels per function, same Nodes per entry), and
reassembles the shards those land in.  Anything else -- a native_functions.yaml
or tags.yaml edit, an added, removed or moved entry, a schema change, a Node
appearing or vanishing, a parse error, a cache from another version -- returns
``None`` and the caller runs the clean path, whose output is the reference.
"""

from __future__ import annotations

import hashlib
import pickle
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .emit.files import (
    EmitOptions,
    KernelFragment,
    NodeFragment,
    assemble_functions,
    assemble_node_header,
    assemble_outputs,
    assemble_variable_type,
    kernel_fragments,
    node_fragments,
)
from .errors import VtgenError
from .inputs import Inputs
from .load import Entry, load_text, read_text
from .model import Model, load_model
from .model.derivatives import DerivativeEntry
from .model.native import NativeFunction
from .plan.infos import node_prefix
from .plan.kernel import Plan, build_plan
from .plan.policy import Policy, load_policy
from .stubs.gen_decls import render_decls

__all__ = ["CACHE", "Outcome", "full_run", "incremental_run", "split_entries"]

CACHE = ".vtgen-cache.pickle"
_FORMAT = 1

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

    @property
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


@dataclass
class Outcome:
    """What a run produced: files to write (path → content), and what was re-planned."""

    files: dict[str, str]
    all_files: list[str]  # the whole output file set
    plan: Plan
    explanations: list[str]
    cache: dict[str, Any] = field(repr=False)


def _fkey(f: NativeFunction) -> str:
    return f"{f.namespace}::{f.name}"


def _emit_options(options: Any, policy: Policy) -> EmitOptions:
    views = frozenset(n for n, _ in policy.view_functions)
    return EmitOptions(
        options.shards,
        options.manual_headers,
        views,
        options.using_namespaces,
        getattr(options, "line_directives", False),
    )


def full_run(inputs: Inputs, options: Any, settings: dict[str, object], explanations: list[str]) -> Outcome:
    """Load, plan and render everything; record what an incremental run needs."""
    model = load_model(inputs)
    policy = load_policy()
    plan = build_plan(model, policy)
    emit = _emit_options(options, policy)
    kernels = kernel_fragments(plan.kernels, emit)
    nodes = node_fragments(plan.infos, emit)
    files = assemble_outputs(kernels, nodes, emit)
    if getattr(options, "stub_decls", False):
        files.update(render_decls(model.native_functions))  # declarations the stub headers include
    cache = _record(inputs, settings, model, policy, plan, kernels, nodes)
    return Outcome(files, sorted(files), plan, explanations, cache)


def _record(
    inputs: Inputs,
    settings: dict[str, object],
    model: Model,
    policy: Policy,
    plan: Plan,
    kernels: list[KernelFragment],
    nodes: list[NodeFragment],
) -> dict[str, Any]:
    """The cache of a clean run (``incremental`` is False when edits cannot be handled piecewise)."""
    base = {
        "format": _FORMAT,
        "settings": settings,
        "native": _file_digest(inputs.native_functions),
        "tags": _file_digest(inputs.tags) if inputs.tags else None,
    }
    chunks = split_entries(read_text(inputs.derivatives))
    usable = (
        chunks is not None
        and len(chunks) == len(model.derivatives)
        and all(c.line + 1 == e.location.line for c, e in zip(chunks, model.derivatives, strict=False))
        and not any(_has_anchor(c) for c in chunks)
    )
    if not usable or chunks is None:
        return {**base, "incremental": False, "kernels": kernels, "nodes": nodes}
    index_of_line = {e.location.line: i for i, e in enumerate(model.derivatives)}

    def entry_of(location: Any) -> int:
        if location.file != inputs.derivatives or location.line not in index_of_line:
            raise LookupError(location)
        return index_of_line[location.line]

    try:
        tables = _dependency_tables(model, plan, entry_of)
    except LookupError:
        return {**base, "incremental": False, "kernels": kernels, "nodes": nodes}
    return {
        **base,
        **tables,
        "incremental": True,
        "digests": [c.digest for c in chunks],
        "lines": [c.line for c in chunks],
        "schemas": [str(e.schema) for e in model.derivatives],
        "keys": [_keys(e) for e in model.derivatives],
        "prefixes": [_prefix(e) for e in model.derivatives],
        "tags_set": model.tags,
        "entry_count": model.entry_count,
        "policy": policy,
        "kernels": kernels,
        "nodes": nodes,
    }


def _dependency_tables(model: Model, plan: Plan, entry_of: Any) -> dict[str, Any]:
    """Which derivatives.yaml entry each kernel and Node came from, and which functions each entry
    touches (its signature group and the functions borrowing it), with those functions pickled."""
    by_schema = {str(f.func): f for f in model.native_functions}
    signature_groups: dict[str, list[str]] = {}
    for f in model.native_functions:
        signature_groups.setdefault(str(f.func.signature()), []).append(_fkey(f))
    kernel_owner = [(_fkey(k.function), None if k.info is None else entry_of(k.info.location)) for k in plan.kernels]
    groups = [str(by_schema[str(e.schema)].func.signature()) for e in model.derivatives]
    dependents: list[list[str]] = [[] for _ in model.derivatives]
    for fkey, entry in dict.fromkeys(kernel_owner):
        if entry is not None:
            dependents[entry].append(fkey)
    needed = {k for g in groups for k in signature_groups[g]} | {k for d in dependents for k in d}
    return {
        "kernel_owner": kernel_owner,
        "node_entry": [entry_of(i.location) for i in plan.infos],
        "groups": groups,
        "signature_groups": signature_groups,
        "dependents": dependents,
        "order": {_fkey(f): i for i, f in enumerate(model.native_functions)},
        "functions": {
            _fkey(f): pickle.dumps(f, pickle.HIGHEST_PROTOCOL) for f in model.native_functions if _fkey(f) in needed
        },
    }


def _keys(entry: DerivativeEntry) -> tuple[str, ...]:
    return tuple(s.dispatch_key for s in entry.formula_sets)


def _prefix(entry: DerivativeEntry) -> str:
    return node_prefix(str(entry.schema.name).split(".")[0])


def _file_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def incremental_run(
    inputs: Inputs, options: Any, settings: dict[str, object], cache: dict[str, Any], explanations: list[str]
) -> Outcome | str:
    """The outputs after an edit of derivatives.yaml entries, or why a clean run is needed."""
    if cache.get("format") != _FORMAT or cache.get("settings") != settings:
        return "settings, templates or generator changed"
    if not cache.get("incremental"):
        return "the previous run left no per-entry record"
    if cache["native"] != _file_digest(inputs.native_functions):
        return f"{inputs.native_functions} changed"
    if cache["tags"] != (_file_digest(inputs.tags) if inputs.tags else None):
        return f"{inputs.tags} changed"
    chunks = split_entries(read_text(inputs.derivatives))
    if chunks is None:
        return f"{inputs.derivatives} is not a plain list of entries"
    if len(chunks) != len(cache["digests"]):
        return f"{inputs.derivatives}: entries added or removed"
    if getattr(options, "line_directives", False) and cache.get("lines") != [c.line for c in chunks]:
        return f"{inputs.derivatives}: entries moved (the #line directives of a check build follow them)"
    changed = [i for i, (c, d) in enumerate(zip(chunks, cache["digests"], strict=False)) if c.digest != d]
    parsed: dict[int, DerivativeEntry] = {}
    for i in changed:
        entry = _parse_chunk(chunks[i], inputs.derivatives) if not _has_anchor(chunks[i]) else None
        if entry is None:
            return f"{inputs.derivatives}:{chunks[i].line + 1}: entry not parseable on its own"
        parsed[i] = DerivativeEntry.parse(entry)
        if str(parsed[i].schema) != cache["schemas"][i] or _keys(parsed[i]) != tuple(cache["keys"][i]):
            return f"{inputs.derivatives}:{chunks[i].line + 1}: schema or dispatch keys changed"
    outcome = _replan(inputs, options, cache, chunks, changed, parsed)
    if isinstance(outcome, str):
        return outcome
    for i in changed:
        who = ", ".join(f.split("::", 1)[1] for f in cache["dependents"][i]) or "no kernel"
        explanations.append(f"{who}: {inputs.derivatives}:{chunks[i].line + 1} ('{cache['schemas'][i]}') changed")
    cache["digests"] = [c.digest for c in chunks]
    cache["lines"] = [c.line for c in chunks]
    outcome.explanations = explanations
    return outcome


def _replan(
    inputs: Inputs,
    options: Any,
    cache: dict[str, Any],
    chunks: list[Chunk],
    changed: list[int],
    parsed: dict[int, DerivativeEntry],
) -> Outcome | str:
    prefixes, groups = cache["prefixes"], cache["groups"]
    changed_set = set(changed)
    wanted_prefixes = {prefixes[i] for i in changed}
    wanted_groups = {groups[i] for i in changed}
    last = max(changed, default=-1)
    involved = [
        i
        for i in range(len(chunks))
        if i in changed_set or (i < last and prefixes[i] in wanted_prefixes) or groups[i] in wanted_groups
    ]
    dependents = [f for i in changed for f in cache["dependents"][i]]
    fkeys = set(dependents) | {k for i in involved for k in cache["signature_groups"][groups[i]]}
    try:
        for i in involved:
            if i not in parsed:
                entry = _parse_chunk(chunks[i], inputs.derivatives)
                if entry is None:
                    return "an unchanged entry does not parse on its own"
                parsed[i] = DerivativeEntry.parse(entry)
        functions = tuple(pickle.loads(cache["functions"][k]) for k in sorted(fkeys, key=cache["order"].__getitem__))
        mini = Model(cache["entry_count"], functions, tuple(parsed[i] for i in involved), cache["tags_set"])
        plan = build_plan(mini, cache["policy"])
    except VtgenError as exc:
        return f"re-planning failed ({exc.message})"
    line_to_entry = {chunks[i].line + 1: i for i in involved}
    wanted = set(dependents)
    new_kernels = [k for k in plan.kernels if _fkey(k.function) in wanted]
    owners = [
        (_fkey(k.function), None if k.info is None else line_to_entry.get(k.info.location.line)) for k in new_kernels
    ]
    old_positions = [p for p, (fkey, _) in enumerate(cache["kernel_owner"]) if fkey in wanted]
    if owners != [cache["kernel_owner"][p] for p in old_positions]:
        return "the edited entries' kernels changed shape"
    new_infos = [i for i in plan.infos if line_to_entry.get(i.location.line) in changed_set]
    old_nodes = [p for p, e in enumerate(cache["node_entry"]) if e in changed_set]
    if sorted(i.node for i in new_infos) != sorted(cache["nodes"][p].node for p in old_nodes):  # type: ignore[type-var]
        return "the edited entries' Nodes changed (names or numbering)"
    emit = _emit_options(options, cache["policy"])
    kernels, nodes = list(cache["kernels"]), list(cache["nodes"])
    for p, fragment in zip(old_positions, kernel_fragments(new_kernels, emit), strict=False):
        kernels[p] = fragment
    by_name = {f.node: f for f in node_fragments(new_infos, emit)}
    for p in old_nodes:
        nodes[p] = by_name[nodes[p].node]
    files: dict[str, str] = {}
    node_shards = {n.node: n.shard for n in nodes}
    for shard in sorted({kernels[p].shard for p in old_positions}):
        files[f"VariableType_{shard}.cpp"] = assemble_variable_type(
            shard, [k for k in kernels if k.shard == shard], emit, node_shards
        )
    for shard in sorted({nodes[p].shard for p in old_nodes}):
        in_shard = [n for n in nodes if n.shard == shard]
        files[f"Functions_{shard}.cpp"] = assemble_functions(shard, in_shard, emit)
        files[f"Functions_{shard}.h"] = assemble_node_header(shard, in_shard, emit)
    cache["kernels"], cache["nodes"] = kernels, nodes
    return Outcome(files, [], Plan(tuple(new_kernels), tuple(new_infos)), [], cache)


def load_cache(out_dir: Path, token: object) -> dict[str, Any] | None:
    """The cache of the run whose manifest holds ``token``; None when missing, torn or another run's."""
    try:
        with open(out_dir / CACHE, "rb") as handle:
            cache = pickle.load(handle)
    except Exception:
        return None
    if not isinstance(cache, dict) or cache.get("token") is None or cache.get("token") != token:
        return None
    return cache


def save_cache(out_dir: Path, cache: dict[str, Any]) -> str:
    """Write the cache atomically under a fresh token (the manifest written after it names the token)."""
    from .write import write_atomic_bytes

    cache["token"] = secrets.token_hex(16)
    write_atomic_bytes(out_dir / CACHE, pickle.dumps(cache, pickle.HIGHEST_PROTOCOL))
    return str(cache["token"])
