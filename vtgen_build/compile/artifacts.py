"""The one cache of compiled artifacts: objects, precompiled headers, linked libraries, check results.

One rule for all of them.  An entry's *key* (``artifact_key``, the one key function) digests
what is known before compiling: the compiler's identity (path, ``--version`` output, size,
mtime), the exact command line, the target release and the source text.  A compile that
wrote no depfile (``read_depfile``: None) is used but never cached.  The entry holds every file the
compiler read (its ``-MD`` output: user headers whatever flag found them, system
headers, torch's) with one digest of their content, and the SHA-256 of the artifact
the compile produced (none for a check result: "this unit passed").  A lookup
verifies both by content (a file unchanged since it was last hashed, by its stat signature, is
not read again: ``DigestMemo``): a changed header, a missing file, another compiler or flags, or an
artifact whose bytes are not the ones recorded (truncated, replaced, planted) is a
miss; the entry and its artifact are dropped and the caller rebuilds.  An artifact is
therefore never used, loaded or counted as a pass unless it is the very file this
cache saw the compiler write.

Layout of a cache directory: ``index`` (a data-only, hash-checked ``store`` file;
damaged, it reads as an empty cache) and one directory per artifact, ``<key>/<name>``.
The cache is bounded: beyond ``limit`` entries or ``max_bytes`` of artifacts the least
recently used entries are evicted and their directories removed, never one this
process used (a build may need more than the bound at once).  Two processes sharing a
cache each write the index whole, so the last one wins and the other's new entries are
lost (a later miss, never a wrong hit); directories no entry names are swept once they
are an hour old.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..base import store
from ..base.store import JSON, Malformed

__all__ = [
    "ArtifactCache",
    "DigestMemo",
    "FileDigests",
    "Hit",
    "artifact_key",
    "parse_depfile",
    "read_depfile",
    "remove_legacy",
]

KIND = "compiled_artifacts"
INDEX = "index"
LIMIT = 512  # entries
MAX_BYTES = 4 << 30  # of artifacts
_KEY = re.compile(r"[0-9a-f]{16,64}")
_ORPHAN_SECONDS = 3600
_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]*")


MEMO = "digests"  # <root>/digests: each file's stat signature and digest (``DigestMemo``)
MEMO_KIND = "file_digests"
MEMO_LIMIT = 50_000  # files remembered
_RACY_NS = 2_000_000_000  # a file changed this recently is always read (its times may not move on the next edit)


@dataclass
class DigestMemo:
    """Each file's digest from earlier runs, with the stat signature it had (size, mtime, ctime, inode): a
    file whose signature is the one recorded is not read again.  Editing, replacing or rewriting a file (even
    to the same size and mtime) changes its ctime, so its next lookup reads it; so does a file modified in
    the last two seconds (its next edit may keep its mtime).  The memo is a ``store`` file: damaged, it is
    empty and every file is read."""

    known: dict[str, tuple[str, str]] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    changed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, path: Path) -> DigestMemo:
        data = store.read(path, MEMO_KIND)
        files = data.get("files") if isinstance(data, dict) else None
        known: dict[str, tuple[str, str]] = {}
        for name, row in files.items() if isinstance(files, dict) else ():
            if not (isinstance(row, list) and len(row) == 2 and all(isinstance(v, str) for v in row)):
                return cls()
            known[name] = (str(row[0]), str(row[1]))
        return cls(known)

    def sha256(self, path: str | Path) -> str | None:
        """``path``'s content digest: remembered when its signature is unchanged, else read (None: unreadable)."""
        name = str(path)
        before = _signature(name)
        with self.lock:
            self.used.add(name)
            hit = self.known.get(name)
        if before is None:
            return None
        if hit is not None and hit[0] == before[0]:
            return hit[1]
        digest = store.file_sha256(name)
        after = _signature(name)
        if digest is not None and after == before and time.time_ns() - before[1] > _RACY_NS:
            with self.lock:
                self.known[name] = (before[0], digest)
                self.changed = True
        return digest

    def save(self, path: Path) -> None:
        """Write the memo when it learned something: the files used this run first, then others to the limit."""
        with self.lock:
            if not self.changed:
                return
            order = sorted(self.known, key=lambda n: (n not in self.used, n))[:MEMO_LIMIT]
            files: dict[str, JSON] = {n: list(self.known[n]) for n in order}
            self.changed = False
        store.write(path, MEMO_KIND, {"files": files})


def _signature(path: str) -> tuple[str, int] | None:
    """The stat signature of ``path`` and when it last changed (the later of mtime and ctime, in ns; the
    kernel's file clock is coarse: a write just after a stat may leave both where they were); None when it
    is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    signature = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}"
    return signature, max(st.st_mtime_ns, st.st_ctime_ns)


@dataclass
class FileDigests:
    """The content digest of each file, read at most once per run (thread-safe); through ``memo`` (the
    cache's), not read at all when unchanged since an earlier run."""

    memo: DigestMemo = field(default_factory=DigestMemo)
    known: dict[str, str | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, path: str) -> str | None:
        with self.lock:
            if path in self.known:
                return self.known[path]
        digest = self.memo.sha256(path)
        with self.lock:
            self.known[path] = digest
        return digest

    def of_all(self, paths: list[str] | tuple[str, ...]) -> str | None:
        """One digest of ``paths`` and their content; None when one cannot be read."""
        parts: list[str] = []
        for path in sorted(set(paths)):
            digest = self.of(path)
            if digest is None:
                return None
            parts.append(f"{path}\0{digest}\n")
        return store.sha256_hex("".join(parts).encode("utf-8", "surrogateescape"))


def artifact_key(
    kind: str, compiler: str, flags: Sequence[str], release: str, text: str | bytes, parts: Sequence[str] = ()
) -> str:
    """The one key rule of every artifact (check result, precompiled header, object, library, analysis):
    its kind, the compiler's identity, the exact flags, the target release, the unit's text (a header
    prefix, a link's version script, a query), and ``parts`` (the digests of the artifacts it is made
    of, a torch version).  The full SHA-256 of them, each part length-prefixed so none can run into the
    next.  What the build *read* (headers, libraries) is not in the key: the entry holds it and every
    lookup verifies it by content."""
    h = hashlib.sha256()
    data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    for part in (kind, compiler, *flags, "\0flags-end", release, *parts, "\0parts-end"):
        encoded = part.encode("utf-8", "surrogateescape")
        h.update(len(encoded).to_bytes(8, "little") + encoded)
    h.update(data)
    return h.hexdigest()


def read_depfile(path: Path) -> list[str] | None:
    """The files a compile read, from the depfile it wrote (``-MD -MF``); None when there is none or it
    does not read.  The one rule for every compile: without it what was read is unknown, so the artifact
    is used but never cached (the caller says so in a note)."""
    try:
        return parse_depfile(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a Make-style depfile written by ``-MD -MF`` (the first is the source).

    Handles what compilers escape: ``\\ `` (a space in a path), ``\\#``, ``\\\\``, ``$$`` and
    line continuations.
    """
    body = text.replace("\\\r\n", " ").replace("\\\n", " ")
    _, _, deps = body.partition(": ")
    words: list[str] = []
    current = ""
    i = 0
    while i < len(deps):
        c = deps[i]
        if c == "\\" and i + 1 < len(deps) and deps[i + 1] in " #\\":
            current += deps[i + 1]
            i += 2
            continue
        if c == "$" and deps[i + 1 : i + 2] == "$":
            current += "$"
            i += 2
            continue
        if c.isspace():
            if current:
                words.append(current)
            current = ""
        else:
            current += c
        i += 1
    if current:
        words.append(current)
    return words


def remove_legacy(work: Path, names: tuple[str, ...]) -> None:
    """Remove what earlier versions cached in ``work`` under ``names``: never read (it was never verified)."""
    for name in names:
        path = work / name
        if path.is_symlink() or path.is_file():
            path.unlink(missing_ok=True)
        elif path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class _Entry:
    deps: tuple[str, ...]
    digest: str  # FileDigests.of_all(deps) when it was built
    name: str | None  # the artifact's file name in <root>/<key>/ (None: a check result)
    sha256: str | None  # the artifact's content
    size: int
    used: int


@dataclass(frozen=True)
class Hit:
    """A verified entry: its artifact (None for a check result) and the files it read."""

    path: Path | None
    sha256: str | None
    deps: tuple[str, ...]


def _decode(data: JSON) -> dict[str, _Entry]:
    body = store.obj(data, ("entries", "paths"))
    paths = store.texts(body["paths"])
    raw = body["entries"]
    if not isinstance(raw, dict):
        raise Malformed("entries")
    entries: dict[str, _Entry] = {}
    for key, value in raw.items():
        e = store.obj(value, ("deps", "digest", "name", "sha256", "size", "used"))
        name, sha = store.maybe_text(e["name"]), store.maybe_text(e["sha256"])
        if (
            not _KEY.fullmatch(key)
            or (name is not None and not _NAME.fullmatch(name))
            or (name is None) != (sha is None)
        ):
            raise Malformed("entry")
        deps = tuple(paths[i] for i in store.integers(e["deps"], 0, len(paths)))
        size, used = store.integer(e["size"]), store.integer(e["used"])
        entries[key] = _Entry(deps, store.text(e["digest"]), name, sha, size, used)
    return entries


@dataclass
class ArtifactCache:
    """One cache directory (see the module docstring); one instance per run, shared by its threads."""

    root: Path
    limit: int = LIMIT
    max_bytes: int = MAX_BYTES
    entries: dict[str, _Entry] = field(default_factory=dict)
    clock: int = 0
    used_now: set[str] = field(default_factory=set)  # never evicted by this process
    lock: threading.Lock = field(default_factory=threading.Lock)
    damaged: bool = False  # the index was there but did not read (damaged, or another version's): empty
    memo: DigestMemo = field(default_factory=DigestMemo)  # the files' digests of earlier runs (``DigestMemo``)

    @classmethod
    def open(cls, root: Path, limit: int = LIMIT, max_bytes: int = MAX_BYTES) -> ArtifactCache:
        cache = cls(root, limit, max_bytes)
        data = store.read(root / INDEX, KIND)
        try:
            cache.entries = _decode(data) if data is not None else {}
        except Malformed:
            data = None
        cache.damaged = data is None and (root / INDEX).exists()
        cache.clock = max((e.used for e in cache.entries.values()), default=0)
        cache.memo = DigestMemo.load(root / MEMO)
        return cache

    def digests(self) -> FileDigests:
        """A run's file digests, through this cache's memo."""
        return FileDigests(self.memo)

    def place(self, key: str, name: str) -> Path:
        """Where the artifact ``name`` of ``key`` is to be written (its directory exists)."""
        if not _KEY.fullmatch(key) or not _NAME.fullmatch(name):
            raise ValueError(f"not a cache key and file name: {key!r} {name!r}")
        where = self.root / key
        if where.is_symlink() or (where.exists() and not where.is_dir()):
            where.unlink()  # planted: never written through
        where.mkdir(parents=True, exist_ok=True)
        return where / name

    def lookup(self, key: str, files: FileDigests) -> Hit | None:
        """The entry of ``key`` when every file it read and its artifact are what was recorded."""
        with self.lock:
            entry = self.entries.get(key)
        if entry is None or files.of_all(entry.deps) != entry.digest:
            return None
        path = self.root / key / entry.name if entry.name is not None else None
        if path is not None and (path.is_symlink() or self.memo.sha256(path) != entry.sha256):
            self.forget(key)  # damaged, replaced or planted: never used, rebuilt
            return None
        with self.lock:
            self.clock += 1
            self.entries[key] = _Entry(entry.deps, entry.digest, entry.name, entry.sha256, entry.size, self.clock)
            self.used_now.add(key)
        return Hit(path, entry.sha256, entry.deps)

    def record(self, key: str, deps: list[str], files: FileDigests, artifact: Path | None = None) -> Hit | None:
        """``key`` was built having read ``deps`` (into ``artifact``, written by ``place``); saved at once.

        None when a file it read (or the artifact) cannot be read: nothing is recorded then.
        """
        digest = files.of_all(deps)
        sha = self.memo.sha256(artifact) if artifact is not None else None
        if artifact is not None and artifact != self.root / key / artifact.name:
            raise ValueError(f"{artifact} is not the place of {key}")
        if digest is None or (artifact is not None and sha is None):
            self.forget(key)
            return None
        size = artifact.stat().st_size if artifact is not None else 0
        kept = tuple(sorted(set(deps)))
        with self.lock:
            self.clock += 1
            name = artifact.name if artifact is not None else None
            self.entries[key] = _Entry(kept, digest, name, sha, size, self.clock)
            self.used_now.add(key)
            self._save()
        return Hit(artifact, sha, kept)

    def forget(self, key: str) -> None:
        """Drop ``key`` and its artifact (a failed or damaged build)."""
        with self.lock:
            self.entries.pop(key, None)
            self._remove(key)
            self._save()

    def save(self) -> None:
        """Write the hits' new recency (once, at the end of a run); sweep what no entry names."""
        with self.lock:
            self._save()
            self._sweep()
        self.memo.save(self.root / MEMO)

    def _sweep(self) -> None:
        """Artifact directories no entry names (a lost or damaged index), untouched for an hour: removed.

        (A younger one may be another process's build in progress.)
        """
        cutoff = time.time() - _ORPHAN_SECONDS
        try:
            listing = [d for d in self.root.iterdir() if d.name not in self.entries and _KEY.fullmatch(d.name)]
            old = [d.name for d in listing if d.is_dir() and d.lstat().st_mtime < cutoff]
        except OSError:
            return
        for key in old:
            self._remove(key)

    def _remove(self, key: str) -> None:
        where = self.root / key
        if _KEY.fullmatch(key) and where.is_dir() and not where.is_symlink():
            shutil.rmtree(where, ignore_errors=True)

    def _save(self) -> None:
        kept: dict[str, _Entry] = {}
        size = 0
        for key, e in sorted(self.entries.items(), key=lambda kv: (-kv[1].used, kv[0])):
            if key in self.used_now or (len(kept) < self.limit and size + e.size <= self.max_bytes):
                kept[key] = e
                size += e.size
            else:
                self._remove(key)  # least recently used beyond the bounds: evicted
        self.entries = kept
        paths = sorted({p for e in kept.values() for p in e.deps})
        number = {p: i for i, p in enumerate(paths)}
        entries: dict[str, JSON] = {
            k: {
                "deps": [number[p] for p in e.deps],
                "digest": e.digest,
                "name": e.name,
                "sha256": e.sha256,
                "size": e.size,
                "used": e.used,
            }
            for k, e in kept.items()
        }
        self.root.mkdir(parents=True, exist_ok=True)
        store.write(self.root / INDEX, KIND, {"paths": list(paths), "entries": entries})
