"""The manifest: what the last successful run read and wrote (a ``store`` state file, ``.vtgen-manifest.json``).

It records each input's size, mtime and content hash, the run's settings, the
stat of the generator's own files, every file written (size, content hash and
the stat signature it had just after the run) and the cache token.  The file is
untrusted like every state file: the decoder checks every field, and a path in
``files`` must be a name the generator writes (``write.is_output_name``), so a
tampered manifest can neither point a deletion outside the output directory nor
crash the run; it simply reads as "no manifest" (a clean run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..base import store
from ..base.store import JSON, Malformed, integer, items, maybe_text, obj, text
from ..base.write import is_output_name

__all__ = [
    "MANIFEST",
    "FileRecord",
    "InputRecord",
    "Manifest",
    "file_stamp",
    "inputs_digest",
    "read_manifest",
    "write_manifest",
]

MANIFEST = ".vtgen-manifest.json"
_KIND = "manifest"
_FORMAT = 3


@dataclass(frozen=True)
class InputRecord:
    path: str  # as the user gave it
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class FileRecord:
    path: str  # relative to the output directory
    size: int
    sha256: str
    stamp: str  # ``file_stamp`` just after the run: while it holds, the content is not re-hashed


@dataclass(frozen=True)
class Manifest:
    settings: str  # the run's settings, canonical JSON
    generator: str  # digest of the generator's files (reused while their stats hold)
    generator_stats: tuple[tuple[str, int, int], ...]  # (path relative to the package, size, mtime_ns)
    inputs: tuple[InputRecord, ...]
    files: tuple[FileRecord, ...]
    cache: str | None  # token of the cache written with it

    def input(self, path: str) -> InputRecord | None:
        return next((r for r in self.inputs if r.path == path), None)


file_stamp = store.stat_signature  # what changes when a file is rewritten, edited in place or replaced


def _encode(m: Manifest) -> JSON:
    return {
        "format": _FORMAT,
        "settings": m.settings,
        "generator": m.generator,
        "generator_stats": [list(s) for s in m.generator_stats],
        "inputs": [[r.path, r.size, r.mtime_ns, r.sha256] for r in m.inputs],
        "files": [[f.path, f.size, f.sha256, f.stamp] for f in m.files],
        "cache": m.cache,
    }


def _quad(value: JSON) -> list[JSON]:
    v = items(value)
    if len(v) != 4:
        raise Malformed("record")
    return v


def _file(value: JSON) -> FileRecord:
    path, size, sha, stamp = _quad(value)
    if not is_output_name(text(path)):
        raise Malformed("not an output name")
    return FileRecord(text(path), integer(size), text(sha), text(stamp))


def _generator_stat(value: JSON) -> tuple[str, int, int]:
    v = items(value)
    if len(v) != 3:
        raise Malformed("stat")
    return text(v[0]), integer(v[1]), integer(v[2], -(2**63))


def _decode(value: JSON) -> Manifest:
    raw = obj(value, ("format", "settings", "generator", "generator_stats", "inputs", "files", "cache"))
    if integer(raw["format"]) != _FORMAT:
        raise Malformed("format")
    inputs = tuple(
        InputRecord(text(p), integer(s), integer(t, -(2**63)), text(h))
        for p, s, t, h in map(_quad, items(raw["inputs"]))
    )
    files = tuple(_file(f) for f in items(raw["files"]))
    if len({f.path for f in files}) != len(files) or len({r.path for r in inputs}) != len(inputs):
        raise Malformed("duplicates")
    stats = tuple(_generator_stat(s) for s in items(raw["generator_stats"]))
    return Manifest(text(raw["settings"]), text(raw["generator"]), stats, inputs, files, maybe_text(raw["cache"]))


def read_manifest(out_dir: Path) -> Manifest | None:
    """The manifest of the last run in ``out_dir``; None when missing, damaged or of another format."""
    try:
        return _decode(store.read(out_dir / MANIFEST, _KIND))
    except (Malformed, RecursionError):
        return None


def inputs_digest(out_dir: Path) -> str:
    """The SHA-256 of the settings and input contents the manifest in ``out_dir`` records ("": none): what
    the last run's outputs were made from.  The records of the outputs written beside the directory (the
    Python modules) hold it: one made before a run that changed them (even a run stopped before it wrote
    those outputs) no longer matches."""
    manifest = read_manifest(out_dir)
    if manifest is None:
        return ""
    parts = [manifest.settings, *(f"{r.path}\0{r.sha256}" for r in manifest.inputs)]
    return store.sha256_hex("\0".join(parts).encode("utf-8", "surrogateescape"))


def write_manifest(out_dir: Path, manifest: Manifest) -> None:
    store.write(out_dir / MANIFEST, _KIND, _encode(manifest))
