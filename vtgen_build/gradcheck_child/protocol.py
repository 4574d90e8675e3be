"""What crosses between the parent (``gradcheck``) and the children: typed records with their JSON forms.

Both sides import this module (the child package is standard library only): the parent builds a
request record and writes ``to_json()``; a child reads its request with ``from_json`` once, where
it starts, and hands the record on; the rows a child writes are read back by ``gradcheck.records``
with ``from_json`` too.  A request or a row not of its record's form is a ``ProtocolError`` naming
the record and the key (``fields.py``), never a ``KeyError`` deep in a check.

Requests: ``CheckRequest`` (the OpInfo child, with its ``CaptureTarget``s), ``ReachRequest`` and its
``ReachRow``s, ``SchemaRequest`` (schema samples: ``OpSamples`` of ``ArgSample``s),
``TierRequest`` (the Python tier), ``ReferenceRequest`` and its ``ReferenceAnswer``, the schemas
question and its ``InstalledSchemas``.  Result rows (``rows.py``): ``Entry``, ``Check``, ``FuncChecks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import JSON, Fields, ProtocolError, literal, record_json
from .rows import FAILED, NOT_RUN, PASSED, At, Check, Entry, FuncChecks, Start

__all__ = [
    "FAILED",
    "NOT_RUN",
    "PASSED",
    "ArgSample",
    "At",
    "CaptureTarget",
    "Check",
    "CheckRequest",
    "Entry",
    "FuncChecks",
    "InstalledSchema",
    "InstalledSchemas",
    "OpSamples",
    "ProtocolError",
    "ReachRequest",
    "ReachRow",
    "ReferenceAnswer",
    "ReferenceRequest",
    "SchemaRequest",
    "SchemasQuery",
    "Start",
    "TierEntry",
    "TierModule",
    "TierRequest",
    "TierStart",
]


def _variants_json(variants: tuple[tuple[str, str, str], ...]) -> dict[str, list[str]]:
    return {op: [family, variant] for op, family, variant in variants}


def _variants(fields: Fields) -> tuple[tuple[str, str, str], ...]:
    variants = fields.mapping("variants")
    if not all(isinstance(v, list) and len(v) == 2 and all(isinstance(s, str) for s in v) for v in variants.values()):
        raise ProtocolError(f"{fields.what}: 'variants' is not an object of [family, variant] pairs")
    return tuple((op, v[0], v[1]) for op, v in variants.items())


def _strings(data: JSON, error: str) -> tuple[str, ...]:
    """A request that is a JSON list of strings (``error``: what it is not, otherwise)."""
    if not isinstance(data, list) or not all(isinstance(p, str) for p in data):
        raise ProtocolError(error)
    return tuple(data)


@dataclass(frozen=True)
class CaptureTarget:
    """One op checked on the arguments captured from the entries that reach it (``gradcheck.reach.targets``)."""

    op: str  # as the dispatcher names it: ``elu_backward``, ``mylib::my_op``
    counter: str  # the registration's op (its entry counter)
    entries: tuple[str, ...]
    grad: tuple[str, ...]  # the arguments differentiated: those with a backward formula
    forward: bool  # also forward-mode AD (it has a forward formula)
    through_backward: tuple[str, ...] = ()  # of ``entries``, those reaching it in their backward pass only
    outputs: tuple[bool, ...] | None = None  # which outputs are differentiable (None: all)

    def to_json(self) -> dict[str, JSON]:
        return record_json(self)

    @classmethod
    def from_json(cls, data: JSON) -> CaptureTarget:
        f = Fields(data, "target", ("op", "counter", "entries", "grad", "forward", "through_backward", "outputs"))
        return cls(f.text("op"), f.text("counter"), f.texts("entries"), f.texts("grad"), f.flag("forward"),
                   f.texts("through_backward", []), f.flags_or_none("outputs"))  # fmt: skip


@dataclass(frozen=True)
class CheckRequest:
    """One start of the OpInfo child: which entries run, on which of our ops, and how."""

    library: str  # the shared library whose kernels override the ops' Autograd kernels
    ops: tuple[str, ...] | None  # the ops whose OpInfo entries run (None: every entry)
    out_ops: tuple[str, ...]  # out= overloads: no OpInfo calls them directly
    autograd_ops: tuple[str, ...]  # the ops the library registers an Autograd kernel for
    variants: tuple[tuple[str, str, str], ...]  # (op, family, OpInfo variant: function or inplace)
    dtypes: tuple[str, ...]  # torch dtype names, e.g. float64
    max_samples: int  # per OpInfo; 0: every sample
    timeout: int  # seconds per entry
    skip: tuple[str, ...]  # entries already done (a restart goes on past them)
    targets: tuple[CaptureTarget, ...]  # ops checked on captured arguments
    reference_dir: str | None  # where a failed check's call is kept for the rerun with torch's kernels (None: not)
    batched: bool  # the vmap part of each check, where PyTorch's tests run it
    first_failure: bool  # stop an entry at its first failure
    whole: tuple[str, ...]  # entries to run whole all the same

    @property
    def variant_of(self) -> dict[str, list[str]]:
        """Op -> [family, variant], the form ``child._entry_ops`` compares."""
        return _variants_json(self.variants)

    def to_json(self) -> dict[str, JSON]:
        return record_json(self, variants=_variants_json(self.variants))

    @classmethod
    def from_json(cls, data: JSON) -> CheckRequest:
        f = Fields(data, "request", cls.__dataclass_fields__)
        return cls(
            library=f.text("library"),
            ops=f.texts_or_none("ops"),
            out_ops=f.texts("out_ops"),
            autograd_ops=f.texts("autograd_ops"),
            variants=_variants(f),
            dtypes=f.texts("dtypes"),
            max_samples=f.integer("max_samples"),
            timeout=f.integer("timeout"),
            skip=f.texts("skip"),
            targets=tuple(CaptureTarget.from_json(t) for t in f.items("targets")),
            reference_dir=f.text_or_none("reference_dir"),
            batched=f.flag("batched"),
            first_failure=f.flag("first_failure"),
            whole=f.texts("whole"),
        )


@dataclass(frozen=True)
class ReachRequest:
    """One start of the reach child (``child.py --reach``)."""

    skip: tuple[str, ...]  # entries already done
    timeout: int  # seconds per entry

    def to_json(self) -> dict[str, JSON]:
        return record_json(self)

    @classmethod
    def from_json(cls, data: JSON) -> ReachRequest:
        f = Fields(data, "reach request", ("skip", "timeout"))
        return cls(f.texts("skip"), f.integer("timeout"))


@dataclass(frozen=True)
class ReachRow:
    """What one entry's first calls reach below autograd (a row of the reach child)."""

    entry: str  # "nn.functional.elu", "module:nn.Conv2d", "sin (inplace)"
    forward: tuple[str, ...]  # ops its call reaches
    backward: tuple[str, ...]  # ops the backward pass of that call reaches

    def to_json(self) -> dict[str, JSON]:
        return record_json(self)

    @classmethod
    def from_json(cls, data: JSON) -> ReachRow:
        f = Fields(data, "reach", ("entry", "forward", "backward"))
        return cls(f.text("entry"), f.texts("forward"), f.texts("backward"))


@dataclass(frozen=True)
class ReferenceRequest:
    """The kept failed checks to run again with PyTorch's own kernels (``child.py --reference``)."""

    paths: tuple[str, ...]  # each a kept argument set (``capture.save_sets``) or a described call (.json)

    def to_json(self) -> list[JSON]:
        return list(self.paths)

    @classmethod
    def from_json(cls, data: JSON) -> ReferenceRequest:
        return cls(_strings(data, "reference request: not a list of paths"))


@dataclass(frozen=True)
class ReferenceAnswer:
    """Each kept check's verdict with PyTorch's own kernels."""

    found: tuple[tuple[str, Check], ...]  # (path, check)

    def to_json(self) -> dict[str, JSON]:
        return {path: check.to_json() for path, check in self.found}

    @classmethod
    def from_json(cls, data: JSON) -> ReferenceAnswer:
        if not isinstance(data, dict):
            raise ProtocolError("reference answer: not a JSON object")
        return cls(tuple((str(path), Check.from_json(row)) for path, row in data.items()))

    def of(self, path: str) -> Check | None:
        return next((check for p, check in self.found if p == path), None)


@dataclass(frozen=True)
class SchemasQuery:
    """The ops whose schemas the installed torch is asked for (``child.py --schemas``)."""

    ops: tuple[str, ...]  # ns::op names

    def to_json(self) -> list[JSON]:
        return list(self.ops)

    @classmethod
    def from_json(cls, data: JSON) -> SchemasQuery:
        return cls(_strings(data, "schemas query: not a list of op names"))


@dataclass(frozen=True)
class InstalledSchema:
    """An op's arguments in the installed torch, and why no CPU sample can reach it ("" when one can)."""

    positional: tuple[str, ...]
    keywords: tuple[str, ...]
    uncheckable: str = ""

    def to_json(self) -> list[JSON]:
        return [list(self.positional), list(self.keywords), self.uncheckable]

    @classmethod
    def from_json(cls, data: JSON, op: str) -> InstalledSchema:
        what = f"schemas.{op}"
        if not (isinstance(data, list) and len(data) == 3):
            raise ProtocolError(f"{what}: not [positional, keywords, why]")
        row = Fields(
            {"positional": data[0], "keywords": data[1], "why": data[2]}, what, ("positional", "keywords", "why")
        )
        return cls(row.texts("positional"), row.texts("keywords"), row.text("why"))


@dataclass(frozen=True)
class InstalledSchemas:
    """The schemas question's answer (``child.py --schemas``; its question: a JSON list of ``ns::op`` names).
    Kept in the artifact cache in this form: a record that does not read is no record."""

    found: tuple[tuple[str, InstalledSchema | None], ...]  # (ns::op, its schema; None: the torch lacks the op)

    def to_json(self) -> dict[str, JSON]:
        return {op: None if schema is None else schema.to_json() for op, schema in self.found}

    @classmethod
    def from_json(cls, data: JSON) -> InstalledSchemas:
        if not isinstance(data, dict):
            raise ProtocolError("schemas: not a JSON object")
        return cls(tuple((op, None if s is None else InstalledSchema.from_json(s, op)) for op, s in data.items()))

    def of(self, op: str) -> InstalledSchema | None:
        return next((schema for name, schema in self.found if name == op), None)


@dataclass(frozen=True)
class ArgSample:
    """One argument of one sample: a tensor (or list of them) to make, or a value to pass."""

    name: str
    kind: str  # "tensor", "tensors", "value"
    shape: tuple[int, ...] = ()
    shapes: tuple[tuple[int, ...], ...] = ()
    values: str = "normal"
    high: int | None = None
    grad: bool = False
    dtype: str | None = None  # None: the check's dtype
    value: Any = None  # a plain value (``gradcheck.hints.Literal``)
    through: str | None = None  # the op gets this function of the differentiated tensor (``hints.THROUGH``)
    data: tuple[int, ...] | None = None  # a 1-D long tensor of exactly these values (``TensorHint.data``)

    def to_json(self) -> dict[str, JSON]:
        return record_json(self)

    @classmethod
    def from_json(cls, data: JSON) -> ArgSample:
        f = Fields(data, "sample", ("name", "kind", "shape", "shapes", "values", "high", "grad", "dtype", "value",
                                    "through", "data"))  # fmt: skip
        shapes = f.items("shapes", [])
        if not all(
            isinstance(s, list) and all(isinstance(n, int) and not isinstance(n, bool) for n in s) for s in shapes
        ):
            raise f.fail("shapes", shapes, "a list of shapes")
        return cls(
            name=f.text("name"),
            kind=f.text("kind"),
            shape=f.integers("shape", []),
            shapes=tuple(tuple(s) for s in shapes),
            values=f.text("values", "normal"),
            high=f.integer_or_none("high"),
            grad=f.flag("grad", False),
            dtype=f.text_or_none("dtype"),
            value=literal(f.value("value"), f"{f.what}.value"),
            through=f.text_or_none("through"),
            data=None if f.value("data") is None else f.integers("data"),
        )


@dataclass(frozen=True)
class OpSamples:
    """An op's samples and the variants they also run through (planned by ``gradcheck.schema_samples``)."""

    op: str  # the functional op: softsign, add.Tensor
    namespace: str
    node: str | None  # the Node our kernel creates (the proof a backward ran through it)
    inplace: str | None  # its in-place op (same samples, the first argument written)
    inplace_node: str | None
    out: str | None  # its out= op
    samples: tuple[tuple[ArgSample, ...], ...]
    dtypes: tuple[str, ...]
    forward: bool  # it has a forward formula (else forward AD is not checked: no formula to check)
    why_not: str | None = None  # no sample could be made
    out_args: tuple[str, ...] = ()  # the out= op's output arguments
    positions: tuple[tuple[str, int], ...] = ()  # positional argument -> its index (failures' yaml line)
    outputs: tuple[int, ...] = ()  # the returns gradcheck differentiates (output_differentiability)
    writes: tuple[str, ...] = ()  # arguments ``op`` writes (an in-place op with no functional variant)
    inplace_writes: tuple[str, ...] = ()  # arguments ``inplace`` writes
    forward_outputs: tuple[int, ...] = ()  # those with a forward formula (forward AD checks only these)
    random: bool = False  # tag nondeterministic_seeded: every evaluation is seeded alike (capture.same_draws)

    def position(self, name: str) -> int:
        """The argument's index (-1: not a positional argument)."""
        return next((i for n, i in self.positions if n == name), -1)

    def to_json(self) -> dict[str, JSON]:
        return record_json(self, positions=dict(self.positions))

    @classmethod
    def from_json(cls, data: JSON) -> OpSamples:
        f = Fields(data, "op samples", cls.__dataclass_fields__)
        samples = f.items("samples")
        if not all(isinstance(s, list) for s in samples):
            raise f.fail("samples", samples, "a list of samples")
        positions = f.mapping("positions", {})
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in positions.values()):
            raise f.fail("positions", positions, "an object of argument indices")
        return cls(
            op=f.text("op"),
            namespace=f.text("namespace"),
            node=f.text_or_none("node"),
            inplace=f.text_or_none("inplace"),
            inplace_node=f.text_or_none("inplace_node"),
            out=f.text_or_none("out"),
            samples=tuple(tuple(ArgSample.from_json(a) for a in s) for s in samples),
            dtypes=f.texts("dtypes"),
            forward=f.flag("forward"),
            why_not=f.text_or_none("why_not"),
            out_args=f.texts("out_args", []),
            positions=tuple(positions.items()),
            outputs=f.integers("outputs", []),
            writes=f.texts("writes", []),
            inplace_writes=f.texts("inplace_writes", []),
            forward_outputs=f.integers("forward_outputs", []),
            random=f.flag("random", False),
        )


@dataclass(frozen=True)
class SchemaRequest:
    """One start of the schema-sample child (``schema_child.py``)."""

    library: str  # the shared library (or package) to load; "torch": none, PyTorch's own kernels
    ops: tuple[OpSamples, ...]
    timeout: int  # seconds per op
    skip: tuple[str, ...]  # entries already done
    batched: bool  # the checks' batched (vmap) parts
    transforms: bool  # torch.func over each op too

    def to_json(self) -> dict[str, JSON]:
        return record_json(self)

    @classmethod
    def from_json(cls, data: JSON) -> SchemaRequest:
        f = Fields(data, "schema request", ("library", "ops", "timeout", "skip", "batched", "transforms"))
        ops = tuple(OpSamples.from_json(p) for p in f.items("ops"))
        return cls(f.text("library"), ops, f.integer("timeout"), f.texts("skip"), f.flag("batched"),
                   f.flag("transforms"))  # fmt: skip


@dataclass(frozen=True)
class TierModule:
    """One op's translated autograd module (``gradcheck.python_tier``)."""

    op: str
    text: str


@dataclass(frozen=True)
class TierEntry:
    """One op's schema samples in the Python tier; ``adjoint``: its forward and backward formulas are checked
    against each other."""

    plan: OpSamples
    adjoint: bool


@dataclass(frozen=True)
class TierRequest:
    """The Python tier child's request (``python_tier.py``)."""

    first_failure: bool  # an op's checks end at its first gradient mismatch
    opinfo: bool  # the ops' OpInfo entries run after the schema samples
    variants: tuple[tuple[str, str, str], ...]  # (op, family, OpInfo variant)
    dtypes: tuple[str, ...]
    max_samples: int
    modules: tuple[TierModule, ...]
    scoped: tuple[str, ...]  # view ops: installed only around their own checks
    entries: tuple[TierEntry, ...]
    kinds: tuple[str, ...]  # the checks asked for
    timeout: int
    batched: bool
    library: str | None = None  # an op library to load (its own Autograd kernels replaced by ours)
    formulas: str | None = None  # that library's formulas module, which the modules import
    targets: tuple[CaptureTarget, ...] = ()  # ops checked on the arguments captured from the entries reaching them

    @property
    def variant_of(self) -> dict[str, list[str]]:
        return _variants_json(self.variants)

    def to_json(self) -> dict[str, JSON]:
        return record_json(self, variants=_variants_json(self.variants))

    @classmethod
    def from_json(cls, data: JSON) -> TierRequest:
        f = Fields(data, "tier request", cls.__dataclass_fields__)
        modules = [Fields(m, "tier request.modules", ("op", "text")) for m in f.items("modules")]
        entries = [Fields(e, "tier request.entries", ("plan", "adjoint")) for e in f.items("entries")]
        return cls(
            first_failure=f.flag("first_failure"),
            opinfo=f.flag("opinfo"),
            variants=_variants(f),
            dtypes=f.texts("dtypes"),
            max_samples=f.integer("max_samples"),
            modules=tuple(TierModule(m.text("op"), m.text("text")) for m in modules),
            scoped=f.texts("scoped"),
            entries=tuple(TierEntry(OpSamples.from_json(e.value("plan")), e.flag("adjoint")) for e in entries),
            kinds=f.texts("kinds"),
            timeout=f.integer("timeout"),
            batched=f.flag("batched"),
            library=f.text_or_none("library"),
            formulas=f.text_or_none("formulas"),
            targets=tuple(CaptureTarget.from_json(t) for t in f.items("targets", [])),
        )


@dataclass(frozen=True)
class TierStart:
    """The Python tier child's first row: the ops whose kernels it installed, and why others failed to."""

    installed: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]  # (op, why its module could not be installed)

    def to_json(self) -> dict[str, JSON]:
        return {"installed": list(self.installed), "failed_to_install": dict(self.failed)}

    @classmethod
    def from_json(cls, data: JSON) -> TierStart:
        f = Fields(data, "tier start", ("installed", "failed_to_install"))
        failed = f.mapping("failed_to_install")
        if not all(isinstance(why, str) for why in failed.values()):
            raise f.fail("failed_to_install", failed, "an object of reasons")
        return cls(f.texts("installed"), tuple(failed.items()))
