"""Which out= operators of an op library get a Functionalize kernel instead of PyTorch's ``out`` tag.

torch.compile and torch.export functionalize every mutation.  An out= operator (``-> Tensor(a!)``)
is functionalized by PyTorch itself only when it carries ``at::Tag::out``; but with that tag,
Inductor 2.13 lowers every call of the *functional* sibling to a call of the out= operator, and
that lowering is wrong for op libraries: it passes a keyword-only argument twice (positionally
and by keyword: ``scale_add.out(x, y, 0.5, alpha=0.5, out=buf0)``) and fails under dynamic
shapes (tests/test_pytorch_issues.py reproduces both without vtgen_build).

So an out= operator of an op library that has a functional sibling (the same ``signature()``,
as many returns as the out= operator writes tensors) is registered without the ``out`` tag and
gets a Functionalize kernel generated for it (``RegisterFunctionalize.cpp``): under
functionalization it runs the functional sibling and makes each result the new value of its
out= tensor, the way PyTorch's own generated functionalization kernels treat aten's out= ops.
Eager calls never reach that kernel.  Only with backend registrations (``--register-backends``,
a build against torch): without them the schemas keep the tag.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..model.native import NativeFunction
from ..model.schema import SchemaKind

__all__ = ["FunctionalizedOut", "plan_functionalize"]


@dataclass(frozen=True)
class FunctionalizedOut:
    namespace: str
    out: str  # the out= operator as registered: ``scale_add.out``
    functional: str  # its functional sibling's name: ``scale_add``
    overload: str  # the sibling's overload name ("" for the default overload)

    @property
    def kernel(self) -> str:
        """The C++ name of its Functionalize kernel."""
        return "functionalize_" + self.out.replace(".", "_")


def plan_functionalize(functions: Iterable[NativeFunction]) -> tuple[FunctionalizedOut, ...]:
    """One entry per out= operator outside ``aten`` with a functional sibling, in yaml order."""
    fns = [f for f in functions if f.namespace != "aten"]
    functional = {(f.namespace, str(f.func.signature())): f for f in fns if f.kind is SchemaKind.functional}
    found = []
    for f in fns:
        if f.kind is not SchemaKind.out:
            continue
        sibling = functional.get((f.namespace, str(f.func.signature())))
        if sibling is None or len(sibling.func.returns) != len(f.func.arguments.out):
            continue
        found.append(FunctionalizedOut(f.namespace, str(f.name), sibling.name.name, sibling.name.overload))
    return tuple(found)
