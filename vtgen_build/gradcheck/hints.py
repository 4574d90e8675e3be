"""Per-op sample hints: the data file that makes schema-driven samples valid for constrained ops.

A hints file is a YAML list, one entry per op (a name matches every overload, ``name.overload``
one of them)::

    - op: topk_abs
      args:
        self: {shape: [4, 3]}          # a tensor: its shape and what its values are
        k: 2                           # anything else: the value to pass
    - op: cholesky
      args:
        self: {shape: [3, 3], values: spd}
    - op: nll_loss2d
      skip: needs a target of class indices in four dimensions   # reported as not verified

Tensor keys: ``shape``, ``values`` (one of ``VALUES``), ``high`` (index tensors: the
exclusive bound), ``grad`` (false: not differentiated), ``shapes`` (a ``Tensor[]``: one shape
per tensor), ``dtype`` (``long`` or ``bool`` for a tensor that is not floating point; ``values``, ``high``
and ``dtype`` hold for each tensor of a list: ``indices: {shapes: [[2]], values: index, high: 3}``),
``data`` (a one-dimensional long tensor of exactly these integers, never differentiated: lengths an op
checks, ``input_lengths: {data: [5, 5]}``).
An entry's other keys: ``dtypes`` (the dtypes to check, of ``float64`` and ``complex128``),
``skip`` (why no sample can be made; the op is then reported ``not verified``).
Unknown keys are errors at their line, with a did-you-mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import Location, VtgenError, misspelled
from ..inputs.load import Field, Value, load_entries
from ..model.schema import op_name

__all__ = ["BUILTIN", "THROUGH", "VALUES", "ArgHint", "Hints", "OpHints", "TensorHint", "load_hints"]

BUILTIN = Path(__file__).resolve().parent.parent / "data" / "pytorch_sample_hints.yaml"
VALUES = ("normal", "positive", "nonzero", "probability", "unit", "index", "spd", "one_hot")
DTYPES = ("float64", "complex128")
_TENSOR_KEYS = ("shape", "shapes", "values", "high", "grad", "dtype", "through", "data")
_ENTRY_KEYS = ("op", "args", "dtypes", "skip", "outputs", "optional")
OPTIONAL = ("both", "present")  # the samples made: optional arguments absent, then present (both); or present only
# what a differentiated tensor may pass through before the op gets it: an op whose formula is the
# gradient along a manifold (``_ctc_loss``'s is the one through ``log_softmax``) is checked on it
THROUGH = ("log_softmax",)
_INT_DTYPES = ("long", "bool")

Literal = str | bool | int | float | None | tuple["Literal", ...]


@dataclass(frozen=True)
class TensorHint:
    """How to make one tensor (or each tensor of a list) argument."""

    shape: tuple[int, ...] | None = None
    shapes: tuple[tuple[int, ...], ...] | None = None
    values: str = "normal"
    high: int | None = None
    grad: bool = True
    dtype: str | None = None  # None: the check's floating dtype
    through: str | None = None  # one of ``THROUGH``: the op gets this function of the differentiated tensor
    data: tuple[int, ...] | None = None  # a 1-D long tensor of these values (lengths an op checks)


@dataclass(frozen=True)
class ArgHint:
    name: str
    tensor: TensorHint | None  # a tensor argument's hint
    value: Literal  # otherwise the value to pass
    location: Location


@dataclass(frozen=True)
class OpHints:
    op: str  # a name (every overload) or name.overload
    args: tuple[ArgHint, ...]
    dtypes: tuple[str, ...] | None
    skip: str | None
    location: Location
    outputs: tuple[int, ...] | None = None  # the returns gradcheck differentiates (None: every differentiable one)
    optional: str = "both"  # "present": no sample leaves the optional arguments out (the op crashes without them)

    def arg(self, name: str) -> ArgHint | None:
        return next((a for a in self.args if a.name == name), None)


@dataclass(frozen=True)
class Hints:
    """Every entry of one or more hints files, the later files' entries first."""

    entries: tuple[OpHints, ...] = ()

    def for_op(self, op: str) -> OpHints | None:
        """The entry of ``op`` (``add.Tensor``): an exact entry, else one of its name."""
        exact = next((e for e in self.entries if e.op == op), None)
        return exact or next((e for e in self.entries if e.op == op_name(op).name), None)

    def check_ops(self, ops: Iterable[str]) -> None:
        """A located error for an entry naming no op of ``ops``, with a did-you-mean."""
        known = set(ops)
        names = known | {op_name(op).name for op in known}
        for e in self.entries:
            if e.op not in names:
                raise misspelled(f"sample hints: no op named '{e.op}'", e.op, names, e.location)


def _fields(value: Value, what: str, where: Location) -> tuple[Field, ...]:
    if isinstance(value, tuple) and all(isinstance(f, Field) for f in value):
        return tuple(f for f in value if isinstance(f, Field))
    raise VtgenError(f"{what}: expected a mapping", where)


def _reject_unknown(fields: Sequence[Field], known: Sequence[str], what: str) -> None:
    for f in fields:
        if f.key not in known:
            raise misspelled(f"{what}: unknown key '{f.key}'", f.key, known, f.location)


def _shape(value: Value, where: Location) -> tuple[int, ...]:
    if isinstance(value, tuple) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in value):
        return tuple(n for n in value if isinstance(n, int))
    raise VtgenError("shape: expected a list of sizes (integers >= 0)", where)


def _tensor(fields: tuple[Field, ...]) -> TensorHint:
    _reject_unknown(fields, _TENSOR_KEYS, "sample hints: tensor")
    got = {f.key: f for f in fields}
    hint = TensorHint()
    if "shape" in got:
        hint = TensorHint(shape=_shape(got["shape"].value, got["shape"].location))
    shapes = None
    if (f := got.get("shapes")) is not None:
        if not isinstance(f.value, tuple) or not f.value:
            raise VtgenError("shapes: expected a list of shapes", f.location)
        shapes = tuple(_shape(s, f.location) for s in f.value if not isinstance(s, Field))
    values, high, grad, dtype = "normal", None, True, None
    if (f := got.get("values")) is not None:
        if f.value not in VALUES:
            raise misspelled(f"values: expected one of {', '.join(VALUES)}", str(f.value), VALUES, f.location)
        values = str(f.value)
    if (f := got.get("high")) is not None:
        if not isinstance(f.value, int) or isinstance(f.value, bool) or f.value < 1:
            raise VtgenError("high: expected an integer >= 1", f.location)
        high = f.value
    if (f := got.get("grad")) is not None:
        if not isinstance(f.value, bool):
            raise VtgenError("grad: expected true or false", f.location)
        grad = f.value
    if (f := got.get("dtype")) is not None:
        if f.value not in _INT_DTYPES:
            raise VtgenError(f"dtype: expected one of {', '.join(_INT_DTYPES)}", f.location)
        dtype = str(f.value)
    if values == "index" and high is None:
        high = 2
    through = None
    if (f := got.get("through")) is not None:
        if f.value not in THROUGH:
            raise misspelled(f"through: expected one of {', '.join(THROUGH)}", str(f.value), THROUGH, f.location)
        through = str(f.value)
    grad = grad and values != "index" and dtype is None
    if (f := got.get("data")) is not None:
        return _data(f, got)
    return TensorHint(hint.shape, shapes, values, high, grad, dtype, through)


def _data(f: Field, got: dict[str, Field]) -> TensorHint:
    """A tensor of given integers: ``data`` alone (``dtype: long`` may say so)."""
    if (
        not isinstance(f.value, tuple)
        or not f.value
        or any(not isinstance(n, int) or isinstance(n, bool) for n in f.value)
    ):
        raise VtgenError("data: expected a list of integers (a 1-D long tensor of these values)", f.location)
    for key, other in got.items():
        if key != "data" and not (key == "dtype" and other.value == "long"):
            why = "a tensor of given values (data) takes no other key: its shape is the list's, its dtype long"
            raise VtgenError(f"{key}: {why}", other.location)
    values = tuple(n for n in f.value if isinstance(n, int))
    return TensorHint(shape=(len(values),), grad=False, dtype="long", data=values)


def _literal(value: Value, where: Location) -> Literal:
    if isinstance(value, tuple):
        if any(isinstance(v, Field) for v in value):
            raise VtgenError("expected a value or a list of values", where)
        return tuple(_literal(v, where) for v in value)  # type: ignore[arg-type]
    return value


def _arg(f: Field) -> ArgHint:
    if isinstance(f.value, tuple) and f.value and all(isinstance(x, Field) for x in f.value):
        return ArgHint(f.key, _tensor(_fields(f.value, f.key, f.location)), None, f.location)
    return ArgHint(f.key, None, _literal(f.value, f.location), f.location)


def _entry(fields: tuple[Field, ...], where: Location) -> OpHints:
    _reject_unknown(fields, _ENTRY_KEYS, "sample hints")
    got = {f.key: f for f in fields}
    op = got.get("op")
    if op is None or not isinstance(op.value, str) or not op.value:
        raise VtgenError("sample hints: each entry needs 'op: <name>'", where)
    args = got.get("args")
    arg_hints = tuple(_arg(a) for a in _fields(args.value, "args", args.location)) if args else ()
    dtypes = None
    if (f := got.get("dtypes")) is not None:
        if not isinstance(f.value, tuple) or not f.value or any(d not in DTYPES for d in f.value):
            raise VtgenError(f"dtypes: expected a list of {', '.join(DTYPES)}", f.location)
        dtypes = tuple(str(d) for d in f.value)
    skip = got.get("skip")
    if skip is not None and (not isinstance(skip.value, str) or not skip.value):
        raise VtgenError("skip: expected the reason, as text", skip.location)
    optional = got.get("optional")
    if optional is not None and optional.value not in OPTIONAL:
        raise misspelled(f"optional: expected one of {', '.join(OPTIONAL)}", str(optional.value), OPTIONAL,
                         optional.location)  # fmt: skip
    told = str(optional.value) if optional is not None else "both"
    return OpHints(op.value, arg_hints, dtypes, str(skip.value) if skip else None, where, _outputs(got.get("outputs")),
                   told)  # fmt: skip


def _outputs(f: Field | None) -> tuple[int, ...] | None:
    if f is None:
        return None
    if not isinstance(f.value, tuple) or not f.value or any(not isinstance(i, int) or i < 0 for i in f.value):
        raise VtgenError("outputs: expected a list of return indices (integers >= 0)", f.location)
    return tuple(i for i in f.value if isinstance(i, int))


def load_hints(paths: Sequence[str]) -> Hints:
    """The entries of ``paths``; an op's entry in a later file wins over an earlier one."""
    entries: list[OpHints] = []
    for path in reversed(paths):
        seen: dict[str, Location] = {}
        for e in load_entries(path):
            hint = _entry(e.fields, e.location)
            if hint.op in seen:
                raise VtgenError(
                    f"sample hints: a second entry for '{hint.op}' (first at line {seen[hint.op].line})", e.location
                )
            seen[hint.op] = e.location
            entries.append(hint)
    return Hints(tuple(entries))
