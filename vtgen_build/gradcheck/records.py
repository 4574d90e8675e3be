"""The gradcheck children's results as frozen records: the one reader of their JSON lines.

A child (``child.py``, ``schema_child.py``) writes ``{"start": name}`` before an entry and then
rows naming it: an entry's checks, or an error (the records: ``gradcheck_child.rows``, shared with
the child).  ``read_rows`` reads the lines as they are (the supervisor needs the starts);
``Entry.from_json`` turns a row into a record, checking every field's type, so that nothing past
this module reads a dict.  A line that is not JSON, or a row whose
fields are not what a child writes, becomes an *unreadable* entry, which fails the report: a
result we cannot read may hide a failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..gradcheck_child.protocol import ProtocolError, TierStart
from ..gradcheck_child.rows import FAILED, NOT_RUN, PASSED, At, Check, Entry, FuncChecks, Start

__all__ = [
    "AT",
    "ENTRY",
    "FAILED",
    "NOT_RUN",
    "PASSED",
    "START",
    "Check",
    "Entry",
    "FuncChecks",
    "Mark",
    "entries_of",
    "mark_of",
    "marks",
    "read_entries",
    "read_rows",
    "tier_start",
]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The child's JSON lines as they are. A torn last line (no newline: the child died writing it) is
    dropped; any other line that is not a JSON object becomes an ``unreadable`` row."""
    rows: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return rows
    lines = text.split("\n")
    for number, line in enumerate(lines[:-1], start=1):  # lines[-1]: after the last newline (torn or empty)
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if isinstance(row, dict):
            rows.append(row)
        else:
            rows.append({"entry": f"{path.name}:{number}", "unreadable": line[:200]})
    return rows


def entries_of(rows: Iterable[Mapping[str, Any]]) -> list[Entry]:
    """The rows naming an entry, as records (a malformed one: unreadable)."""
    found: list[Entry] = []
    for row in rows:
        if "entry" not in row:
            continue
        if "unreadable" in row:
            found.append(Entry(str(row["entry"]), unreadable=str(row["unreadable"])))
            continue
        try:
            found.append(Entry.from_json(row))
        except ProtocolError as exc:
            found.append(Entry(str(row["entry"]), unreadable=f"{exc}: {json.dumps(row)[:200]}"))
    return found


@dataclass(frozen=True)
class Mark:
    """A line of a child's results as the supervisor follows them: an entry started (``Start``), a sample
    begun (``At``: ``where``), or a row naming an entry (finished, or unreadable: it ended all the same)."""

    kind: str  # START | AT | ENTRY
    name: str = ""  # the entry started or named ("" for AT)
    aten: str = ""  # START: the op the entry checks, when the child said
    where: str = ""  # AT: the sample


START, AT, ENTRY = "start", "at", "entry"


def mark_of(row: Mapping[str, Any]) -> Mark | None:
    """The line as a ``Mark``; None for a line of another form (the Python tier's ``TierStart``)."""
    try:
        if "start" in row:
            start = Start.from_json(row)
            return Mark(START, start.name, start.aten)
        if "at" in row:
            return Mark(AT, where=At.from_json(row).where)
    except ProtocolError:
        return None
    entry = row.get("entry")
    return Mark(ENTRY, entry) if isinstance(entry, str) else None


def marks(rows: Iterable[Mapping[str, Any]]) -> list[Mark]:
    return [m for m in map(mark_of, rows) if m is not None]


def tier_start(rows: Iterable[Mapping[str, Any]]) -> TierStart | None:
    """The Python tier child's first row (the kernels it installed, why others failed to); None: none of that
    form."""
    for row in rows:
        if "failed_to_install" in row:
            try:
                return TierStart.from_json(row)
            except ProtocolError:
                return None
    return None


def read_entries(path: Path) -> list[Entry]:
    return entries_of(read_rows(path))
