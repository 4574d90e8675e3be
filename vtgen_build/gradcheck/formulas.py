"""Where each op's formulas are written: the places a gradcheck failure is reported at.

Read from the plan once per set of inputs and kept as a data-only state file, so a
rerun with unchanged yaml does not re-plan.  The places do not depend on a formula's text, only
on whether it is ``not_implemented(...)``: the record also keeps the *shape* of derivatives.yaml
(every key and its line, the names, those flags), so an edit inside a formula (the edit-verify loop)
reads the record again after a 20 ms load of that one file instead of a re-plan of every op.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..base import store
from ..base.errors import Location, VtgenError
from ..compile import artifact_key
from ..inputs.files import Inputs
from ..inputs.load import Field, Value, load_entries
from ..model.native import NativeFunction
from ..model.schema import SchemaKind

__all__ = ["FormulaPlaces", "formula_places"]


@dataclass(frozen=True)
class FormulaPlaces:
    """One op: its positional argument names and the places of its formulas."""

    arguments: tuple[str, ...]
    out: bool  # an out= overload (OpInfo's function variants never call one)
    keywords: tuple[str, ...]  # keyword-only and out= argument names
    backward: tuple[tuple[tuple[str, ...], Location], ...]  # (inputs a formula computes, where)
    forward: tuple[Location, ...]
    entry: Location | None  # the derivatives.yaml entry (None: the op has none)
    differentiable: tuple[str, ...] = ()  # inputs with a backward formula that is not not_implemented(...)
    forward_ad: bool = False  # it has a forward formula that is not not_implemented(...)
    outputs: tuple[bool, ...] | None = None  # output_differentiability (None: every output)
    forward_outputs: tuple[tuple[str, ...], ...] = ()  # the outputs each forward formula computes
    returns: tuple[str, ...] = ()  # the op's output names (`result` for one unnamed output)

    def backward_at(self, argument: int | None) -> Location | None:
        name = self.arguments[argument] if argument is not None and argument < len(self.arguments) else None
        for names, where in self.backward:
            if name in names:
                return where
        return self.backward[0][1] if self.backward else self.entry

    def forward_at(self, output: int | None = None) -> Location | None:
        """The forward formula computing output ``output`` (gradcheck names it), else the first."""
        if output is not None and output < len(self.returns):
            for names, where in zip(self.forward_outputs, self.forward, strict=False):  # old rows: none
                if self.returns[output] in names:
                    return where
        return self.forward[0] if self.forward else self.backward_at(None)


def _inputs_part(inputs: Inputs, policy_root: str | None) -> list[str]:
    """What the record's key holds besides derivatives.yaml: the namespace, the policy root, and the path and
    content of native_functions.yaml and tags.yaml (hashed once per run: both keys below share them)."""
    files = [
        f"{Path(path).resolve()}\0{store.sha256_hex(Path(path).read_bytes())}"
        for path in (inputs.native_functions, inputs.tags)
        if path
    ]
    return [inputs.namespace, policy_root or "", *files]


def _digest(release: str, parts: list[str], derivatives_path: str, derivatives: str) -> str:
    """The record's key, by the one key rule (``compile.artifact_key``): the release, ``parts``
    (``_inputs_part``), derivatives.yaml's path and ``derivatives``: its content or its shape (``_shape``)."""
    whole = [*parts, f"{Path(derivatives_path).resolve()}\0{derivatives}"]
    return artifact_key("formula_places", "", (), release, "", whole)


def _shape(path: str) -> str:
    """derivatives.yaml as the places see it: each entry's fields with their lines, a formula's text reduced
    to whether it is ``not_implemented(...)`` (``differentiable``, ``forward_ad``); names and flags as written."""

    def shape(key: str, value: Value) -> store.JSON:
        if isinstance(value, str):
            return value if key == "name" else _NOT in value
        if isinstance(value, tuple):
            return [[f.key, f.location.line, shape(f.key, f.value)] if isinstance(f, Field) else shape(key, f)
                    for f in value]  # fmt: skip
        return value

    entries = [[e.location.line, [[f.key, f.location.line, shape(f.key, f.value)] for f in e.fields]]
               for e in load_entries(path)]  # fmt: skip
    return "shape:" + store.sha256_hex(json.dumps(entries, sort_keys=True).encode("utf-8"))


_NOT = "not_implemented("
KIND = "formula_places_v6"


def _plan_places(inputs: Inputs, release: str, policy_root: str | None) -> dict[str, store.JSON]:
    from ..model import load_model
    from ..plan.kernel import build_plan
    from ..plan.policy import policy_for

    table: dict[str, store.JSON] = {}
    for k in build_plan(load_model(inputs), policy_for(policy_root, release)).kernels:
        info, args = k.info, k.function.func.arguments
        if k.op in table:
            continue
        table[k.op] = {
            "arguments": [a.name for a in args.positional],
            "out": k.function.kind is SchemaKind.out,
            "keywords": [a.name for a in (*args.kwarg_only, *args.out)],
            "backward": [[list(b.var_names), b.location.file, b.location.line] for b in info.backward] if info else [],
            "forward": [[f.location.file, f.location.line] for f in info.forward] if info else [],
            "forward_outputs": [list(f.var_names) for f in info.forward] if info else [],
            "returns": _return_names(k.function),
            "entry": [info.location.file, info.location.line] if info else None,
            "differentiable": [n for b in info.backward if _NOT not in b.formula for n in b.var_names] if info else [],
            "forward_ad": info is not None and any(_NOT not in f.formula for f in info.forward),
            "outputs": list(info.output_differentiability) if info and info.output_differentiability else None,
        }
    return table


def _list(value: store.JSON) -> list[store.JSON]:
    if not isinstance(value, list):
        raise TypeError("not a list")
    return value


def _location(pair: list[store.JSON]) -> Location:
    file, line = pair
    if not isinstance(file, str) or not isinstance(line, int):
        raise TypeError("not a location")
    return Location(file, line)


def _return_names(f: NativeFunction) -> list[store.JSON]:
    """Output names as forward formulas name them: ``result`` alone, else ``result<i>`` when unnamed."""
    returns = f.func.returns
    if len(returns) == 1:
        return [returns[0].name or "result"]
    return [r.name or f"result{i}" for i, r in enumerate(returns)]


def _names(value: store.JSON) -> tuple[str, ...]:
    items = _list(value)
    if not all(isinstance(v, str) for v in items):
        raise TypeError("not a list of names")
    return tuple(str(v) for v in items)


def _decode(row: store.JSON) -> FormulaPlaces | None:
    """A row of the state file as a record; None when it is not one (the file is damaged)."""
    if not isinstance(row, dict):
        return None
    try:
        bw, fw, entry, outputs = _list(row["backward"]), _list(row["forward"]), row["entry"], row["outputs"]
        return FormulaPlaces(
            _names(row["arguments"]),
            row["out"] is True,
            _names(row["keywords"]),
            tuple((_names(_list(b)[0]), _location(_list(b)[1:])) for b in bw),
            tuple(_location(_list(f)) for f in fw),
            None if entry is None else _location(_list(entry)),
            _names(row["differentiable"]),
            row["forward_ad"] is True,
            None if outputs is None else tuple(o is True for o in _list(outputs)),
            tuple(_names(names) for names in _list(row["forward_outputs"])),
            _names(row["returns"]),
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def _decoded(data: store.JSON, field: str, digest: str) -> dict[str, FormulaPlaces] | None:
    """The state file's places when its ``field`` ("inputs" or "shape") is ``digest`` and every row reads;
    else None."""
    ops = data.get("ops") if isinstance(data, dict) and data.get(field) == digest else None
    if not isinstance(ops, dict):
        return None
    places = {op: _decode(row) for op, row in ops.items()}
    found = {op: p for op, p in places.items() if p is not None}
    return found if len(found) == len(places) else None


def formula_places(
    inputs: Inputs, cache_dir: Path, release: str, policy_root: str | None = None
) -> dict[str, FormulaPlaces]:
    """Op (``sin``, ``add.Tensor``) → its argument names and where its formulas are, for every kernel.

    Planned with the policy the generated code follows: ``policy_root``'s own generator sources
    when it has them, else the built-in lists of ``release`` (both part of the cache key).
    """
    record = cache_dir / "formulas.json"
    data = store.read(record, KIND)
    parts = _inputs_part(inputs, policy_root)
    content = store.sha256_hex(Path(inputs.derivatives).read_bytes())
    digest = _digest(release, parts, inputs.derivatives, content)
    cached = _decoded(data, "inputs", digest)  # a damaged row: no cache
    if cached is not None:
        return cached
    shape = _digest(release, parts, inputs.derivatives, _shape(inputs.derivatives))
    cached = _decoded(data, "shape", shape)
    if isinstance(data, dict) and cached is not None:  # an edit inside formulas: the same places
        store.write(record, KIND, {**data, "inputs": digest})
        return cached
    data = {"inputs": digest, "shape": shape, "ops": _plan_places(inputs, release, policy_root)}
    record.parent.mkdir(parents=True, exist_ok=True)
    store.write(record, KIND, data)
    planned = _decoded(data, "inputs", digest)
    if planned is None:
        raise VtgenError("internal error: the formula places just planned do not read back")
    return planned
