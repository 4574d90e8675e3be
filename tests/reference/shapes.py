"""What the parity tests compare, read off our plan or off generated text: no torchgen import.

``tests/test_parity.py`` (torchgen 2.13, installed) and ``tests/test_parity_2_14.py`` (torchgen 2.14.1,
in a subprocess) both use these; so does ``torchgen_facts.py`` on torchgen's side.  Kept apart from
both so that the 2.14 tests need no installed torchgen: a test that CI requires never skips.
"""

from __future__ import annotations

import re
from typing import Final

from vtgen_build.plan.infos import DerivativeInfo
from vtgen_build.plan.inplace_or_view import plan_inplace_or_view
from vtgen_build.plan.kernel import Plan
from vtgen_build.plan.policy import Policy
from vtgen_build.plan.values import saved_member_type

__all__ = ["compiled_lines", "hook_sites", "inplace_or_view_treatment", "saved_members"]


_HOOK: Final = re.compile(r"fire_node_creation_hooks\((.+?)\);")


def hook_sites(definition: str) -> tuple[tuple[str, ...], bool]:
    """The Nodes a kernel fires node-creation hooks on, and whether that is after its last save."""
    fired = tuple(_HOOK.findall(definition))
    last_save = max(definition.rfind("grad_fn->"), definition.rfind("grad_fns[i]->"))
    return fired, not fired or definition.rfind("fire_node_creation_hooks") > last_save


def compiled_lines(text: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The ``args.collect(...)``, ``saved.before(...)`` and ``saved.after(...)`` statements of a text, in order."""
    found: dict[str, list[str]] = {"args.collect(": [], "saved.before(": [], "saved.after(": []}
    for raw in text.splitlines():
        line = raw.strip()
        for prefix, into in found.items():
            if line.startswith(prefix):
                into.append(line)
    collect, before, after = found.values()
    return tuple(collect), tuple(before), tuple(after)


def inplace_or_view_treatment(plan: Plan, policy: Policy) -> dict[str, tuple[object, ...]]:
    """op -> its ADInplaceOrView treatment, spelled as ``torchgen_facts.inplace_or_view()`` spells it."""
    return {
        p.op: ("mutation", p.bumped)
        if p.view is None
        else ("view", p.view.base, p.view.differentiable, p.view.multi_output, p.view.metadata_change)
        for p in plan_inplace_or_view(plan, policy)
    }


def saved_members(info: DerivativeInfo) -> list[tuple[str, str]]:
    out = []
    values = sorted(info.saved_inputs, key=lambda v: v.name) + sorted(info.saved_outputs, key=lambda v: v.name)
    for v in values:
        types = saved_member_type(v.cpp_type, is_output=v.is_output)
        suffix = "_" if types[0] in ("SavedVariable", "std::vector<SavedVariable>") else ""
        out.append((v.name + suffix, types[0]))
        if len(types) > 1:
            out.append((v.name + "_released_", "bool"))
    out += [
        (a.name + "_size_", "size_t")
        for a in info.args_with_derivatives
        if a.cpp_type in ("at::TensorList", "at::ITensorListRef")
    ]
    return out
