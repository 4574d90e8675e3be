"""The child protocol (gradcheck_child/protocol.py, rows.py): typed records with JSON forms, shared by both sides.

Every request and result row round-trips through its JSON text; a malformed one is a ``ProtocolError``
naming the record and the key; the child modules read their requests and build their rows only as
records.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vtgen_build.gradcheck.records import entries_of
from vtgen_build.gradcheck_child.protocol import (
    ArgSample,
    At,
    CaptureTarget,
    Check,
    CheckRequest,
    Entry,
    FuncChecks,
    InstalledSchema,
    InstalledSchemas,
    OpSamples,
    ProtocolError,
    ReachRequest,
    ReachRow,
    ReferenceAnswer,
    ReferenceRequest,
    SchemaRequest,
    SchemasQuery,
    Start,
    TierEntry,
    TierModule,
    TierRequest,
    TierStart,
)

CHILD = Path(__file__).resolve().parents[1] / "vtgen_build" / "gradcheck_child"

names = st.text(max_size=8)
few = st.lists(names, max_size=3).map(tuple)
ints = st.integers(-3, 10**6)
small = st.integers(0, 5)
flags = st.booleans()
maybe = st.none() | names
durations = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
plain = st.recursive(
    st.none() | flags | ints | st.floats(allow_nan=False, allow_infinity=False) | names,
    lambda inner: st.lists(inner, max_size=3).map(tuple),
    max_leaves=6,
)


def _pairs(values: st.SearchStrategy[Any]) -> st.SearchStrategy[tuple[tuple[str, Any], ...]]:
    """Key -> value pairs with distinct keys (a JSON object's form)."""
    return st.dictionaries(names, values, max_size=3).map(lambda d: tuple(d.items()))


checks = st.builds(
    Check, kind=names, variant=names, status=names, test=names, dtype=names, sample=st.none() | ints, samples=ints,
    message=names, positions=st.lists(ints, max_size=3).map(tuple), why=names, hit=few, ours_ran=flags, inputs=few,
    reference=names, batched=flags, input=st.none() | ints, unbatched=names, no_kernel=flags, others=few,
)  # fmt: skip
funcs = st.builds(
    FuncChecks, op=names, vmap=st.sampled_from(["rule", "fallback"]),
    checks=st.lists(st.tuples(names, names, names), max_size=3).map(tuple), sample=st.none() | ints, why=names,
    case=names,
)  # fmt: skip
entries = st.builds(
    Entry, name=names, checks=st.lists(checks, max_size=3).map(tuple), direct=st.none() | _pairs(few), aten=names,
    source=names, schema=flags, error=names, fatal=flags, unreadable=names, seconds=durations,
    func=st.lists(funcs, max_size=2).map(tuple), cut=flags, reference_error=names,
)  # fmt: skip
shapes = st.lists(small, max_size=3).map(tuple)
arg_samples = st.builds(
    ArgSample, name=names, kind=names, shape=shapes, shapes=st.lists(shapes, max_size=2).map(tuple), values=names,
    high=st.none() | ints, grad=flags, dtype=maybe, value=plain, through=maybe, data=st.none() | shapes,
)  # fmt: skip
op_samples = st.builds(
    OpSamples, op=names, namespace=names, node=maybe, inplace=maybe, inplace_node=maybe, out=maybe,
    samples=st.lists(st.lists(arg_samples, max_size=2).map(tuple), max_size=2).map(tuple), dtypes=few,
    forward=flags, why_not=maybe, out_args=few, positions=_pairs(ints), outputs=shapes, writes=few,
    inplace_writes=few, forward_outputs=shapes, random=flags,
)  # fmt: skip
variants = _pairs(st.tuples(names, names)).map(lambda ps: tuple((op, f, v) for op, (f, v) in ps))
targets = st.builds(
    CaptureTarget, op=names, counter=names, entries=few, grad=few, forward=flags, through_backward=few,
    outputs=st.none() | st.lists(flags, max_size=3).map(tuple),
)  # fmt: skip
check_requests = st.builds(
    CheckRequest, library=names, ops=st.none() | few, out_ops=few, autograd_ops=few, variants=variants, dtypes=few,
    max_samples=ints, timeout=ints, skip=few, targets=st.lists(targets, max_size=2).map(tuple), reference_dir=maybe,
    batched=flags, first_failure=flags, whole=few,
)  # fmt: skip
tier_requests = st.builds(
    TierRequest, first_failure=flags, opinfo=flags, variants=variants, dtypes=few, max_samples=ints,
    modules=st.lists(st.builds(TierModule, names, names), max_size=2).map(tuple), scoped=few,
    entries=st.lists(st.builds(TierEntry, op_samples, flags), max_size=2).map(tuple), kinds=few, timeout=ints,
    batched=flags, library=maybe, formulas=maybe,
)  # fmt: skip
schemas = _pairs(st.none() | st.builds(InstalledSchema, few, few, names)).map(InstalledSchemas)

RECORDS: dict[str, st.SearchStrategy[Any]] = {
    "check": checks,
    "func": funcs,
    "entry": entries,
    "target": targets,
    "check request": check_requests,
    "reach request": st.builds(ReachRequest, few, ints),
    "reach row": st.builds(ReachRow, names, few, few),
    "reference request": st.builds(ReferenceRequest, few),
    "reference answer": _pairs(checks).map(ReferenceAnswer),
    "schemas query": st.builds(SchemasQuery, few),
    "installed schemas": schemas,
    "arg sample": arg_samples,
    "op samples": op_samples,
    "schema request": st.builds(
        SchemaRequest, names, st.lists(op_samples, max_size=2).map(tuple), ints, few, flags, flags
    ),
    "tier request": tier_requests,
    "tier start": st.builds(TierStart, few, _pairs(names)),
    "start": st.builds(Start, names, names),
    "at": st.builds(At, names),
}


@pytest.mark.parametrize("kind", sorted(RECORDS))
def test_every_record_round_trips_through_its_json_text(kind: str) -> None:
    @settings(max_examples=20)
    @given(RECORDS[kind])
    def round_trip(record: Any) -> None:
        text = json.dumps(record.to_json())
        assert type(record).from_json(json.loads(text)) == record

    round_trip()


def _request() -> CheckRequest:
    target = CaptureTarget("aten::sin_backward", "sin_backward", ("sin",), ("grad_output",), True)
    return CheckRequest(
        library="/x/lib.so",
        ops=("aten::sin",),
        out_ops=("aten::sin.out",),
        autograd_ops=("aten::sin", "aten::sin_"),
        variants=(("aten::sin", "sin", "function"), ("aten::sin_", "sin", "inplace")),
        dtypes=("float64",),
        max_samples=2,
        timeout=30,
        skip=("done",),
        targets=(target,),
        reference_dir="/x/reference",
        batched=True,
        first_failure=True,
        whole=(),
    )


def test_the_request_keeps_its_json_form() -> None:
    """The OpInfo child's request: the form the child has always read (``variants`` an object)."""
    request = _request()
    assert request.variant_of == {"aten::sin": ["sin", "function"], "aten::sin_": ["sin", "inplace"]}
    every = CheckRequest.from_json({**request.to_json(), "ops": None, "reference_dir": None})
    assert every.ops is None and every.reference_dir is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("timeout", "30", r"request\.timeout: '30' is not an integer"),
        ("batched", 1, r"request\.batched: 1 is not true or false"),
        ("skip", ["a", 2], r"request\.skip: \['a', 2\] is not a list of strings"),
        ("variants", {"aten::sin": ["sin"]}, "'variants' is not an object of"),
        ("library", None, r"request\.library: None is not a string"),
        ("targets", [{"op": "x"}], "target: no 'counter'"),
        ("targets", [{"op": "x", "counter": "x", "entries": [], "grad": [], "forward": 1}], r"target\.forward"),
        ("surprise", 1, "request: unknown key 'surprise'"),
    ],
)
def test_a_malformed_request_names_its_key(key: str, value: object, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        CheckRequest.from_json({**_request().to_json(), key: value})


@pytest.mark.parametrize(
    ("record", "data", "message"),
    [
        (Check, {"kind": "backward", "variant": "function"}, "check: no 'status'"),
        (Check, {"status": "passed", "samples": "2"}, r"check\.samples: '2' is not an integer"),
        (Check, {"status": "passed", "hit": "sin"}, r"check\.hit: 'sin' is not a list of strings"),
        (Entry, {"entry": "sin", "checks": [{"status": 3}]}, r"check\.status: 3 is not a string"),
        (Entry, {"entry": "sin", "seconds": -1}, r"entry\.seconds: -1 is not a duration"),
        (Entry, {"entry": "sin", "entered": []}, "entry: unknown key 'entered'"),
        (Entry, {"entry": "sin", "direct": {"function": "sin"}}, r"entry\.direct\.function"),
        (FuncChecks, {"op": "sin", "vmap": "maybe"}, r"func\.vmap: 'maybe' is not rule or fallback"),
        (OpSamples, {"op": "sin", "samples": []}, "op samples: no 'namespace'"),
        (ArgSample, {"name": "x", "kind": "value", "value": {"a": 1}}, r"sample\.value: \{'a': 1\} is not a plain"),
        (ReachRequest, {"skip": [], "timeout": True}, r"reach request\.timeout: True is not an integer"),
        (ReachRow, {"entry": "sin", "forward": [1], "backward": []}, r"reach\.forward"),
        (TierStart, {"installed": [], "failed_to_install": {"sin": 1}}, r"tier start\.failed_to_install"),
        (TierRequest, [], "tier request: .* is not a JSON object"),
        (SchemaRequest, {"library": "x", "ops": "sin"}, r"schema request\.ops: 'sin' is not a list"),
    ],
)
def test_a_malformed_row_names_its_record_and_key(record: Any, data: object, message: str) -> None:
    """Never a KeyError or a TypeError: the error says which record, which key and what is wrong."""
    with pytest.raises(ProtocolError, match=message):
        record.from_json(data)


def test_an_installed_schemas_record_of_another_form_is_no_record() -> None:
    """The schemas answer is kept in the artifact cache: a record of any other form must read as none (the
    parent then asks torch again), never as an answer."""
    good = InstalledSchemas((("aten::sin", InstalledSchema(("self",), (), "")), ("aten::nope", None)))
    assert InstalledSchemas.from_json(json.loads(json.dumps(good.to_json()))) == good
    for bad in (None, [], {"aten::sin": [["self"], []]}, {"aten::sin": [["self"], [], 3]}):
        with pytest.raises(ProtocolError):
            InstalledSchemas.from_json(bad)


def test_a_row_the_parent_cannot_read_is_an_unreadable_entry() -> None:
    """A child's row with a key no record has is reported (it may hide a failure), never dropped or guessed."""
    found = entries_of([{"entry": "sin", "checks": [{"kind": "backward", "variant": "function", "status": 7}]}])
    assert len(found) == 1 and found[0].name == "sin"
    assert "check.status: 7 is not a string" in found[0].unreadable


_REQUESTS = ("request", "reach", "asked", "item", "entry", "spec", "sample", "row", "result", "theirs", "target")
_CHILD_MODULES = ("child.py", "schema_child.py", "python_tier.py", "python_tier_opinfo.py", "capture.py",
                  "batching.py", "child_loop.py")  # fmt: skip


@pytest.mark.parametrize("module", _CHILD_MODULES)
def test_the_child_reads_requests_and_builds_rows_only_as_records(module: str) -> None:
    """No subscript or ``.get`` of a request, an op's samples or a row in the child modules: they hold the
    typed records (``capture.py``'s own saved argument sets, read back by itself alone, are not protocol)."""
    reads = [
        node.lineno
        for node in ast.walk(ast.parse((CHILD / module).read_text()))
        if (isinstance(node, ast.Subscript) and ast.unparse(node.value) in _REQUESTS)
        or (isinstance(node, ast.Attribute) and node.attr == "get" and ast.unparse(node.value) in _REQUESTS)
    ]
    assert not reads, f"{module} reads a request or a row as a dict at lines {reads}"


@pytest.mark.parametrize(
    ("module", "argv", "asked", "message"),
    [
        ("schema_child", [], {"library": "x", "timeout": 5}, "schema request: no 'ops'"),
        ("child", ["--reach"], {"skip": []}, "reach request: no 'timeout'"),
        ("child", ["--reference"], {"paths": []}, "reference request: not a list of paths"),
        ("child", ["--schemas"], "aten::sin", "schemas query: not a list of op names"),
    ],
)
def test_a_child_given_a_malformed_request_says_which_key(
    tmp_path: Path, module: str, argv: list[str], asked: object, message: str
) -> None:
    """A child reads its request once, as its record, before anything else: a malformed one ends it at once
    with the record and the key in its last words (the parent shows them), never a KeyError deep in a check."""
    import importlib

    main = importlib.import_module(f"vtgen_build.gradcheck_child.{module}").main
    path = tmp_path / "request.json"
    path.write_text(json.dumps(asked))
    with pytest.raises(ProtocolError, match=message):
        main(["launch", *argv, str(path), str(tmp_path / "results")])


def test_the_python_tier_child_reads_its_request_as_its_record(tmp_path: Path) -> None:
    from vtgen_build.gradcheck_child import python_tier

    path = tmp_path / "request.json"
    path.write_text(json.dumps({"first_failure": True}))
    with pytest.raises(ProtocolError, match="tier request: no 'modules'"):
        python_tier._wait_for(str(path))
