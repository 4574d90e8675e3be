"""A derivatives.yaml formula (C++) as a Python expression over torch, for the Python autograd.

``translate`` walks the tree ``model/cpp_expr.py`` parsed and spells each construct in Python:
``at::f``/``torch::f`` → ``torch.f`` (a ``_symint`` suffix dropped), ``?:`` → ``x if c else y``,
``!``/``&&``/``||`` → ``not``/``and``/``or``, ``1.0f`` → ``1.0``, ``std::nullopt`` → ``None``,
``t.defined()`` → ``t is not None``, ``t.sym_sizes()`` → ``t.shape``, ``t.scalar_type()`` →
``t.dtype``, ``t.options()`` → a dict of dtype/device/layout spread into a factory call.  A
free function a formula calls resolves, in this order, to a function of the author's formulas
module, an operator of the library (``torch.ops.<ns>.<name>``), or one of the few helpers of
PyTorch's formulas every generated module carries (``PRELUDE_HELPERS``).  Anything else is an
``ExprError`` at the construct's offset, naming it (with a did-you-mean for an unknown name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..base.errors import Replacement, closest
from .cpp_expr import (
    Binary,
    BraceList,
    Call,
    Conditional,
    ExprError,
    Index,
    Literal,
    Member,
    Name,
    Node,
    Unary,
    literal_value,
    parse_expression,
)
from .python_names import attribute as _attribute
from .python_names import py_name, string

__all__ = ["MANUAL_PRELUDE_HELPERS", "PRELUDE_HELPERS", "Scope", "py_name", "translate", "translate_formula"]

# Helpers of PyTorch's own formulas the generated module defines (in its prelude).
PRELUDE_HELPERS = frozenset(
    (
        "handle_r_to_c",
        "maybe_multiply",
        "sum_to",
        "isComplexType",
        "not_implemented",
        "mul_tensor_backward",
        "div_tensor_self_backward",
        "div_tensor_other_backward",
        "value_selecting_backward",
        "any_grad_defined",
        "strides_or_error",
    )
)

# Those of them FunctionsManual.cpp defines (their prelude spelling mirrors the installed torch's definition);
# not_implemented is one too, but its one behaviour is to raise, which is no verdict on a formula
MANUAL_PRELUDE_HELPERS = frozenset(
    (
        "handle_r_to_c",
        "maybe_multiply",
        "mul_tensor_backward",
        "div_tensor_self_backward",
        "div_tensor_other_backward",
        "strides_or_error",
    )
)

# at:: functions formulas call without the namespace (they are written inside `using namespace at`).
_UNQUALIFIED_TORCH = frozenset(
    ("zeros_like", "ones_like", "empty_like", "full_like", "where", "zeros", "ones", "cat", "stack", "real", "imag")
)
# C++ conversions of their one argument: the Python value is the argument's
_CONVERSIONS = frozenset(
    (
        *("c10::SymInt", "at::Scalar", "c10::Scalar", "std::move", "c10::SymFloat", "at::Tensor", "Tensor"),
        *("IntArrayRef", "at::IntArrayRef", "c10::IntArrayRef", "SymIntArrayRef", "c10::SymIntArrayRef"),
    )
)
_NONE = frozenset(("std::nullopt", "c10::nullopt", "at::nullopt", "nullopt", "::std::nullopt", "std::nullopt_t"))
_CONSTANTS = {
    # whether backward keeps the graph for another pass: a Python Function cannot tell, and the formulas only
    # clone a saved buffer when it is set, which is right either way
    "retain_variables": "True",
    "M_PI": "math.pi",
    "M_E": "math.e",
    "at::kFloat": "torch.float32",
    "at::kDouble": "torch.float64",
    "at::kHalf": "torch.float16",
    "at::kBFloat16": "torch.bfloat16",
    "at::kLong": "torch.int64",
    "at::kInt": "torch.int32",
    "at::kBool": "torch.bool",
    "at::kComplexFloat": "torch.complex64",
    "at::kComplexDouble": "torch.complex128",
    "at::kStrided": "torch.strided",
    "at::MemoryFormat::Contiguous": "torch.contiguous_format",
    "at::MemoryFormat::Preserve": "torch.preserve_format",
    "c10::MemoryFormat::Contiguous": "torch.contiguous_format",
    "c10::MemoryFormat::Preserve": "torch.preserve_format",
    "LEGACY_CONTIGUOUS_MEMORY_FORMAT": "torch.contiguous_format",
    "M_LN2": "math.log(2.0)",
    "at::Reduction::None": "0",
    "at::Reduction::Mean": "1",
    "at::Reduction::Sum": "2",
}
_SCALAR_TYPES = {"Float": "float32", "Double": "float64", "Long": "int64", "Int": "int32", "Bool": "bool"}
_CASTS = {"double": "float", "float": "float", "int64_t": "int", "int": "int", "bool": "bool", "c10::SymInt": ""}
_LIST_TYPE = re.compile(r"(std::|c10::|at::)?(vector|SmallVector|array|ArrayRef)\b")
_STD_MATH = frozenset(("sqrt", "exp", "log", "sin", "cos", "tan", "pow", "fabs", "abs", "floor", "ceil"))
# method spelling: C++ member → (Python text with {o} for the object, arity) ; None arity = any
_METHODS: dict[str, tuple[str, int | None]] = {
    "defined": ("({o} is not None)", 0),
    "has_value": ("({o} is not None)", 0),
    "value": ("{o}", 0),
    "value_or": ("({a} if {o} is None else {o})", 1),
    "sym_sizes": ("{o}.shape", 0),
    "sizes": ("{o}.shape", 0),
    "sym_numel": ("{o}.numel()", 0),
    "numel": ("{o}.numel()", 0),
    "scalar_type": ("{o}.dtype", 0),
    "options": ("_options({o})", 0),
    "toDouble": ("float({o})", 0),
    "to_double": ("float({o})", 0),
    "toFloat": ("float({o})", 0),
    "toLong": ("int({o})", 0),
    "toComplexDouble": ("complex({o})", 0),
    "layout": ("{o}.layout", 0),
    "device": ("{o}.device", 0),
    "sym_strides": ("{o}.stride()", 0),
    "strides": ("{o}.stride()", 0),
    "mT": ("{o}.mT", 0),
    "mH": ("{o}.mH", 0),
    "requires_grad": ("{o}.requires_grad", 0),
    "is_sparse": ("{o}.is_sparse", 0),
    "is_cuda": ("{o}.is_cuda", 0),
    "zeros": ("_zeros_info({o})", 0),
    "item": ("{o}.item()", 0),
    "sym_size": ("{o}.size({a})", 1),
    "size": ("{o}.size({a})", 1),
    "sym_stride": ("{o}.stride({a})", 1),
    "dtype": ("{o}.dtype", 0),
    "back": ("{o}[-1]", 0),  # std::vector / ArrayRef: the last element (``self.sym_size(dim.back())``)
    "front": ("{o}[0]", 0),
    "is_cpu": ('_on_device({o}, "cpu")', 0),  # of a device or a tensor
    "is_xpu": ('_on_device({o}, "xpu")', 0),
    "suggest_memory_format": ("_suggest_memory_format({o})", 0),
}
# C++ members with no Python method of that name: member → the prelude function called with the object first
# (``t.slice(dim, start, end)`` is the aten operator on a tensor, ``ArrayRef::slice`` on a size list)
_CPP_MEMBERS = {"slice": "_cpp_slice", "index": "_cpp_index"}
# Tensor methods whose trailing C++ parameters are keyword-only in Python: member → (positional count, names)
_KEYWORD_TAIL: dict[str, tuple[int, tuple[str, ...]]] = {
    "contiguous": (0, ("memory_format",)),
    "div": (1, ("rounding_mode",)),
    "expand": (1, ("implicit",)),
    "sum": (2, ("dtype",)),
    "mean": (2, ("dtype",)),
    "nansum": (2, ("dtype",)),
}


@dataclass(frozen=True)
class Scope:
    """What the names of a formula mean where it is evaluated.

    ``values``: names bound as Python locals (arguments, saved members, outputs, ``grad``...);
    ``library_ops``: operator names of the library (``torch.ops.<namespace>.<name>``);
    ``user_functions``: functions of the author's formulas module (called as ``_formulas.<name>``);
    ``integers``: those of ``values`` that are integers (``int``/``SymInt`` arguments), which C++ divides
    rounding toward zero.
    """

    values: frozenset[str]
    namespace: str
    library_ops: frozenset[str] = frozenset()
    user_functions: frozenset[str] = frozenset()
    integers: frozenset[str] = frozenset()


def translate_formula(text: str, scope: Scope) -> str:
    """Parse and translate one formula; ``ExprError`` at the offset of what cannot be."""
    return translate(parse_expression(text), scope)


def translate(node: Node, scope: Scope) -> str:
    """The Python expression of ``node`` (compound sub-expressions parenthesized; a chain of one
    left-associative operator, ``a + b - c``, as one parenthesized run); ``ExprError`` where the
    tree is deeper than the Python can be (``_too_deep``)."""
    deep = _too_deep(node)
    if deep is not None:
        raise ExprError(f"the formula nests more than {_MAX_DEPTH} levels deep", deep.offset)
    return _Translator(scope).expr(node)


# The translation recurses once per level of the tree (a left-associative chain counts once), and
# each level adds at most two nested parentheses: Python takes 200.
_MAX_DEPTH = 90
# C++ binary operators Python spells alike and evaluates left to right alike: a run of one group
# needs no parentheses inside (comparisons do: Python chains them)
_CHAINS = {"+": "+-", "-": "+-", "*": "*/%", "/": "*/%", "%": "*/%", "|": "|", "^": "^", "&": "&"}
_CHAINS.update({"<<": "<<>>", ">>": "<<>>", "&&": "&&", "||": "||"})


def _chain(node: Binary) -> tuple[Node, list[tuple[str, Node]]]:
    """``node``'s left spine of one chain group: its first operand and each (operator, operand) after."""
    group = _CHAINS.get(node.op)
    rest: list[tuple[str, Node]] = []
    current: Node = node
    while isinstance(current, Binary) and group is not None and _CHAINS.get(current.op) == group:
        rest.append((current.op, current.right))
        current = current.left
    if not rest:
        return node.left, [(node.op, node.right)]
    return current, rest[::-1]


def _children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, Binary):
        first, rest = _chain(node)
        return (first, *(n for _, n in rest))
    if isinstance(node, Call):
        return (node.func, *node.args)
    if isinstance(node, Member):
        return (node.obj,)
    if isinstance(node, Index):
        return (node.obj, node.index)
    if isinstance(node, BraceList):
        return node.items
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Conditional):
        return (node.condition, node.then, node.otherwise)
    return ()


def _too_deep(root: Node) -> Node | None:
    """The first node below ``_MAX_DEPTH`` levels of ``root`` (walked without recursion), or None."""
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > _MAX_DEPTH:
            return node
        stack += [(child, depth + 1) for child in _children(node)]
    return None


class _Translator:
    def __init__(self, scope: Scope) -> None:
        self.scope = scope

    def expr(self, node: Node) -> str:
        if isinstance(node, Literal):
            return _literal(node)
        if isinstance(node, Name):
            return self.name(node)
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, Member):
            return self.member(node, None)
        if isinstance(node, Index):
            return f"{self.expr(node.obj)}[{self.expr(node.index)}]"
        if isinstance(node, BraceList):
            return self.brace_list(node)
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        assert isinstance(node, Conditional)
        then, cond, other = self.expr(node.then), self.expr(node.condition), self.expr(node.otherwise)
        return f"({then} if {cond} else {other})"

    def binary(self, node: Binary) -> str:
        first, rest = _chain(node)
        operand = self.boolean if node.op in ("&&", "||") else self.expr
        spelled = {"&&": "and", "||": "or"}
        text, left = operand(first), first
        for op, right in rest:
            if op == "/" and self.integral(left) and self.integral(right):  # C++ rounds toward zero, Python's / not
                text = f"_cpp_div({text}, {operand(right)})"
            else:
                text += f" {spelled.get(op, op)} {operand(right)}"
            left = Binary(op, left, right, right.offset)
        return f"({text})"

    def integral(self, node: Node) -> bool:
        """Is ``node`` an integer in C++ (an integer literal, an ``int``/``SymInt`` argument, a size, a
        number of elements or of dimensions, or arithmetic of those)?"""
        if isinstance(node, Literal):
            return node.kind == "int"
        if isinstance(node, Name):
            return node.text in self.scope.integers
        if isinstance(node, Unary):
            return node.op in ("-", "+") and self.integral(node.operand)
        if isinstance(node, Binary):
            return node.op in ("+", "-", "*", "/", "%") and self.integral(node.left) and self.integral(node.right)
        if isinstance(node, Index):  # an element of a size list
            obj = node.obj
            return isinstance(obj, Call) and isinstance(obj.func, Member) and obj.func.name in _SIZE_LISTS
        return isinstance(node, Call) and isinstance(node.func, Member) and node.func.name in _INTEGER_MEMBERS

    def boolean(self, node: Node) -> str:
        """An operand of ``&&``/``||``: C++ converts it to bool (Python's ``or`` would return it)."""
        return self.expr(node) if _is_boolean(node) else f"bool({self.expr(node)})"

    def unary(self, node: Unary) -> str:
        inner = self.expr(node.operand)
        if node.op == "!":
            return f"(not {inner})"
        if node.op == "*":
            return inner  # dereferencing an optional: Python has the value itself
        if node.op == "&":
            raise ExprError("taking an address ('&') has no Python spelling", node.offset)
        return f"({node.op}{inner})"

    def brace_list(self, node: BraceList) -> str:
        inner = node.items[0] if len(node.items) == 1 else None
        if node.type is None and isinstance(inner, BraceList) and inner.type is None:
            return self.brace_list(inner)  # {{1, 1}}: an ArrayRef made from the inner list, which is the value
        items = [self.expr(i) for i in node.items]
        if node.type is not None and not _LIST_TYPE.match(node.type):
            if len(items) == 1:
                return items[0]  # T{x}: a conversion
            raise ExprError(f"the initializer '{node.type}{{...}}' has no Python spelling", node.offset)
        return f"[{', '.join(items)}]"

    def name(self, node: Name) -> str:
        text = node.text.removeprefix("::")
        if text in self.scope.values:
            return py_name(text)
        if text in _NONE:
            return "None"
        if text in _CONSTANTS:
            return _CONSTANTS[text]
        m = re.fullmatch(r"(?:at|c10)::(?:ScalarType|k)::?(\w+)", text)
        if m and m.group(1) in _SCALAR_TYPES:
            return f"torch.{_SCALAR_TYPES[m.group(1)]}"
        close = closest(text, self.scope.values)
        hint, fix = (f"; did you mean '{close}'?", Replacement(text, close)) if close else ("", None)
        raise ExprError(f"unknown name '{text}'{hint}", node.offset, fix)

    def call(self, node: Call) -> str:
        if isinstance(node.func, Member):
            return self.member(node.func, node.args)
        if not isinstance(node.func, Name):
            return f"{self.expr(node.func)}({self.arguments(node.args)})"
        return self.function(node.func, node.args)

    def arguments(self, args: tuple[Node, ...]) -> str:
        parts = []
        for a in args:
            text = self.expr(a)
            parts.append(f"**{text}" if text.startswith("_options(") or _is_options_name(a) else text)
        return ", ".join(parts)

    def function(self, func: Name, args: tuple[Node, ...]) -> str:
        text = func.text.removeprefix("::")
        if func.template:
            return self.template_call(func, args)
        if text in ("Tensor", "at::Tensor") and not args:
            return "None"  # an undefined tensor
        if text in _CONVERSIONS:
            return self.expr(args[0]) if len(args) == 1 else _fail(f"'{text}(...)' has no Python spelling", func)
        m = re.fullmatch(r"std::(\w+)", text)
        if m and m.group(1) in _STD_MATH:
            return f"math.{m.group(1)}({self.arguments(args)})"
        if text in ("GradMode::is_enabled", "at::GradMode::is_enabled") and not args:
            return "torch.is_grad_enabled()"
        if text in ("std::max", "std::min"):
            return f"{text[5:]}({self.arguments(args)})"
        if text in self.scope.user_functions:
            return f"_formulas.{text}({self.arguments(args)})"
        if text in self.scope.library_ops:
            packet = _attribute(_attribute("torch.ops", self.scope.namespace), text)
            return f"{packet}({self.arguments(args)})"
        if text in PRELUDE_HELPERS:
            return f"_{text}({self.arguments(args)})"
        m = re.fullmatch(r"(?:at|torch)::(\w+)", text)
        if m or text in _UNQUALIFIED_TORCH:
            name = (m.group(1) if m else text).removesuffix("_symint")
            return f"{_attribute('torch', name)}({self.arguments(args)})"
        if "::" in text:
            raise ExprError(f"the C++ function '{text}' has no Python spelling", func.offset)
        known = self.scope.user_functions | self.scope.library_ops | PRELUDE_HELPERS
        close = closest(text, known)
        hint, fix = (f"; did you mean '{close}'?", Replacement(text, close)) if close else ("", None)
        raise ExprError(
            f"unknown helper '{text}': not an operator of the library, a function of its formulas module "
            f"or a known helper{hint}",
            func.offset,
            fix,
        )

    def template_call(self, func: Name, args: tuple[Node, ...]) -> str:
        text, targ = func.text, func.template
        if text == "std::get" and len(args) == 1 and len(targ) == 1 and targ[0].isdigit():
            return f"{self.expr(args[0])}[{targ[0]}]"
        if text in ("std::optional", "c10::optional", "::std::optional") and len(args) == 1:
            return self.expr(args[0])
        if text in ("std::tuple", "std::make_tuple", "::std::tuple"):
            items = [self.expr(a) for a in args] if args else ["None"] * len(targ)
            return f"({', '.join(items)},)"
        if text in ("std::vector", "::std::vector") and len(targ) == 1 and 1 <= len(args) <= 2:
            fill = self.expr(args[1]) if len(args) == 2 else ("None" if targ[0] in ("Tensor", "at::Tensor") else "0")
            return f"[{fill}] * {self.expr(args[0])}"
        if re.fullmatch(r"(at|c10)::Optional(ArrayRef|IntArrayRef|SymIntArrayRef)", text) and len(args) == 1:
            return self.expr(args[0])
        if text == "static_cast" and len(args) == 1 and len(targ) == 1 and targ[0] in _CASTS:
            cast = _CASTS[targ[0]]
            return f"{cast}({self.expr(args[0])})" if cast else self.expr(args[0])
        raise ExprError(f"the template call '{text}<{', '.join(targ)}>' has no Python spelling", func.offset)

    def member(self, node: Member, args: tuple[Node, ...] | None) -> str:
        obj = self.expr(node.obj)
        name = node.name
        if node.template and name in ("to", "item") and args is not None and not args:
            cast = _CASTS.get(node.template[0])
            if cast:
                return f"{cast}({obj}.item() if isinstance({obj}, torch.Tensor) else {obj})"
        if node.template:
            written = f"{name}<{', '.join(node.template)}>"
            raise ExprError(f"the template member '{written}' has no Python spelling", node.offset)
        if args is None:
            attribute = _METHODS.get(name)
            if attribute is not None and attribute[1] == 0:
                return attribute[0].format(o=obj)
            return _attribute(obj, name)
        if name in ("size", "sym_size") and not args:
            return f"len({obj})"
        spelled = _METHODS.get(name)
        if spelled is not None and spelled[1] == len(args):
            return spelled[0].format(o=obj, a=self.arguments(args))
        python = name.removesuffix("_symint")
        if python in _CPP_MEMBERS:
            return f"{_CPP_MEMBERS[python]}({', '.join([obj, self.arguments(args)] if args else [obj])})"
        tail = _KEYWORD_TAIL.get(python)
        if tail is not None and tail[0] < len(args) <= tail[0] + len(tail[1]):
            named = [f"{k}={self.expr(a)}" for k, a in zip(tail[1], args[tail[0] :], strict=False)]
            leading = [self.arguments(args[: tail[0]])] if tail[0] else []
            return f"{_attribute(obj, python)}({', '.join([*leading, *named])})"
        return f"{_attribute(obj, python)}({self.arguments(args)})"


# members whose value is an integer, or a list of them (``Scope.integers``' C++ division)
_INTEGER_MEMBERS = frozenset(("size", "sym_size", "numel", "sym_numel", "dim", "stride", "sym_stride"))
_SIZE_LISTS = frozenset(("sizes", "sym_sizes", "strides", "sym_strides"))
_BOOLEAN_OPS = frozenset(("&&", "||", "==", "!=", "<", ">", "<=", ">="))
_BOOLEAN_METHODS = frozenset(("defined", "has_value", "is_complex", "is_conj", "requires_grad", "is_same_size"))


def _is_boolean(node: Node) -> bool:
    """Is ``node`` a bool already (a comparison, ``!``, ``t.defined()``, ``true``)?"""
    if isinstance(node, Binary):
        return node.op in _BOOLEAN_OPS
    if isinstance(node, Unary):
        return node.op == "!"
    if isinstance(node, Literal):
        return node.kind == "bool"
    return isinstance(node, Call) and isinstance(node.func, Member) and node.func.name in _BOOLEAN_METHODS


def _is_options_name(node: Node) -> bool:
    return isinstance(node, Name) and node.text.endswith("_options")


def _literal(node: Literal) -> str:
    """The literal's C++ value as Python spells it (``010`` → ``8``, a string through ``repr``)."""
    value = literal_value(node)
    return string(value) if isinstance(value, str) else repr(value)


def _fail(message: str, node: Name) -> str:
    raise ExprError(message, node.offset)
