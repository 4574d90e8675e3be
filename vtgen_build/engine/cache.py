"""The incremental cache on disk: frozen records, and their data-only encoding (``store`` files).

``.vtgen-cache/`` next to the outputs holds three kinds of state file:

* ``index`` (``CacheIndex``): per derivatives.yaml entry its text's hash, schema,
  keys, Node-name prefix, signature group and dependent functions; where each
  kernel and Node came from and which shard it lands in; the policy;
* ``functions_<b>`` (``FunctionStore``, in 16 buckets by key): the native functions
  an edit may re-plan; an edit reads only the buckets of the ones it needs and
  decodes only those;
* ``shard_<k>`` (``ShardFragments``): the rendered fragment of every kernel and
  Node of shard ``k``.

Every file carries a token and the index names the tokens of the others, so a run
killed between two of them leaves a cache that is simply not used.  Each decoder
checks every field (type, range, cross-references) and answers ``None`` for
anything else: a damaged or foreign cache is "no cache", never a crash.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..base import store
from ..base.errors import Location, VtgenError
from ..base.store import (
    JSON,
    Malformed,
    flag,
    integer,
    integers,
    items,
    maybe_integers,
    maybe_text,
    obj,
    pair,
    text,
    text_lists,
    texts,
)
from ..emit.files import KernelFragment, NodeFragment
from ..model.native import Dispatch, NativeFunction
from ..model.schema import FunctionSchema, OperatorName
from ..plan.policy import Policy

__all__ = [
    "CACHE",
    "INDEX",
    "CacheIndex",
    "EntryRecord",
    "FunctionStore",
    "ShardFragments",
    "load_functions",
    "load_index",
    "load_shard",
    "save",
]

CACHE = ".vtgen-cache"  # a directory: index, functions_<b>, shard_<k>
INDEX = "index"
_FUNCTIONS = "functions"
FORMAT = 4
_MAX_SHARDS = 1 << 16
_BUCKETS = 16  # files the function store is split into


@dataclass(frozen=True)
class EntryRecord:
    """What the cache knows of one derivatives.yaml entry."""

    digest: str  # of its text, as written
    line: int  # 0-based first line
    schema: str
    keys: tuple[str, ...]  # its autograd dispatch keys
    prefix: str  # Node-name prefix: entries sharing it number their Nodes together
    group: str  # signature of the function it names: every function of that group is re-planned with it
    dependents: tuple[str, ...]  # functions whose kernels use it ("ns::name")


@dataclass(frozen=True)
class CacheIndex:
    """The small part of the cache, read by every incremental run and rewritten by it."""

    token: str
    settings: str  # the run's settings, as JSON
    native: str  # sha256 of native_functions.yaml
    tags: str | None  # sha256 of tags.yaml
    entries: tuple[EntryRecord, ...] | None  # None: this derivatives.yaml cannot be updated piecewise
    shard_tokens: tuple[str, ...]  # the token each shard file must hold
    functions_token: str
    entry_count: int
    tags_set: frozenset[str]
    policy: Policy
    kernel_owner: tuple[tuple[str, int | None], ...]  # per kernel (plan order): function, entry used
    kernel_shard: tuple[int, ...]
    node_entry: tuple[int, ...]  # per Node (plan order): the entry it comes from
    node_names: tuple[str, ...]
    node_shard: tuple[int, ...]
    signature_groups: tuple[tuple[str, tuple[str, ...]], ...]  # signature -> functions, in model order
    order: tuple[str, ...]  # every function, in model order
    format: int = FORMAT
    warnings: tuple[str, ...] = ()  # the clean run's ``path:line: warning:`` lines: an edit keeps what they are about


@dataclass(frozen=True)
class ShardFragments:
    """The rendered kernels and Nodes of one shard, in plan order."""

    token: str
    kernels: tuple[KernelFragment, ...]
    nodes: tuple[NodeFragment, ...]


@dataclass(frozen=True)
class FunctionStore:
    """The native functions an edit may re-plan, by key (``ns::name``)."""

    token: str
    functions: tuple[tuple[str, NativeFunction], ...]


# -- encoding -----------------------------------------------------------------------------


def _codec(
    encode: Callable[[Any], JSON], decode: Callable[[JSON], Any]
) -> tuple[Callable[[Any], JSON], Callable[[JSON], Any]]:
    return encode, decode


def _same(value: Any) -> JSON:
    return value  # type: ignore[no-any-return]


def _sorted(value: Iterable[str]) -> JSON:
    return list[JSON](sorted(value))


def _schema(value: JSON) -> FunctionSchema:
    return FunctionSchema.parse(text(value))


def _op(value: JSON) -> OperatorName:
    return OperatorName.parse(text(value))


def _location(value: JSON) -> Location:
    file, line = pair(value)
    return Location(text(file), integer(line, 1))


def _frozen(value: JSON) -> frozenset[str]:
    return frozenset(texts(value))


def _maybe_flag(value: JSON) -> bool | None:
    return None if value is None else flag(value)


def _text_pairs(value: JSON) -> tuple[tuple[str, str], ...]:
    return tuple((text(a), text(b)) for a, b in map(pair, items(value)))


_NATIVE: dict[str, tuple[Callable[[Any], JSON], Callable[[JSON], Any]]] = {
    "func": _codec(str, _schema),
    "location": _codec(lambda v: [v.file, v.line], _location),
    "namespace": _codec(_same, text),
    "variants": _codec(_sorted, _frozen),
    "dispatch": _codec(lambda v: [[d.key, d.kernel] for d in v], lambda v: tuple(Dispatch(*p) for p in _text_pairs(v))),
    "structured": _codec(_same, flag),
    "structured_delegate": _codec(lambda v: None if v is None else str(v), lambda v: None if v is None else _op(v)),
    "structured_inherits": _codec(_same, maybe_text),
    "autogen": _codec(lambda v: [str(o) for o in v], lambda v: tuple(_op(o) for o in items(v))),
    "tags": _codec(_sorted, _frozen),
    "manual_kernel_registration": _codec(_same, flag),
    "manual_cpp_binding": _codec(_same, flag),
    "device_check": _codec(_same, text),
    "device_guard": _codec(_same, flag),
    "python_module": _codec(_same, maybe_text),
    "category_override": _codec(_same, maybe_text),
    "cpp_no_default_args": _codec(_sorted, _frozen),
    "precomputed": _codec(list, texts),
    "ufunc_inner_loop": _codec(lambda v: [list(p) for p in v], _text_pairs),
    "use_const_ref_for_mutable_tensors": _codec(_same, flag),
    "vmap": _codec(_same, text),
    "autocast": _codec(_same, maybe_text),
    "generated": _codec(_same, flag),
    "abstract_override": _codec(_same, _maybe_flag),
    "text": _codec(_same, text),
    "doc": _codec(_same, text),
}
_NATIVE_KEYS = tuple(_NATIVE)


def encode_function(f: NativeFunction) -> JSON:
    return {name: encode(getattr(f, name)) for name, (encode, _) in _NATIVE.items()}


def decode_function(value: JSON) -> NativeFunction:
    """The function ``encode_function`` wrote (raises Malformed for anything else)."""
    fields_ = obj(value, _NATIVE_KEYS)
    try:
        return NativeFunction(**{name: decode(fields_[name]) for name, (_, decode) in _NATIVE.items()})
    except VtgenError as exc:  # a schema or operator name that does not parse
        raise Malformed(exc.message) from None


def native_fields_covered() -> bool:
    """Does the codec cover every field of NativeFunction?  (A test keeps this true.)"""
    return set(_NATIVE) == {f.name for f in fields(NativeFunction)}


_POLICY_SCALARS = ("view_functions", "source")  # the Policy fields that are not sets of names


def _encode_policy(p: Policy) -> JSON:
    lists = (f.name for f in fields(Policy) if f.name not in _POLICY_SCALARS)
    out: dict[str, JSON] = {name: sorted(getattr(p, name)) for name in lists}
    out["view_functions"] = [list(v) for v in p.view_functions]
    out["source"] = p.source
    return out


def _decode_policy(value: JSON) -> Policy:
    names = tuple(f.name for f in fields(Policy))
    raw = obj(value, names)
    lists = {n: _frozen(raw[n]) for n in names if n not in _POLICY_SCALARS}
    source = raw["source"]
    if not isinstance(source, str):
        raise Malformed("policy source is not text")
    return Policy(**lists, view_functions=_text_pairs(raw["view_functions"]), source=source)


_ENTRY_COLUMNS = ("digest", "line", "schema", "keys", "prefix", "group", "dependents")


def _encode_entries(entries: tuple[EntryRecord, ...] | None) -> JSON:
    """Column by column (one list per field): the JSON is smaller and its check runs at C speed."""
    if entries is None:
        return None
    columns: dict[str, JSON] = {name: [] for name in _ENTRY_COLUMNS}
    for e in entries:
        for name in _ENTRY_COLUMNS:
            value = getattr(e, name)
            columns[name].append(list(value) if isinstance(value, tuple) else value)  # type: ignore[union-attr]
    return columns


def _decode_entries(value: JSON) -> tuple[EntryRecord, ...] | None:
    if value is None:
        return None
    raw = obj(value, _ENTRY_COLUMNS)
    digest, schema, prefix, group = (texts(raw[c]) for c in ("digest", "schema", "prefix", "group"))
    line = integers(raw["line"])
    keys, dependents = text_lists(raw["keys"]), text_lists(raw["dependents"])
    if len({len(c) for c in (digest, line, schema, keys, prefix, group, dependents)}) != 1:
        raise Malformed("entry columns")
    return tuple(map(EntryRecord, digest, line, schema, keys, prefix, group, dependents))


_INDEX_KEYS = (
    "token", "settings", "native", "tags", "entries", "shard_tokens", "functions_token", "entry_count",
    "tags_set", "policy", "kernel_function", "kernel_entry", "kernel_shard", "node_entry", "node_names",
    "node_shard", "group_signature", "group_functions", "order", "format", "warnings",
)  # fmt: skip


def _encode_index(i: CacheIndex) -> JSON:
    return {
        "token": i.token,
        "settings": i.settings,
        "native": i.native,
        "tags": i.tags,
        "entries": _encode_entries(i.entries),
        "shard_tokens": list(i.shard_tokens),
        "functions_token": i.functions_token,
        "entry_count": i.entry_count,
        "tags_set": _sorted(i.tags_set),
        "policy": _encode_policy(i.policy),
        "kernel_function": [f for f, _ in i.kernel_owner],
        "kernel_entry": [e for _, e in i.kernel_owner],
        "kernel_shard": list(i.kernel_shard),
        "node_entry": list(i.node_entry),
        "node_names": list(i.node_names),
        "node_shard": list(i.node_shard),
        "group_signature": [g for g, _ in i.signature_groups],
        "group_functions": [list(fs) for _, fs in i.signature_groups],
        "order": list(i.order),
        "format": i.format,
        "warnings": list(i.warnings),
    }


def _decode_index(value: JSON) -> CacheIndex:
    raw = obj(value, _INDEX_KEYS)
    entries = _decode_entries(raw["entries"])
    shard_tokens = texts(raw["shard_tokens"])
    shards, count = len(shard_tokens), len(entries or ())
    if not 1 <= shards <= _MAX_SHARDS:
        raise Malformed("shards")
    kernel_function, kernel_entry = texts(raw["kernel_function"]), maybe_integers(raw["kernel_entry"], 0, count)
    group_signature, group_functions = texts(raw["group_signature"]), text_lists(raw["group_functions"])
    if len(kernel_function) != len(kernel_entry) or len(group_signature) != len(group_functions):
        raise Malformed("index columns")
    index = CacheIndex(
        text(raw["token"]),
        text(raw["settings"]),
        text(raw["native"]),
        maybe_text(raw["tags"]),
        entries,
        shard_tokens,
        text(raw["functions_token"]),
        integer(raw["entry_count"]),
        _frozen(raw["tags_set"]),
        _decode_policy(raw["policy"]),
        tuple(zip(kernel_function, kernel_entry, strict=True)),
        integers(raw["kernel_shard"], 0, shards),
        integers(raw["node_entry"], 0, count),
        texts(raw["node_names"]),
        integers(raw["node_shard"], 0, shards),
        tuple(zip(group_signature, group_functions, strict=True)),
        texts(raw["order"]),
        integer(raw["format"]),
        texts(raw["warnings"]),
    )
    _check_index(index)
    return index


def _check_index(i: CacheIndex) -> None:
    """Cross-references an incremental run follows without further checks."""
    if i.format != FORMAT or len(i.node_names) != len(i.node_shard):
        raise Malformed("index shape")
    if i.entries is None:
        return
    if len(i.kernel_owner) != len(i.kernel_shard) or len(i.node_entry) != len(i.node_names):
        raise Malformed("index shape")
    known = set(i.order)
    groups = {g for g, _ in i.signature_groups}
    for e in i.entries:
        if e.group not in groups or not known.issuperset(e.dependents):
            raise Malformed("index references")
    if not known.issuperset(f for _, fs in i.signature_groups for f in fs):
        raise Malformed("index references")
    if not known.issuperset(f for f, _ in i.kernel_owner):
        raise Malformed("index references")


def _encode_shard(s: ShardFragments) -> JSON:
    kernels: list[JSON] = [[k.shard, k.body, k.namespace, k.dispatch_key, k.registration, k.node] for k in s.kernels]
    return {"token": s.token, "kernels": kernels, "nodes": [[n.node, n.shard, n.header, n.apply] for n in s.nodes]}


def _decode_kernel(value: JSON) -> KernelFragment:
    v = items(value)
    if len(v) != 6:
        raise Malformed("kernel")
    return KernelFragment(integer(v[0]), maybe_text(v[1]), text(v[2]), text(v[3]), text(v[4]), maybe_text(v[5]))


def _decode_node(value: JSON) -> NodeFragment:
    v = items(value)
    if len(v) != 4:
        raise Malformed("node")
    return NodeFragment(text(v[0]), integer(v[1]), text(v[2]), text(v[3]))


def _decode_shard(value: JSON) -> ShardFragments:
    raw = obj(value, ("token", "kernels", "nodes"))
    kernels = tuple(_decode_kernel(k) for k in items(raw["kernels"]))
    return ShardFragments(text(raw["token"]), kernels, tuple(_decode_node(n) for n in items(raw["nodes"])))


# -- reading and writing ------------------------------------------------------------------


def _decoded(path: Path, kind: str, decode: Callable[[JSON], Any], token: str | None) -> Any:
    """``decode`` of the state file at ``path`` if intact, well-formed and holding ``token``; else None."""
    if token is None:
        return None
    payload = store.read(path, kind)
    try:
        value = decode(payload)
    except (Malformed, RecursionError):
        return None
    return value if getattr(value, "token", None) == token else None


def load_index(out_dir: Path, token: object) -> CacheIndex | None:
    """The cache index of the run whose manifest holds ``token``; None when missing, damaged or another run's."""
    index = _decoded(out_dir / CACHE / INDEX, "cache_index", _decode_index, token if isinstance(token, str) else None)
    return index if isinstance(index, CacheIndex) else None


def load_shard(out_dir: Path, shard: int, token: str) -> ShardFragments | None:
    loaded = _decoded(out_dir / CACHE / f"shard_{shard}", "cache_shard", _decode_shard, token)
    return loaded if isinstance(loaded, ShardFragments) and all(k.shard == shard for k in loaded.kernels) else None


def _bucket(key: str) -> int:
    return binascii.crc32(key.encode()) % _BUCKETS


def load_functions(out_dir: Path, token: str, keys: Iterable[str]) -> dict[str, NativeFunction] | None:
    """The recorded functions named ``keys`` (reading only the buckets holding them); None when a
    bucket is unusable or lacks one of them."""
    wanted: dict[int, list[str]] = {}
    for key in keys:
        wanted.setdefault(_bucket(key), []).append(key)
    found: dict[str, NativeFunction] = {}
    for bucket, names in sorted(wanted.items()):
        payload = store.read(out_dir / CACHE / f"{_FUNCTIONS}_{bucket}", "cache_functions")
        try:
            raw = obj(payload, ("token", "functions"))
            recorded = raw["functions"]
            if text(raw["token"]) != token or not isinstance(recorded, dict):
                return None
            found.update((k, decode_function(recorded[k])) for k in names)
        except (Malformed, KeyError, RecursionError):
            return None
    return found


def save(
    out_dir: Path, index: CacheIndex, shards: Iterable[tuple[int, ShardFragments]], functions: FunctionStore | None
) -> str:
    """Write the cache files atomically, the index last; the manifest written after names its token."""
    folder = out_dir / CACHE
    if folder.is_symlink():  # never write (or delete) through a link out of the output directory
        folder.unlink()
    for stale in (out_dir / ".vtgen-cache.pickle", *folder.glob("*.pickle")):  # formats 1 and 2: never read
        stale.unlink(missing_ok=True)
    for shard, fragments in shards:
        store.write(folder / f"shard_{shard}", "cache_shard", _encode_shard(fragments))
    if functions is not None:  # in buckets: an edit reads the few holding the functions it re-plans
        buckets: list[dict[str, JSON]] = [{} for _ in range(_BUCKETS)]
        for key, f in functions.functions:
            buckets[_bucket(key)][key] = encode_function(f)
        for b, encoded in enumerate(buckets):
            payload: JSON = {"token": functions.token, "functions": encoded}
            store.write(folder / f"{_FUNCTIONS}_{b}", "cache_functions", payload)
    store.write(folder / INDEX, "cache_index", _encode_index(index))
    return index.token
