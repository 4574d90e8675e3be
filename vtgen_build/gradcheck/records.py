"""The gradcheck children's results as frozen records: the one reader of their JSON lines.

A child (``child.py``, ``schema_child.py``) writes ``{"start": name}`` before an entry and then
rows naming it: an entry's checks, or an error.  ``read_rows`` reads the lines as they are (the
supervisor needs the starts); ``Entry.parse`` turns a row into a record, checking every field's
type, so that nothing past this module reads a dict.  A line that is not JSON, or a row whose
fields are not what a child writes, becomes an *unreadable* entry, which fails the report: a
result we cannot read may hide a failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

__all__ = [
    "FAILED",
    "NOT_RUN",
    "PASSED",
    "Check",
    "Entry",
    "FuncChecks",
    "check_or_none",
    "entries_of",
    "read_entries",
    "read_rows",
]

PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"


class _Malformed(ValueError):
    pass


def _text(row: Mapping[str, Any], key: str, default: str = "") -> str:
    value = row.get(key, default)
    if not isinstance(value, str):
        raise _Malformed(f"{key}: {value!r} is not a string")
    return value


def _int(row: Mapping[str, Any], key: str) -> int | None:
    value = row.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise _Malformed(f"{key}: {value!r} is not an integer")
    return value


def _flag(row: Mapping[str, Any], key: str) -> bool:
    value = row.get(key, False)
    if not isinstance(value, bool):
        raise _Malformed(f"{key}: {value!r} is not true or false")
    return value


def _seconds(row: Mapping[str, Any]) -> float:
    value = row.get("seconds", 0.0)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise _Malformed(f"seconds: {value!r} is not a duration")
    return float(value)


def _texts(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Malformed(f"{key}: {value!r} is not a list of strings")
    return tuple(value)


def _list(value: object, key: str) -> list[object]:
    if not isinstance(value, list):
        raise _Malformed(f"{key}: {value!r} is not a list")
    return value


def _ints(value: object, key: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _Malformed(f"{key}: {value!r} is not a list of integers")
    return tuple(value)


@dataclass(frozen=True)
class Check:
    """One check of an entry: a kind (backward, forward, gradgrad, fwd_over_rev) through a variant."""

    kind: str
    variant: str  # function | inplace | out
    status: str  # passed | failed | not run
    test: str = ""  # the check as PyTorch's tests name it (test_fn_grad), or ours (captured_grad, schema_grad)
    dtype: str = ""
    sample: int | None = None  # failed: the sample it failed on
    samples: int = 0  # passed: how many samples ran
    message: str = ""  # failed: gradcheck's message
    positions: tuple[int, ...] = ()  # failed: each differentiated input's argument position (-1: none)
    why: str = ""  # not run: why
    hit: tuple[str, ...] = ()  # our kernels it entered
    ours_ran: bool = False  # it entered our kernel of the op it tests
    inputs: tuple[str, ...] = ()  # captured: the differentiated argument names
    reference: str = ""  # failed: the kept call, for the rerun with torch's own kernels
    batched: bool = False  # failed: only its batched (vmap) part, the values were right (batching.py)
    input: int | None = None  # a batching failure: the differentiated input whose formula breaks
    unbatched: str = ""  # passed, but its batched (vmap) part could not run: why (batching.py)
    no_kernel: bool = False  # not run: the library registers no Autograd kernel of the variant (``why`` says)
    others: tuple[str, ...] = ()  # failed (Python tier): our other kernels it ran with gradients: may be theirs

    @classmethod
    def parse(cls, row: Mapping[str, Any]) -> Check:
        if not isinstance(row, Mapping):
            raise _Malformed(f"a check is not an object: {row!r}")
        return cls(
            kind=_text(row, "kind"),
            variant=_text(row, "variant", "function"),
            status=_text(row, "status"),
            test=_text(row, "test"),
            dtype=_text(row, "dtype"),
            sample=_int(row, "sample"),
            samples=_int(row, "samples") or 0,
            message=_text(row, "message"),
            positions=_ints(row.get("positions", []), "positions"),
            why=_text(row, "why"),
            hit=_texts(row.get("hit", []), "hit"),
            ours_ran=_flag(row, "ours_ran"),
            inputs=_texts(row.get("inputs", []), "inputs"),
            reference=_text(row, "reference"),
            batched=_flag(row, "batched"),
            input=_int(row, "input"),
            unbatched=_text(row, "unbatched"),
            no_kernel=_flag(row, "no_kernel"),
            others=_texts(row.get("others", []), "others"),
        )

    @property
    def passed_ours(self) -> bool:
        """It passed, and in our kernel of the op it tests."""
        return self.status == PASSED and self.ours_ran


@dataclass(frozen=True)
class FuncChecks:
    """``torch.func`` over an op (``check --gradcheck --library``; ``gradcheck_child/transforms.py``)."""

    op: str  # the op (the entry's function or in-place op)
    vmap: str  # rule (a FuncTorchBatched kernel: checked with the fallback off) | fallback (PyTorch's loop)
    checks: tuple[tuple[str, str, str], ...] = ()  # (transform, ok | FAIL | n/a | no rule, detail)
    sample: int | None = None  # the float64 sample they ran on
    why: str = ""  # none ran: why
    case: str = ""  # that sample in a few words (its non-tensor values, its tensors' shapes)

    @classmethod
    def parse(cls, row: object) -> FuncChecks:
        if not isinstance(row, Mapping):
            raise _Malformed(f"func: {row!r} is not an object")
        checks = row.get("checks", [])
        if not isinstance(checks, list) or not all(
            isinstance(c, list) and len(c) == 3 and all(isinstance(v, str) for v in c) for c in checks
        ):
            raise _Malformed(f"func.checks: {checks!r} is not a list of [check, verdict, detail]")
        vmap = _text(row, "vmap")
        if vmap not in ("rule", "fallback"):
            raise _Malformed(f"func.vmap: {vmap!r} is neither rule nor fallback")
        found = tuple((c[0], c[1], c[2]) for c in checks)
        return cls(_text(row, "op"), vmap, found, _int(row, "sample"), _text(row, "why"), _text(row, "case"))

    def failed(self) -> list[tuple[str, str]]:
        """(transform, detail) of the checks that failed."""
        return [(name, detail) for name, verdict, detail in self.checks if verdict == "FAIL"]


@dataclass(frozen=True)
class Entry:
    """What one entry (an OpInfo, a sample source's entry, an op's schema samples) found."""

    name: str
    checks: tuple[Check, ...] = ()
    direct: tuple[tuple[str, tuple[str, ...]], ...] | None = None  # variant -> the ops it calls itself
    aten: str = ""  # the op it is named for
    source: str = ""  # checked on the arguments captured from this entry (capture.py)
    schema: bool = False  # checked on samples made from the op's schema (schema_child.py)
    error: str = ""  # it timed out, raised, or killed the child
    fatal: bool = False  # the error is a crash, a hang or an exit inside it: a failure of its op (``aten``)
    unreadable: str = ""  # the line that could not be read
    seconds: float = 0.0  # how long its checks took (its share of the child's entry)
    func: tuple[FuncChecks, ...] = ()  # torch.func over the op and its in-place variant (--library runs)

    @classmethod
    def parse(cls, row: Mapping[str, Any]) -> Entry:
        checks = row.get("checks", [])
        if not isinstance(checks, list):
            raise _Malformed(f"checks: {checks!r} is not a list")
        direct = row.get("direct")
        if direct is not None and not isinstance(direct, dict):
            raise _Malformed(f"direct: {direct!r} is not an object")
        return cls(
            name=_text(row, "entry"),
            checks=tuple(Check.parse(c) for c in checks),
            direct=None if direct is None else tuple((str(k), _texts(v, f"direct.{k}")) for k, v in direct.items()),
            aten=_text(row, "aten"),
            source=_text(row, "source"),
            schema=_flag(row, "schema"),
            error=_text(row, "error"),
            fatal=_flag(row, "fatal"),
            seconds=_seconds(row),
            func=tuple(FuncChecks.parse(f) for f in _list(row.get("func", []), "func")),
        )

    def ops(self, variant: str) -> tuple[str, ...]:
        """The ops of ours this entry calls itself through ``variant`` (none when it does not say)."""
        return next((ops for v, ops in self.direct or () if v == variant), ())

    def with_checks(self, checks: Iterable[Check]) -> Entry:
        return replace(self, checks=tuple(checks))


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
            found.append(Entry.parse(row))
        except _Malformed as exc:
            found.append(Entry(str(row["entry"]), unreadable=f"{exc}: {json.dumps(row)[:200]}"))
    return found


def check_or_none(value: object) -> Check | None:
    """A check as another reader wrote it (the reference rerun's answer); None when it is not one."""
    try:
        return Check.parse(value) if isinstance(value, Mapping) else None
    except _Malformed:
        return None


def read_entries(path: Path) -> list[Entry]:
    return entries_of(read_rows(path))
