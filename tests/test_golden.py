"""Golden output for representative ops; regenerate with ``python -m pytest tests/test_golden.py --update-golden``."""

from __future__ import annotations

from pathlib import Path

import pytest

from vtgen_build.emit.inplace_or_view import inplace_or_view_definition, inplace_or_view_registration
from vtgen_build.emit.kernel import kernel_definition, registration
from vtgen_build.emit.node import node_apply, node_header
from vtgen_build.model import Model
from vtgen_build.plan.inplace_or_view import InplaceOrViewPlan, plan_inplace_or_view
from vtgen_build.plan.kernel import Plan, build_plan
from vtgen_build.plan.policy import load_policy

pytestmark = pytest.mark.torch

GOLDEN = Path(__file__).parent / "golden"

OPS = {
    "unary": "sin",  # also forward AD from auto_element_wise
    "binary_scalar": "add.Scalar",
    "inplace": "mul_.Tensor",
    "inplace_reusing_forward": "addcmul_",  # the out-of-place JVP, on a copy of self_t under grad mode
    "out": "sin.out",
    "multi_output": "max.dim",
    "tensor_list": "cat",
    "optional_tensor": "native_layer_norm",
    "view": "expand",
    "foreach": "_foreach_add.List",
    "fallback": "__lshift__.Scalar",
    "jvp_decomposition": "_euclidean_dist",  # no forward formula: a tangent runs the decomposition
}


@pytest.fixture(scope="module")
def plan(real_model: Model) -> Plan:
    return build_plan(real_model, load_policy())


def _render(plan: Plan, op: str) -> str:
    views = frozenset(n for n, _ in load_policy().view_functions)
    parts = []
    for k in plan.by_op(op):
        parts.append(f"// registration [{k.dispatch_key}]\n{registration(k)}")
        if k.kind == "kernel":
            parts.append(kernel_definition(k))
        if k.info is not None and k.info.node is not None and k.node == k.info.node:
            parts += [node_header(k.info, views), node_apply(k.info)]
    return "\n\n".join(parts) + "\n"


@pytest.mark.parametrize("case", sorted(OPS))
def test_golden(plan: Plan, case: str, update_golden: bool) -> None:
    text = _render(plan, OPS[case])
    path = GOLDEN / f"{case}.txt"
    if update_golden:
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run pytest with --update-golden"
    assert text == path.read_text(), f"{path.name} differs: review, then rerun with --update-golden"


# ADInplaceOrView kernels: a version bump (in-place, out=), a view with its replay function, a
# Tensor[] view (one view per element), a non-differentiable view.
INPLACE_OR_VIEW_OPS = {
    "inplace_or_view_inplace": "mul_.Tensor",
    "inplace_or_view_out": "sin.out",
    "inplace_or_view_view": "transpose.int",
    "inplace_or_view_multi_view": "split.Tensor",
    "inplace_or_view_nondifferentiable_view": "_indices",
}


@pytest.fixture(scope="module")
def inplace_or_view(plan: Plan) -> dict[str, InplaceOrViewPlan]:
    return {p.op: p for p in plan_inplace_or_view(plan, load_policy())}


@pytest.mark.parametrize("case", sorted(INPLACE_OR_VIEW_OPS))
def test_golden_inplace_or_view(inplace_or_view: dict[str, InplaceOrViewPlan], case: str, update_golden: bool) -> None:
    p = inplace_or_view[INPLACE_OR_VIEW_OPS[case]]
    text = f"// registration [ADInplaceOrView]\n{inplace_or_view_registration(p)}\n\n{inplace_or_view_definition(p)}\n"
    path = GOLDEN / f"{case}.txt"
    if update_golden:
        path.write_text(text)
    assert path.is_file(), f"no golden file {path.name}: run pytest with --update-golden"
    assert text == path.read_text(), f"{path.name} differs: review, then rerun with --update-golden"
