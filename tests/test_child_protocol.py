"""The OpInfo child's request as a typed record (gradcheck_child/protocol.py), shared by both sides."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vtgen_build.gradcheck_child.protocol import CheckRequest, ProtocolError

CHILD = Path(__file__).resolve().parents[1] / "vtgen_build" / "gradcheck_child" / "child.py"


def _request() -> CheckRequest:
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
        targets=({"op": "aten::sin_backward", "counter": 3},),
        reference_dir="/x/reference",
        batched=True,
        first_failure=True,
        whole=(),
    )


def test_the_request_round_trips_through_its_json_form() -> None:
    request = _request()
    assert CheckRequest.from_json(request.to_json()) == request
    assert request.variant_of == {"aten::sin": ["sin", "function"], "aten::sin_": ["sin", "inplace"]}
    every = CheckRequest.from_json({**request.to_json(), "ops": None, "reference_dir": None})
    assert every.ops is None and every.reference_dir is None


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("timeout", "30", "'timeout' is not a int"),
        ("batched", 1, "'batched' is not a bool"),
        ("skip", ["a", 2], "'skip' is not a list of strings"),
        ("variants", {"aten::sin": ["sin"]}, "'variants' is not an object of"),
        ("library", None, "'library' is not a str"),
    ],
)
def test_a_malformed_request_names_its_key(key: str, value: object, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        CheckRequest.from_json({**_request().to_json(), key: value})


def test_the_child_reads_its_request_only_through_the_record() -> None:
    """No subscript or ``.get`` of a name ``request`` in the OpInfo child: it holds the typed record."""
    reads = [
        node.lineno
        for node in ast.walk(ast.parse(CHILD.read_text()))
        if (isinstance(node, ast.Subscript) and ast.unparse(node.value) == "request")
        or (isinstance(node, ast.Attribute) and node.attr == "get" and ast.unparse(node.value) == "request")
    ]
    assert not reads, f"{CHILD.name} reads its request as a dict at lines {reads}"
