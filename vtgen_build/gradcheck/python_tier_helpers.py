"""An op library's C++ helpers in the Python tier (``--library --tier python``): Python equivalents, proven.

The translated formulas call the library's ``--python-formulas`` module where its C++ formulas call the
helpers its ``--manual-header`` declares.  Nothing is bound: the library's helpers are compiled into it with
hidden visibility, and calling them would mean building a binding per helper edit.  Instead the equivalents
are proven equal to the compiled helpers on samples: the ``agree`` check gives each op's vector-Jacobian
products (and Jacobian-vector products) on its schema samples through the Python tier and through the
library's own compiled Autograd kernel.  Built from the same yaml, the two differ only by the helpers (and
the translation), so an op that agrees proves, on those samples, every helper its Python calls.

The proof is recorded (``.vtgen-gradcheck/python-tier/helpers-proof.json``, written under the check lock)
under a key of the C++ helper files' content, the Python module's and the library's: an edit of any of them
asks for the proof again (a rebuilt library: the next run proves it, with no step of the user's).  An op
calling a helper not proven under the current key gets no verdict from the Python tier, pass or fail: it is
*not verified by the Python tier*, and the note says why (its formula differs from the one the library was
built from, the equivalents differ from the compiled helpers, or a helper file changed after the library was
built, which no run can prove until the library is rebuilt).  Which helper content a library was built from
is recorded by content in the same file, keyed on the library's content, by the first run to see it: a
library copied without its times keeps the record, a helper file touched but unchanged keeps its proof, an
edited one (whatever its time says) loses it until the library is built again.  The library's write time
is kept beside, not in the key: the same bytes written again since (a rebuild after a helper edit the
compiled code does not see) were built from the helper files written before them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..base import store
from ..check import files_text
from ..compile import artifact_key
from .python_tier import TierPlan
from .records import FAILED, PASSED, Entry

__all__ = ["AGREE", "HelperProof", "formula_calls", "without_agree"]

KIND = "python_tier_helpers"
AGREE = "agree"
_CALLED = re.compile(r"\b_formulas\.(\w+)\(")


def formula_calls(text: str) -> set[str]:
    """The helpers a translated module calls (``_formulas.name(``)."""
    return set(_CALLED.findall(text))


def without_agree(records: Sequence[Entry]) -> tuple[list[Entry], dict[str, str]]:
    """The records without their ``agree`` checks (no check of a formula: its proof of the helpers); op ->
    that check's status."""
    agreed: dict[str, str] = {}
    kept = []
    for entry in records:
        for c in entry.checks:
            if c.kind == AGREE:
                agreed[entry.aten] = c.status
        kept.append(replace(entry, checks=tuple(c for c in entry.checks if c.kind != AGREE)))
    return kept, agreed


@dataclass(frozen=True)
class HelperProof:
    """Which Python equivalents are proven equal to the compiled helpers, under the current key."""

    path: Path
    key: str
    proven: frozenset[str]
    stale: tuple[str, ...]  # helper files changed after the library was built: nothing provable
    library: str = ""  # which library: its content digest ("": not a file)
    built: tuple[tuple[str, str], ...] = ()  # the helper files the library was built from: path, content digest
    written: int = 0  # the library's write time when last seen (ns): a later one is a rewrite of the same bytes

    @classmethod
    def read(cls, work: Path, library: str, formulas: str | None, helpers: Sequence[str]) -> HelperProof:
        files = [Path(h) for h in helpers]
        built_file = Path(library)
        library_text = files_text([built_file]) if built_file.is_file() else library
        sources = files_text([*files, *([Path(formulas)] if formulas else [])])
        key = artifact_key("python-tier-helpers", "", (library_text,), "", "", [sources])
        path = work / "helpers-proof.json"
        data = store.read(path, KIND)
        record = data if isinstance(data, dict) else {}
        names = record.get("proven") if record.get("key") == key else None
        proven = frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()
        digest = _build_of(built_file, library_text)
        known = record.get("built") if digest and record.get("library") == digest else None
        written = built_file.stat().st_mtime_ns if digest else 0
        if not isinstance(known, dict):
            built = _first_sight(built_file, files)
        elif record.get("written") != written:  # these bytes, written again since (rebuilt, or copied)
            built = _written_since(built_file, files, _recorded(known))
        else:
            built = _recorded(known)
        now = {str(f): _digest(f) for f in files}
        stale = tuple(name for name, value in now.items() if digest and dict(built).get(name) != value)
        proof = cls(path, key, proven, stale, digest, built, written)
        if digest and (not isinstance(known, dict) or record.get("written") != written):
            proof._write()  # what this library was built from: first seen, or seen written again
        return proof

    def _write(self) -> None:
        names: list[store.JSON] = list(sorted(self.proven))
        built: dict[str, store.JSON] = dict(self.built)
        store.write(self.path, KIND, {"key": self.key, "proven": names, "library": self.library, "built": built,
                                      "written": self.written})  # fmt: skip

    def needed(self, plan: TierPlan) -> bool:
        """Does some op call a helper not proven yet (the run adds the ``agree`` check)?"""
        return any(formula_calls(text) - self.proven for _, text in plan.modules)

    def settle(self, plan: TierPlan, agreed: Mapping[str, str]) -> tuple[HelperProof, dict[str, str]]:
        """The proof with what this run's agreeing ops proved (recorded); op -> why its verdict is withheld."""
        calls = {op: formula_calls(text) for op, text in plan.modules}
        proven = set(self.proven)
        if not self.stale:
            for op, status in agreed.items():
                if status == PASSED:
                    proven |= calls.get(op, set())
        done = replace(self, proven=frozenset(proven))
        if not self.stale and proven != self.proven:
            done._write()
        withheld = {op: done.why_not(sorted(names - proven), agreed.get(op)) for op, names in calls.items()
                    if names - proven}  # fmt: skip
        return done, withheld

    def why_not(self, unproven: list[str], agreed: str | None) -> str:
        helpers = ", ".join(unproven)
        if self.stale:
            return (f"the helper file {self.stale[0]} changed after the library was built: the Python equivalents of "
                    f"{helpers} cannot be proven equal to the compiled ones until it is rebuilt")  # fmt: skip
        if agreed == FAILED:
            return (f"the Python equivalents of {helpers} are not proven equal to the compiled helpers: its values "
                    "differ from the library's compiled kernel (a formula edited since the library was built, or "
                    "equivalents that differ from the C++ helpers; a build of this yaml proves them)")  # fmt: skip
        return f"the Python equivalents of {helpers} are not proven equal to the compiled helpers (no sample agreed)"


def _build_of(library: Path, text: str) -> str:
    """Which library this is ("": not a file): its content's digest.  Its write time is not: a library copied
    without its times (``cp`` without ``-p``, a restored cache) is the same library, built from the same
    helper files, and keeps their record."""
    if not library.is_file():
        return ""
    return store.sha256_hex(text.encode())


def _digest(path: Path) -> str:
    return store.sha256_hex(path.read_bytes()) if path.is_file() else "missing"


def _recorded(known: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in known.items()))


def _written_since(
    library: Path, files: Sequence[Path], built: tuple[tuple[str, str], ...]
) -> tuple[tuple[str, str], ...]:
    """The record of a library of known bytes written again since it was seen, with each helper file whose
    content differs from the record but was written before the library was: a build that left the bytes
    identical (a helper edit the compiled code does not see: a comment) wrote the library after the edit,
    and was made from it.  A file as recorded keeps its record whatever its time (touched or copied, before
    or after the library was copied without its times)."""
    made = library.stat().st_mtime_ns
    found = dict(built)
    for f in files:
        digest = _digest(f)
        if found.get(str(f)) != digest and f.is_file() and f.stat().st_mtime_ns <= made:
            found[str(f)] = digest
    return tuple(sorted(found.items()))


def _first_sight(library: Path, files: Sequence[Path]) -> tuple[tuple[str, str], ...]:
    """The helper files a library no run has seen yet was built from: their content now, but for one
    written after the library (its content then is not known: it stays unprovable until a rebuild).  Times
    are read here and when the same bytes are written again (``_written_since``); every other run compares
    contents with this record."""
    if not library.is_file():
        return ()
    made = library.stat().st_mtime_ns
    return tuple(sorted((str(f), _digest(f)) for f in files if not f.is_file() or f.stat().st_mtime_ns <= made))
