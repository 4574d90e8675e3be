"""Human-readable plans: what ``vtgen-build inspect --op NAME`` prints, and why."""

from __future__ import annotations

from ..plan.infos import Backward, DerivativeInfo
from ..plan.kernel import KernelPlan
from ..plan.values import saved_member_type
from .python_autograd import supported_kernels

__all__ = ["describe_kernel", "describe_stable_kernel"]


def describe_kernel(k: KernelPlan) -> str:
    f = k.function
    lines = [f"{f.namespace}::{k.op}  [{k.dispatch_key}]  declared at {f.location}"]
    if k.kind == "fallback":
        lines.append("  registration: not-implemented fallback (no derivative formula matches this op)")
        return "\n".join(lines)
    lines.append(f"  kernel: VariableType::{k.wrapper}")
    lines.append(f"  formulas: {_formula_source(k)}")
    lines.append(f"  requires derivative: {'yes' if k.requires_derivative else 'no'}")
    lines.append(f"  differentiable inputs: {_names(k.differentiable_inputs)}")
    lines.append(f"  differentiable outputs: {_names(k.differentiable_outputs)}")
    if k.mutated:
        lines.append(
            f"  mutates: {', '.join(k.mutated)} (returns nothing; as an in-place op: history rebased on each, "
            "version bumped in ADInplaceOrView, leaf and saved-tensor checks)"
        )
    lines.append(f"  inputs with a formula (next edges): {_names(k.args_with_derivatives)}")
    if k.check_no_requires_grad:
        lines.append(f"  checked not to require grad: {', '.join(k.check_no_requires_grad)}")
    lines.append(f"  backward Node: {k.node or '(none created)'}")
    lines.append(f"  dispatch guard: {k.guard}" + (f" (view of '{k.view_of}')" if k.view_of else ""))
    if k.info is not None:
        lines += _saved(k.info)
    return "\n".join(lines)


def _names(values: tuple[object, ...]) -> str:
    return ", ".join(v.name for v in values) or "(none)"  # type: ignore[attr-defined]


def _formula_source(k: KernelPlan) -> str:
    info = k.info
    if info is None:
        return "none"
    how = "its own entry" if info.func is k.function else f"borrowed from {info.func.namespace}::{info.func.name}"
    return f"{how} at {info.location}"


def _saved(info: DerivativeInfo) -> list[str]:
    lines = ["  saved on the Node:"]
    for b in info.backward:
        for v in (*b.saved_inputs, *b.saved_outputs):
            member = saved_member_type(v.cpp_type, is_output=v.is_output)[0]
            lines.append(f"    {v.name} ({member}) = {v.expr}   because {_why(b)}")
    if len(lines) == 1:
        lines.append("    nothing")
    return lines


def _why(b: Backward) -> str:
    return f"the formula for {', '.join(b.var_names)} ({b.location}) is `{b.original}`"


def describe_stable_kernel(k: KernelPlan) -> str:
    """``inspect --stable-abi``: the op as a stable-ABI library has it. No C++ autograd (no VariableType kernel,
    Node, dispatch guard or SavedVariable): the generated Python autograd registers its Autograd kernel, an
    ``autograd.Function`` whose ``ctx`` keeps what the formulas read (the lines after this say its Python)."""
    f = k.function
    lines = [f"{f.namespace}::{k.op}  [{k.dispatch_key}]  declared at {f.location}"]
    if k.kind == "fallback" or k not in supported_kernels((k,)):
        why = "no derivative formula matches this op" if k.kind == "fallback" else "the Python autograd leaves it out"
        lines.append(f"  Autograd kernel: none ({why}; no C++ autograd in the stable ABI): autograd's own fallback")
        lines.append(f"  formulas: {_formula_source(k)}")
        return "\n".join(lines)
    lines.append("  Autograd kernel: the generated Python autograd (_autograd.py), no C++ autograd (stable ABI)")
    lines.append(f"  formulas: {_formula_source(k)}")
    lines.append(f"  differentiable inputs: {_names(k.differentiable_inputs)}")
    lines.append(f"  differentiable outputs: {_names(k.differentiable_outputs)}")
    if k.mutated:
        lines.append(f"  mutates: {', '.join(k.mutated)} (returns nothing; its history is rebased as an in-place op's)")
    lines.append(f"  inputs with a formula: {_names(k.args_with_derivatives)}")
    lines.append(f"  grad_fn: {k.node + ' (the Function names its backward so)' if k.node else '(none created)'}")
    if k.info is not None:
        lines.append("  kept on ctx for the backward:")
        kept = [
            f"    {v.name} = {v.expr}   because {_why(b)}"
            for b in k.info.backward
            for v in (*b.saved_inputs, *b.saved_outputs)
        ]
        lines += kept or ["    nothing"]
    return "\n".join(lines)
