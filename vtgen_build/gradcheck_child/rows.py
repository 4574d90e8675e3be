"""The rows a gradcheck child writes, as frozen records with their JSON forms (``protocol.py`` re-exports them).

A child writes a ``Start`` line before an entry (and an ``At`` line before each of its samples), then
an ``Entry`` row naming it: the entry's ``Check``s (and, in ``--library`` runs, its ``FuncChecks``),
or an error.  The parent reads the rows
back with ``from_json`` (``gradcheck.records``); a row not of this form is a ``ProtocolError``
naming the key.  Defaults are left out of a row: a check says only what it found.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields, replace

from .fields import JSON, Fields, ProtocolError, Record, plain

__all__ = ["FAILED", "NOT_RUN", "PASSED", "At", "Check", "Entry", "FuncChecks", "Start"]

PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"


def _without_defaults(record: Record, always: tuple[str, ...]) -> dict[str, JSON]:
    """The record's fields whose values are not their defaults (and ``always``), as ``plain`` writes them."""
    found: dict[str, JSON] = {}
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name in always or value != f.default:
            found[f.name] = plain(value)
    return found


@dataclass(frozen=True)
class Check:
    """One check of an entry: a kind (backward, forward, gradgrad, fwd_over_rev) through a variant."""

    kind: str  # "" in a reference answer's row (it is looked up by its kept call)
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

    def to_json(self) -> dict[str, JSON]:
        return _without_defaults(self, ())

    @classmethod
    def from_json(cls, data: JSON) -> Check:
        f = Fields(data, "check", cls.__dataclass_fields__)
        return cls(
            kind=f.text("kind", ""),
            variant=f.text("variant", "function"),
            status=f.text("status"),
            test=f.text("test", ""),
            dtype=f.text("dtype", ""),
            sample=f.integer_or_none("sample"),
            samples=f.integer("samples", 0),
            message=f.text("message", ""),
            positions=f.integers("positions", []),
            why=f.text("why", ""),
            hit=f.texts("hit", []),
            ours_ran=f.flag("ours_ran", False),
            inputs=f.texts("inputs", []),
            reference=f.text("reference", ""),
            batched=f.flag("batched", False),
            input=f.integer_or_none("input"),
            unbatched=f.text("unbatched", ""),
            no_kernel=f.flag("no_kernel", False),
            others=f.texts("others", []),
        )

    @property
    def passed_ours(self) -> bool:
        """It passed, and in our kernel of the op it tests."""
        return self.status == PASSED and self.ours_ran


@dataclass(frozen=True)
class FuncChecks:
    """``torch.func`` over an op (``check --gradcheck --library``; ``transforms.py``)."""

    op: str  # the op (the entry's function or in-place op)
    vmap: str  # rule (a FuncTorchBatched kernel: checked with the fallback off) | fallback (PyTorch's loop)
    checks: tuple[tuple[str, str, str], ...] = ()  # (transform, ok | FAIL | n/a | no rule, detail)
    sample: int | None = None  # the float64 sample they ran on
    why: str = ""  # none ran: why
    case: str = ""  # that sample in a few words (its non-tensor values, its tensors' shapes)

    def to_json(self) -> dict[str, JSON]:
        return _without_defaults(self, ("op", "vmap"))

    @classmethod
    def from_json(cls, data: JSON) -> FuncChecks:
        f = Fields(data, "func", cls.__dataclass_fields__)
        checks = f.items("checks", [])
        if not all(isinstance(c, list) and len(c) == 3 and all(isinstance(v, str) for v in c) for c in checks):
            raise f.fail("checks", checks, "a list of [check, verdict, detail]")
        vmap = f.text("vmap")
        if vmap not in ("rule", "fallback"):
            raise f.fail("vmap", vmap, "rule or fallback")
        found = tuple((c[0], c[1], c[2]) for c in checks)
        return cls(f.text("op"), vmap, found, f.integer_or_none("sample"), f.text("why", ""), f.text("case", ""))

    def failed(self) -> list[tuple[str, str]]:
        """(transform, detail) of the checks that failed."""
        return [(name, detail) for name, verdict, detail in self.checks if verdict == "FAIL"]


_ENTRY_KEYS = ("entry", "checks", "direct", "aten", "source", "schema", "error", "fatal", "unreadable", "seconds",
               "func", "cut", "reference_error")  # fmt: skip


@dataclass(frozen=True)
class Entry:
    """What one entry (an OpInfo, a sample source's entry, an op's schema samples) found."""

    name: str  # its row's ``entry``
    checks: tuple[Check, ...] = ()
    direct: tuple[tuple[str, tuple[str, ...]], ...] | None = None  # variant -> the ops it calls itself
    aten: str = ""  # the op it is named for
    source: str = ""  # checked on the arguments captured from this entry (capture.py)
    schema: bool = False  # checked on samples made from the op's schema (schema_child.py)
    error: str = ""  # it timed out, raised, or killed the child
    fatal: bool = False  # the error is a crash, a hang or an exit inside it: a failure of its op (``aten``)
    unreadable: str = ""  # the line that could not be read (the parent's reader says so)
    seconds: float = 0.0  # how long its checks took (its share of the child's entry)
    func: tuple[FuncChecks, ...] = ()  # torch.func over the op and its in-place variant (--library runs)
    cut: bool = False  # the child stopped it at its first failed check (``first_failure``)
    reference_error: str = ""  # its failed checks' rerun with torch's own kernels raised (why): they stand

    def to_json(self) -> dict[str, JSON]:
        found = _without_defaults(self, ())
        found.pop("name")
        found = {"entry": self.name, **found}
        if self.direct is not None:
            found["direct"] = {variant: list(ops) for variant, ops in self.direct}
        return found

    @classmethod
    def from_json(cls, data: JSON) -> Entry:
        f = Fields(data, "entry", _ENTRY_KEYS)
        direct = f.value("direct")
        if direct is not None and not isinstance(direct, dict):
            raise f.fail("direct", direct, "an object")
        return cls(
            name=f.text("entry"),
            checks=tuple(Check.from_json(c) for c in f.items("checks", [])),
            direct=None if direct is None else tuple((k, _ops(v, k)) for k, v in direct.items()),
            aten=f.text("aten", ""),
            source=f.text("source", ""),
            schema=f.flag("schema", False),
            error=f.text("error", ""),
            fatal=f.flag("fatal", False),
            unreadable=f.text("unreadable", ""),
            seconds=f.number("seconds", 0.0),
            func=tuple(FuncChecks.from_json(x) for x in f.items("func", [])),
            cut=f.flag("cut", False),
            reference_error=f.text("reference_error", ""),
        )

    def ops(self, variant: str) -> tuple[str, ...]:
        """The ops of ours this entry calls itself through ``variant`` (none when it does not say)."""
        return next((ops for v, ops in self.direct or () if v == variant), ())

    def with_checks(self, checks: Iterable[Check]) -> Entry:
        return replace(self, checks=tuple(checks))


def _ops(value: JSON, variant: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"entry.direct.{variant}: {value!r:.80} is not a list of strings")
    return tuple(value)


@dataclass(frozen=True)
class Start:
    """The line a child writes before an entry: a crash or a hang before its row is that entry's."""

    name: str  # the entry
    aten: str = ""  # the op it checks, when the child knows (a crash in it is that op's failure)

    def to_json(self) -> dict[str, JSON]:
        return {"start": self.name, "aten": self.aten} if self.aten else {"start": self.name}

    @classmethod
    def from_json(cls, data: JSON) -> Start:
        f = Fields(data, "start", ("start", "aten"))
        return cls(f.text("start"), f.text("aten", ""))


@dataclass(frozen=True)
class At:
    """The line a child writes before each sample of an entry: where a crash or a hang happened."""

    where: str  # "sample 0 (float64) of the backward check of sin (function)"

    def to_json(self) -> dict[str, JSON]:
        return {"at": self.where}

    @classmethod
    def from_json(cls, data: JSON) -> At:
        return cls(Fields(data, "at", ("at",)).text("at"))
