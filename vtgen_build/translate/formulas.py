"""A derivative's formulas in Python: parsed, translated, compiled, each error at its yaml column.

What a formula's free names may mean (the library's namespace and ops, the author's functions)
and the yaml text its columns count in come from a ``Vocabulary``: the Python autograd module's
description (``emit.python_autograd.AutogradModule``) is one.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, Protocol

from ..base.errors import Location, VtgenError
from ..model.derivatives import DerivativeEntry, output_names
from ..model.native import NativeFunction
from ..plan.infos import Backward, DerivativeInfo
from .cpp_expr import Call, ExprError, Name, Node, parse_expression
from .python_formula import Scope, translate

__all__ = ["Vocabulary", "formula_error", "formula_scope", "forward_python", "integer_arguments", "python_formulas"]


class Vocabulary(Protocol):
    """What the free names of a formula may mean, and the derivatives entries (their text)."""

    @property
    def namespace(self) -> str: ...

    @property
    def library_ops(self) -> frozenset[str]: ...

    @property
    def user_functions(self) -> frozenset[str]: ...

    @property
    def entries(self) -> tuple[DerivativeEntry, ...]: ...


def formula_error(exc: ExprError, b_location: Location, expression: str, module: Vocabulary) -> VtgenError:
    """``exc`` (an offset in ``expression``) as an error at the formula's yaml line and column."""
    line = _yaml_line(module.entries, b_location)
    start = line.find(expression[:24]) if line else -1
    if start < 0:
        start = line.find(": ") + 2 if line else 0
    return VtgenError(f"{exc.message} (column {start + exc.offset + 1})", b_location, exc.fix)


def _yaml_line(entries: tuple[DerivativeEntry, ...], where: Location) -> str:
    for e in entries:
        lines = e.text.splitlines()
        if e.location.file == where.file and e.location.line <= where.line < e.location.line + len(lines):
            return lines[where.line - e.location.line]
    return ""


def formula_scope(
    values: set[str] | frozenset[str], module: Vocabulary, integers: frozenset[str] = frozenset()
) -> Scope:
    """The scope of a formula evaluated where ``values`` are bound as Python locals (``integers``: those of
    them that are integers)."""
    return Scope(frozenset(values), module.namespace, module.library_ops, module.user_functions, integers)


def integer_arguments(f: NativeFunction) -> frozenset[str]:
    """The arguments of ``f`` that are integers (``int``, ``SymInt``, optional or not): C++ divides them
    rounding toward zero."""
    return frozenset(a.name for a in f.func.arguments.all if str(a.type).removesuffix("?") in ("int", "SymInt"))


def _translate(text: str, values: frozenset[str], b: Backward, module: Vocabulary, integers: frozenset[str]) -> str:
    try:
        return _compiled(translate(parse_expression(text), formula_scope(values, module, integers)))
    except ExprError as exc:
        raise formula_error(exc, b.location, b.original, module) from None


def _compiled(python: str) -> str:
    """``python`` once Python has compiled it as an expression (``ExprError`` if it cannot)."""
    try:
        compile(python, "<formula>", "eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ExprError(f"the formula's Python does not compile: {exc}", 0) from None
    return python


def python_formulas(info: DerivativeInfo, module: Vocabulary) -> tuple[tuple[Backward, str], ...]:
    """Each backward formula of ``info`` with its Python text (for ``inspect --op`` and the module).

    The yaml text is translated first (its errors have the right columns), then the plan's
    rewritten text (saved members in place of ``self.sym_sizes()``...), which the module runs.
    """
    f = info.func
    originals = _original_names(f, info)
    rewritten = _backward_names(info)
    found = []
    integers = integer_arguments(f)
    for b in info.backward:
        _translate(b.original, originals, b, module, integers)
        found.append((b, _translate(b.formula, rewritten, b, module, integers)))
    return tuple(found)


# PyTorch's helpers that read the forward gradients of their first argument, a tensor list (C++ reaches a
# tensor's tangent through the tensor): the Python passes that argument's tangents (``tensors_t``) instead.
TANGENT_READERS = frozenset(("cat_jvp", "stack_jvp", "block_diag_jvp"))


def _with_tangents(node: Node, values: frozenset[str]) -> Node:
    """``node`` with each ``TANGENT_READERS`` call's first argument, a bound name, spelled as its tangents."""
    if isinstance(node, Call) and isinstance(node.func, Name) and node.func.text in TANGENT_READERS and node.args:
        first = node.args[0]
        if isinstance(first, Name) and f"{first.text}_t" in values:
            return replace(node, args=(replace(first, text=f"{first.text}_t"), *node.args[1:]))
    changes: dict[str, Any] = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, tuple) and value and not isinstance(value[0], str):
            changes[f.name] = tuple(_with_tangents(v, values) for v in value)
        elif hasattr(value, "__dataclass_fields__"):
            changes[f.name] = _with_tangents(value, values)
    return replace(node, **changes) if changes else node


def forward_python(
    formula: str, values: frozenset[str], where: Location, original: str, module: Vocabulary,
    integers: frozenset[str] = frozenset(),
) -> str:  # fmt: skip
    """A forward-mode formula's Python; an error at the start of its ``original`` yaml text (``integers``:
    the values that are integers)."""
    try:
        expression = _with_tangents(parse_expression(formula), values)
        return _compiled(translate(expression, formula_scope(values, module, integers)))
    except ExprError as exc:
        raise formula_error(ExprError(exc.message, 0), where, original, module) from None


def _grad_names(info: DerivativeInfo) -> set[str]:
    return {"grad", "grads", "grad_input_mask", *info.available_named_gradients}


def _original_names(f: NativeFunction, info: DerivativeInfo) -> frozenset[str]:
    args = {a.name for a in f.func.arguments.all}
    return frozenset(args | set(output_names(f.func)) | {"result"} | _grad_names(info))


def _backward_names(info: DerivativeInfo) -> frozenset[str]:
    saved = {v.name for v in (*info.saved_inputs, *info.saved_outputs)}
    return frozenset(saved | _grad_names(info))
