"""Parity with torchgen 2.13 on the real yaml: registrations, Nodes per kernel, Node set, saved members.

torchgen itself (from the installed torch wheel) is the reference, through
tests/reference/torchgen_facts.py; nothing is hard-coded from its output.
"""

from __future__ import annotations

import pytest

from vtgen_build.model import Model
from vtgen_build.plan.kernel import KernelPlan, Plan, build_plan
from vtgen_build.plan.policy import load_policy

pytestmark = pytest.mark.torch

pytest.importorskip("torchgen", reason="needs torchgen (pip install torch==2.13.0)")
# With torchgen installed, the helper must import: a torchgen name it uses that was renamed is a
# failure of every test here (a collection error), never a skip.
from tests.reference import torchgen_facts as facts  # noqa: E402

from .reference.shapes import inplace_or_view_treatment, saved_members  # noqa: E402


@pytest.fixture(scope="module")
def plan(real_model: Model) -> Plan:
    return build_plan(real_model, load_policy())


def test_registrations_and_kinds_match_torchgen(plan: Plan) -> None:
    ours = {(k.op, k.dispatch_key): k.kind for k in plan.kernels}
    theirs = facts.registrations()
    assert len(theirs) == 2385
    assert ours == theirs


def test_inplace_or_view_registrations_and_treatment_match_torchgen(plan: Plan) -> None:
    """The same ops get an ADInplaceOrView kernel, each bumping the same outputs or making the same view."""
    ours = inplace_or_view_treatment(plan, load_policy())
    theirs = facts.inplace_or_view()
    assert len(theirs) == 1093
    assert sum(t[0] == "view" for t in theirs.values()) == 39
    assert ours == theirs


def test_node_created_by_each_kernel_matches_torchgen(plan: Plan) -> None:
    ours = {(k.op, k.dispatch_key): k.node for k in plan.kernels if k.kind == "kernel"}
    theirs = {key: node for key, node in facts.node_for_kernel().items() if key in ours}
    assert set(theirs) == set(ours)
    assert ours == theirs


def test_node_set_matches_torchgen(plan: Plan) -> None:
    ours = {i.node for i in plan.infos}
    assert len(ours) == len(plan.infos) == 711
    assert ours == facts.nodes()


# Differences we accept, each with its reason.  Empty today: every Node matches.
KNOWN_SAVED_MEMBER_DIFFERENCES: dict[str, str] = {}


def test_saved_members_match_torchgen(plan: Plan) -> None:
    reference = facts.saved_members()
    differing = {
        info.node: (sorted(saved_members(info)), sorted(reference.get(str(info.node), ())))
        for info in plan.infos
        if sorted(saved_members(info)) != sorted(reference.get(str(info.node), ()))
    }
    unexplained = {n: d for n, d in differing.items() if n not in KNOWN_SAVED_MEMBER_DIFFERENCES}
    assert not unexplained
    assert len(differing) <= 0.01 * len(plan.infos)


def test_compiled_autograd_members_match_torchgen(plan: Plan) -> None:
    """Every Node implements compiled autograd, and collects and swaps the members torchgen's do, in order."""
    from vtgen_build.emit.node import node_apply, node_header

    views = frozenset(n for n, _ in load_policy().view_functions)
    reference = facts.compiled_autograd()
    missing = [
        str(i.node)
        for i in plan.infos
        if "void compiled_args(CompiledNodeArgs& args) const override;" not in node_header(i, views)
        or "SwapSavedVariables& saved) override;" not in node_header(i, views)
    ]
    assert not missing
    ours = {str(i.node): facts.compiled_lines(node_apply(i)) for i in plan.infos}
    assert set(ours) == set(reference)
    differ = sorted(n for n in ours if ours[n] != reference[n])
    assert not differ, [(n, ours[n], reference[n]) for n in differ[:3]]
    assert sum(len(c) for c, _, _ in ours.values()) > 1500
    assert ours["MulBackward0"][0] == (
        "args.collect(other_, false);",
        "args.collect(other_scalar_type);",
        "args.collect(self_, false);",
        "args.collect(self_scalar_type);",
    )


def test_node_creation_hook_sites_match_torchgen(plan: Plan) -> None:
    """2.13 fires no node-creation hooks (2.14's: tests/test_parity_2_14.py)."""
    from vtgen_build.emit.kernel import kernel_definition

    ours = {(k.op, k.dispatch_key): facts.hook_sites(kernel_definition(k)) for k in plan.kernels if k.kind == "kernel"}
    assert ours == facts.node_creation_hooks()
    assert set(ours.values()) == {((), True)}


@pytest.mark.parametrize(
    ("op", "node", "saved"),
    [
        ("sin", "SinBackward0", {"self"}),
        ("mul.Tensor", "MulBackward0", {"self", "other", "self_scalar_type", "other_scalar_type"}),
        ("add_.Tensor", "AddBackward0", {"alpha", "other_scalar_type", "self_scalar_type"}),
        ("sin.out", None, None),
    ],
)
def test_spot_checks(plan: Plan, op: str, node: str | None, saved: set[str] | None) -> None:
    (kernel,) = plan.by_op(op)
    assert kernel.node == node
    if saved is not None:
        assert kernel.info is not None
        assert {v.name for v in kernel.info.saved_inputs} == saved


def test_complex_autograd_checks_match_torchgen(plan: Plan) -> None:
    ours = {(k.op, k.dispatch_key): frozenset(k.complex_checked) for k in plan.kernels if k.kind == "kernel"}
    assert ours == facts.complex_checked()
    assert sum(map(len, ours.values())) > 400


def test_save_guards_match_torchgen(plan: Plan) -> None:
    ours = {(k.op, k.dispatch_key): frozenset(k.save_guards) for k in plan.kernels if k.kind == "kernel"}
    theirs = facts.save_guards()
    assert ours == theirs
    assert sum(map(len, theirs.values())) > 50


def test_debug_checks_match_torchgen(plan: Plan) -> None:
    def summary(k: KernelPlan) -> tuple[bool, frozenset[str], frozenset[str]]:
        outs = k.debug.outputs if k.debug else ()
        return (
            k.debug is not None,
            frozenset(o for o, _, unique, _ in outs if unique),
            frozenset(o for o, _, _, fresh in outs if fresh),
        )

    ours = {(k.op, k.dispatch_key): summary(k) for k in plan.kernels if k.kind == "kernel"}
    assert ours == facts.debug_checks()


def test_jvp_decompositions_match_torchgen(plan: Plan) -> None:
    ours = {(k.op, k.dispatch_key) for k in plan.kernels if k.jvp_decomposition}
    assert ours == facts.jvp_decompositions()
    assert len(ours) > 150


def test_tangent_clones_match_torchgen(plan: Plan) -> None:
    """In-place kernels reusing the out-of-place forward formula copy ``self_t`` under grad mode
    (86 on 2.13, 33 of them ``_foreach_`` kernels doing so element by element)."""
    from vtgen_build.emit.kernel import kernel_definition

    clone = "self_t = GradMode::is_enabled() ? self_t.clone() : self_t;"
    ours = {(k.op, k.dispatch_key) for k in plan.kernels if k.kind == "kernel" and clone in kernel_definition(k)}
    assert ours == facts.tangent_clones()
    assert len(ours) == 86


def test_forward_formulas_match_torchgen(plan: Plan) -> None:
    """Every kernel's forward-mode formulas, text for text, and the tangent and primal each name
    reads (``_foreach_`` kernels: element ``i`` of the right list)."""
    import re

    from vtgen_build.emit.kernel import kernel_definition

    ours_binding = re.compile(r"auto (\w+?)(_t_raw|_p) = (?:tangent_of|primal_of)\((.+?)\);")
    ours = {
        (k.op, k.dispatch_key): facts.forward_code(kernel_definition(k), ours_binding)
        for k in plan.kernels
        if k.kind == "kernel"
    }
    # torchgen keeps the blanks around a formula spelled over several yaml lines; we do not
    theirs = {key: (tuple(f.strip() for f in fs), bound) for key, (fs, bound) in facts.forward().items()}
    differ = sorted(key for key in theirs if ours.get(key) != theirs[key])
    assert not differ, [(key, ours.get(key), theirs[key]) for key in differ[:3]]
    assert sum(bool(f) for f, _ in ours.values()) > 700  # 721 on 2.13, 134 of them _foreach_ kernels


def test_tangents_are_attached_after_every_formula(plan: Plan) -> None:
    """As in torchgen: no output gets its tangent before the last forward formula ran.

    linalg_lu's U formula reads the output L; had L's tangent been attached first, U's
    tangent would itself carry one ("Setting a forward grad that itself has a forward
    gradient"), which gradcheck's forward AD revealed.
    """
    from vtgen_build.emit.kernel import kernel_definition

    early = []
    multi = 0
    for k in plan.kernels:
        if k.kind != "kernel" or k.op.startswith("_foreach_"):
            continue
        lines = kernel_definition(k).splitlines()
        formulas = [i for i, line in enumerate(lines) if "_new_fw_grad_opt = " in line and "nullopt" not in line]
        attached = [i for i, line in enumerate(lines) if "._set_fw_grad(" in line]
        multi += len(formulas) > 1
        if formulas and attached and min(attached) < max(formulas):
            early.append(k.op)
    assert not early, early[:5]
    assert multi >= 10  # kernels with several forward formulas: 11 on 2.13 (linalg_lu, native_group_norm, ...)
