"""Results cached by content: a unit that passed is not compiled again until something it reads changes.

An entry is keyed by a digest of the unit's text, the compiler's identity and the
exact command line (and the precompiled header's content, when one is used), and
holds the headers the compiler read (its ``-MD`` output) with a digest of their
content at the time.  A lookup re-hashes those headers: any change, a missing file,
another compiler or other flags is a miss.  Only passing units are recorded; a unit
that fails is forgotten.  The file uses the data-only, hash-checked ``store``
format: anything unreadable or tampered with reads as an empty cache.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from pathlib import Path

from .. import store

__all__ = ["FileDigests", "ResultCache", "parse_depfile"]

KIND = "check_results"
_MAX_ENTRIES = 512  # least recently used entries beyond this are dropped


@dataclass
class FileDigests:
    """sha256 of each file's content, read at most once per run."""

    known: dict[str, str | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, path: str) -> str | None:
        with self.lock:
            if path in self.known:
                return self.known[path]
        try:
            digest: str | None = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError:
            digest = None
        with self.lock:
            self.known[path] = digest
        return digest

    def of_all(self, paths: list[str]) -> str | None:
        """One digest of ``paths`` and their content; None when one cannot be read."""
        h = hashlib.sha256()
        for path in sorted(set(paths)):
            digest = self.of(path)
            if digest is None:
                return None
            h.update(f"{path}\0{digest}\n".encode())
        return h.hexdigest()


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a Make-style depfile written by ``-MD -MF`` (the first is the source)."""
    body = text.replace("\\\n", " ")
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


@dataclass(frozen=True)
class _Entry:
    deps: tuple[str, ...]
    digest: str  # FileDigests.of_all(deps) when the unit passed
    used: int


@dataclass
class ResultCache:
    """The passing units of earlier checks, in ``path`` (one ``store`` file)."""

    path: Path
    entries: dict[str, _Entry] = field(default_factory=dict)
    clock: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, path: Path) -> ResultCache:
        cache = cls(path)
        data = store.read(path, KIND)
        if not isinstance(data, dict):
            return cache
        listed, entries = data.get("paths"), data.get("entries")
        if not isinstance(listed, list) or not isinstance(entries, dict):
            return cache
        paths = [p for p in listed if isinstance(p, str)]
        if len(paths) != len(listed):
            return cache
        for key, e in entries.items():
            if not isinstance(e, dict):
                continue
            deps, digest, used = e.get("deps"), e.get("digest"), e.get("used")
            if not (isinstance(deps, list) and isinstance(digest, str) and isinstance(used, int)):
                continue
            if all(isinstance(d, int) and 0 <= d < len(paths) for d in deps):
                cache.entries[key] = _Entry(tuple(paths[d] for d in deps if isinstance(d, int)), digest, used)
                cache.clock = max(cache.clock, used)
        return cache

    def hit(self, key: str, files: FileDigests) -> bool:
        """True when ``key`` passed before and every header it read is unchanged."""
        with self.lock:
            entry = self.entries.get(key)
        if entry is None or files.of_all(list(entry.deps)) != entry.digest:
            return False
        with self.lock:
            self.clock += 1
            self.entries[key] = _Entry(entry.deps, entry.digest, self.clock)
        return True

    def record(self, key: str, deps: list[str], files: FileDigests) -> None:
        """``key`` passed having read ``deps``; written to disk at once (a killed run keeps it)."""
        digest = files.of_all(deps)
        with self.lock:
            if digest is None:
                self.entries.pop(key, None)
            else:
                self.clock += 1
                self.entries[key] = _Entry(tuple(sorted(set(deps))), digest, self.clock)
            self._save()

    def forget(self, key: str) -> None:
        with self.lock:
            if self.entries.pop(key, None) is not None:
                self._save()

    def save(self) -> None:
        """Write the hits' new recency (one write at the end of a run)."""
        with self.lock:
            self._save()

    def _save(self) -> None:
        kept = sorted(self.entries.items(), key=lambda kv: -kv[1].used)[:_MAX_ENTRIES]
        paths = sorted({p for _, e in kept for p in e.deps})
        number = {p: i for i, p in enumerate(paths)}
        entries: dict[str, store.JSON] = {
            k: {"deps": [number[p] for p in e.deps], "digest": e.digest, "used": e.used} for k, e in kept
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        store.write(self.path, KIND, {"paths": list(paths), "entries": entries})
