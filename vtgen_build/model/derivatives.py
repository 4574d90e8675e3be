"""Derivative entries: one record per ``derivatives.yaml`` entry.

An entry names a schema and gives, per autograd dispatch key (``Default``
unless a ``dispatch:`` block says otherwise), backward formulas keyed by
input names (``self``, ``self, other``) and forward formulas keyed by output
names (``result``, ``result0``, a named return).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..base.errors import Location, VtgenError, misspelled
from ..inputs.load import Entry, Field
from .schema import FunctionSchema, SchemaError

__all__ = ["AUTOGRAD_KEYS", "DerivativeEntry", "Formula", "FormulaSet", "output_names"]

AUTOGRAD_KEYS = frozenset(
    (
        "Default",
        "Autograd",
        "AutogradOther",
        "AutogradFunctionality",
        "AutogradCPU",
        "AutogradCUDA",
        "AutogradXLA",
        "AutogradLazy",
        "AutogradIPU",
        "AutogradXPU",
        "AutogradMPS",
        "AutogradHPU",
        "AutogradMTIA",
        "AutogradMAIA",
        "AutogradPrivateUse1",
        "AutogradPrivateUse2",
        "AutogradPrivateUse3",
        "AutogradMeta",
        "AutogradNestedTensor",
    )
)
NON_DIFFERENTIABLE = "non_differentiable"
AUTO_ELEMENT_WISE = "auto_element_wise"
AUTO_LINEAR = "auto_linear"
_NOT_IMPLEMENTED = re.compile(r'^not_implemented\("([^"]*)"(?:, .*)?\)$')


@dataclass(frozen=True)
class Formula:
    """``names: expression`` — a backward formula (names are inputs) or a forward one (outputs)."""

    names: tuple[str, ...]
    expression: str
    location: Location
    forward: bool

    @property
    def key(self) -> str:
        return ", ".join(self.names)

    @property
    def is_non_differentiable(self) -> bool:
        return self.expression == NON_DIFFERENTIABLE

    @property
    def not_implemented(self) -> str | None:
        """The name given to ``not_implemented("name")``, if that is the formula."""
        m = _NOT_IMPLEMENTED.match(self.expression)
        return m.group(1) if m else None


@dataclass(frozen=True)
class FormulaSet:
    """The formulas of one autograd key (``Default`` is the plain ``Autograd`` key)."""

    dispatch_key: str
    formulas: tuple[Formula, ...]
    location: Location

    @property
    def backward(self) -> tuple[Formula, ...]:
        return tuple(f for f in self.formulas if not f.forward)

    @property
    def forward(self) -> tuple[Formula, ...]:
        return tuple(f for f in self.formulas if f.forward)


@dataclass(frozen=True)
class DerivativeEntry:
    schema: FunctionSchema
    location: Location
    formula_sets: tuple[FormulaSet, ...]
    output_differentiability: tuple[bool, ...] | None = None
    output_differentiability_location: Location | None = None
    output_differentiability_condition: str | None = None
    text: str = field(default="", compare=False, repr=False)

    @classmethod
    def parse(cls, entry: Entry) -> DerivativeEntry:
        """Build from one located YAML entry; every problem is a located error."""
        fields = {f.key: f for f in entry.fields}
        if "name" not in fields:
            raise VtgenError("missing required key 'name'", entry.location)
        schema = _parse_name(fields["name"])
        outputs = output_names(schema)
        od_field = fields.get("output_differentiability")
        od, condition = _parse_output_differentiability(od_field, schema) if od_field else (None, None)
        rest = tuple(f for f in entry.fields if f.key not in ("name", "output_differentiability"))
        if "dispatch" in fields:
            extra = [f for f in rest if f.key != "dispatch"]
            if extra:
                raise VtgenError(f"'{extra[0].key}' must go inside the 'dispatch:' block", extra[0].location)
            sets = _parse_dispatch(fields["dispatch"], schema, outputs)
        else:
            sets = (_formula_set("Default", rest, entry.location, schema, outputs),)
        od_location = od_field.location if od_field else None
        return cls(schema, entry.location, sets, od, od_location, condition, entry.text)

    def formula_set(self, dispatch_key: str) -> FormulaSet | None:
        return next((s for s in self.formula_sets if s.dispatch_key == dispatch_key), None)


def output_names(schema: FunctionSchema) -> tuple[str, ...]:
    """How formulas name the outputs: the return names, else ``result`` / ``result0..N``."""
    arg_names = {a.name for a in schema.arguments.all}
    if len(schema.returns) == 1 and schema.returns[0].name is None:
        return ("result",)
    written = [a for a in schema.arguments.non_out if a.is_write and a.type.is_tensor_like()]
    if not schema.returns and len(written) == 1:
        return ("result",)  # a `-> ()` op writing one tensor: that tensor after the op
    names = []
    for i, r in enumerate(schema.returns):
        if r.name is None:
            names.append(f"result{i}")
        else:
            names.append(f"{r.name}_return" if r.name in arg_names else r.name)
    return tuple(names)


def _parse_name(f: Field) -> FunctionSchema:
    if not isinstance(f.value, str):
        raise VtgenError("'name' must be a schema string", f.location)
    try:
        return FunctionSchema.parse(f.value)
    except SchemaError as exc:
        raise VtgenError(f"malformed schema: {exc.message}", f.location) from None


def _parse_output_differentiability(f: Field, schema: FunctionSchema) -> tuple[tuple[bool, ...], str | None]:
    """A list of booleans, or (single-output ops only) a one-item list holding a C++ condition."""
    value = f.value
    if isinstance(value, tuple) and len(value) == 1 and isinstance(value[0], str) and len(schema.returns) == 1:
        return (True,), value[0]
    if not isinstance(value, tuple) or not all(isinstance(v, bool) for v in value):
        raise VtgenError("'output_differentiability' must be a list of True/False", f.location)
    if len(value) != len(schema.returns):
        raise VtgenError(
            f"'output_differentiability' has {_count(len(value), 'entry', 'entries')} but '{schema.name}' "
            f"returns {_count(len(schema.returns), 'value', 'values')}",
            f.location,
        )
    return tuple(bool(v) for v in value), None


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _parse_dispatch(f: Field, schema: FunctionSchema, outputs: tuple[str, ...]) -> tuple[FormulaSet, ...]:
    if not isinstance(f.value, tuple) or not all(isinstance(v, Field) for v in f.value):
        raise VtgenError("'dispatch' must map autograd keys to formulas", f.location)
    sets = []
    for key_field in f.value:
        assert isinstance(key_field, Field)
        if key_field.key not in AUTOGRAD_KEYS:
            what = f"unknown autograd dispatch key '{key_field.key}'"
            raise misspelled(what, key_field.key, AUTOGRAD_KEYS, key_field.location)
        value = key_field.value
        if not isinstance(value, tuple) or not all(isinstance(v, Field) for v in value):
            raise VtgenError(f"'{key_field.key}' must map names to formulas", key_field.location)
        formulas = tuple(v for v in value if isinstance(v, Field))
        sets.append(_formula_set(key_field.key, formulas, key_field.location, schema, outputs))
    return tuple(sets)


def _formula_set(
    key: str, fields: tuple[Field, ...], where: Location, schema: FunctionSchema, outputs: tuple[str, ...]
) -> FormulaSet:
    args = tuple(a.name for a in schema.arguments.all)
    seen: set[str] = set()
    formulas = []
    for f in fields:
        names = tuple(n.strip() for n in f.key.split(","))
        forward = all(n in outputs for n in names)
        for n in names:
            if n not in args and n not in outputs:
                known = args + outputs + ("output_differentiability", "dispatch")
                raise misspelled(f"'{n}' is not an argument or output of '{schema.name}'", n, known, f.location)
            if n in seen:
                raise VtgenError(f"more than one formula for '{n}'", f.location)
            seen.add(n)
        if not forward and any(n in outputs and n not in args for n in names):
            raise VtgenError(f"'{f.key}' mixes inputs and outputs", f.location)
        if not isinstance(f.value, str) or not f.value.strip():
            raise VtgenError(f"the formula for '{f.key}' must be a non-empty expression", f.location)
        formulas.append(Formula(names, f.value.strip(), f.location, forward))
    return FormulaSet(key, tuple(formulas), where)
