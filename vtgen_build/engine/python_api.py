"""The typed Python API of an op library (``generate --python-api DIR``): plan, render, write.

``DIR/__init__.py`` holds one typed function per operator of the library's namespaces (see
``emit/python_api.py``) and ``DIR/py.typed`` marks it typed (PEP 561); the directory is meant to
be a subpackage of the library's Python package (``vtsample.ops``).  Both files are written
atomically and only when their content changed.  The module imports torch when imported (it
runs in the user's package); vtgen_build never imports it.
"""

from __future__ import annotations

from pathlib import Path

from ..base.errors import VtgenError
from ..base.write import write_atomic
from ..emit.python_api import ApiOp, python_api_module
from ..inputs.files import Inputs
from ..model import Model, load_model
from ..model.native import NativeFunction
from ..model.schema import SchemaKind
from ..plan.kernel import NOT_IMPLEMENTED_NODE, KernelPlan, Plan, build_plan
from ..plan.policy import Policy

__all__ = ["API_FILES", "api_ops", "autograd_sentence", "write_python_api"]

API_FILES = ("__init__.py", "py.typed")


def autograd_sentence(f: NativeFunction, kernel: KernelPlan | None) -> str:
    """What the docstring says about gradients, from the op's Autograd plan."""
    if kernel is None:
        if f.has_composite_implicit_autograd_kernel or not f.is_abstract:
            return "Autograd: differentiable through the ops it is composed of."
        return "Autograd: not differentiable (no autograd kernel)."
    if kernel.kind == "fallback" or kernel.node == NOT_IMPLEMENTED_NODE:
        return "Autograd: no derivative formula; backward through it raises."
    if f.kind is SchemaKind.out:
        return "Autograd: an out= variant, not differentiable (inputs that require grad are refused)."
    if not kernel.requires_derivative or not kernel.args_with_derivatives:
        return "Autograd: not differentiable."
    names = ", ".join(v.name for v in kernel.args_with_derivatives)
    written = f" Mutates {', '.join(kernel.mutated)} in place." if kernel.mutated else ""
    return f"Autograd: differentiable with respect to {names}.{written}"


def api_ops(model: Model, plan: Plan) -> tuple[ApiOp, ...]:
    """Every operator of a namespace other than aten (what RegisterSchema.cpp defines), in yaml order."""
    kernels = {k.op: k for k in plan.kernels if k.dispatch_key == "Autograd"}
    return tuple(
        ApiOp(f, autograd_sentence(f, kernels.get(str(f.name))))
        for f in model.native_functions
        if f.namespace != "aten"
    )


def write_python_api(inputs: Inputs, policy: Policy, directory: str) -> tuple[str, ...]:
    """Write ``directory``'s two files (when changed); returns the paths written."""
    model = load_model(inputs)
    ops = api_ops(model, build_plan(model, policy))
    if not ops:
        raise VtgenError(f"--python-api: no operator outside 'aten' in {inputs.native_functions} (--namespace?)")
    title = ", ".join(sorted({op.function.namespace for op in ops}))
    contents = {"__init__.py": python_api_module(ops, title), "py.typed": ""}
    written = []
    for name in API_FILES:
        path = Path(directory) / name
        if write_atomic(path, contents[name]):
            written.append(str(path))
    return tuple(written)
