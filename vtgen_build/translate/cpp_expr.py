"""The C++ expressions of derivatives.yaml formulas, parsed into a small frozen tree.

A formula is one C++ expression: names (``grad``, ``self``, ``at::sum``, ``std::nullopt``),
literals (``2``, ``1.0f``, ``"x"``, ``true``), member access (``a.b``, ``a->b``), calls,
indexing, ``{a, b}`` and ``std::vector<T>{a, b}`` lists, template arguments on a name
(``static_cast<double>(x)``, ``std::get<0>(t)``), unary ``- ! ~``, the binary operators
and ``?:``.  Every node keeps the offset of its first character in the formula text, so a
construct a consumer cannot handle is reported at its column.  Lambdas, assignments and
statements are not expressions of this grammar: ``parse_expression`` rejects them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..base.errors import Replacement

__all__ = [
    "MAX_NESTING",
    "Binary",
    "BraceList",
    "Call",
    "Conditional",
    "ExprError",
    "Index",
    "Literal",
    "Member",
    "Name",
    "Node",
    "Unary",
    "literal_value",
    "parse_expression",
]


class ExprError(Exception):
    """A formula that is not an expression of the grammar; ``offset`` is 0-based in its text."""

    def __init__(self, message: str, offset: int, fix: Replacement | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.fix = fix  # a did-you-mean, as the word to replace


@dataclass(frozen=True)
class Name:
    """An identifier, possibly qualified (``at::sum``), with template arguments (``std::get<0>``)."""

    text: str
    offset: int
    template: tuple[str, ...] = ()


@dataclass(frozen=True)
class Literal:
    """A number, string or ``true``/``false``; ``kind`` is ``int``, ``float``, ``str`` or ``bool``."""

    text: str
    kind: str
    offset: int


@dataclass(frozen=True)
class Member:
    """``obj.name`` or ``obj->name`` (``arrow``), the name with its template arguments if any."""

    obj: Node
    name: str
    arrow: bool
    offset: int
    template: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    func: Node
    args: tuple[Node, ...]
    offset: int


@dataclass(frozen=True)
class Index:
    obj: Node
    index: Node
    offset: int


@dataclass(frozen=True)
class BraceList:
    """``{a, b}``, or ``T{a, b}`` with ``type`` the spelled C++ type."""

    items: tuple[Node, ...]
    offset: int
    type: str | None = None


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node
    offset: int


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node
    offset: int


@dataclass(frozen=True)
class Conditional:
    condition: Node
    then: Node
    otherwise: Node
    offset: int


Node = Name | Literal | Member | Call | Index | BraceList | Unary | Binary | Conditional

_TOKEN = re.compile(
    r"""(?P<space>\s+|/\*.*?\*/)
    |(?P<number>0[xX][0-9a-fA-F]+[uUlL]*|0[bB][01]+[uUlL]*
        |(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?[fFlLuU]*)
    |(?P<string>"(?:[^"\\]|\\.)*")
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)*
        |::\s*[A-Za-z_][A-Za-z0-9_]*(?:\s*::\s*[A-Za-z_][A-Za-z0-9_]*)*)
    |(?P<op>->|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~?:.,()\[\]{}&|^=;])
    """,
    re.VERBOSE | re.ASCII,
)
# How deep a formula may nest (parentheses, calls, brackets, unary operators, ``?:``): C++ compilers
# take 256 levels, PyTorch's formulas use under 10; the bound keeps parsing and translating far from
# Python's recursion limit and the generated Python under its 200 nested parentheses.
MAX_NESTING = 50


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    offset: int


def _tokens(text: str) -> tuple[_Token, ...]:
    found = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ExprError(f"unexpected character '{text[pos]}'", pos)
        kind = m.lastgroup
        assert kind is not None
        if kind != "space":
            value = re.sub(r"\s+", "", m.group()) if kind == "name" else m.group()
            found.append(_Token(kind, value, pos))
        pos = m.end()
    return (*found, _Token("end", "", len(text)))


# Binding power of each binary operator (C++ precedence, higher binds tighter).
_BINARY = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    ">": 7,
    "<=": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
_TEMPLATE_TOKENS = frozenset(("name", "number"))


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0

    def deeper(self, offset: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ExprError(f"the formula nests more than {MAX_NESTING} levels deep", offset)

    @property
    def tok(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> _Token:
        if self.tok.text != text:
            found = f"'{self.tok.text}'" if self.tok.kind != "end" else "the end of the formula"
            raise ExprError(f"expected '{text}', found {found}", self.tok.offset)
        return self.take()

    def expression(self) -> Node:
        self.deeper(self.tok.offset)
        node = self.binary(1)
        if self.tok.text == "?":
            self.take()
            then = self.expression()
            self.expect(":")
            otherwise = self.expression()
            node = Conditional(node, then, otherwise, _offset(node))
        if self.tok.text == "=":
            raise ExprError("an assignment is not an expression a formula can hold", self.tok.offset)
        self.depth -= 1
        return node

    def binary(self, min_power: int) -> Node:
        left = self.unary()
        while self.tok.kind == "op" and _BINARY.get(self.tok.text, 0) >= min_power:
            op = self.take().text
            right = self.binary(_BINARY[op] + 1)
            left = Binary(op, left, right, _offset(left))
        return left

    def unary(self) -> Node:
        if self.tok.text in ("-", "+", "!", "~", "*", "&"):
            tok = self.take()
            self.deeper(tok.offset)
            operand = self.unary()
            self.depth -= 1
            return Unary(tok.text, operand, tok.offset)
        return self.postfix(self.primary())

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind in ("number", "string"):
            self.take()
            literal = Literal(tok.text, _literal_kind(tok), tok.offset)
            literal_value(literal)  # a literal C++ would refuse is an error here, at its column
            return literal
        if tok.kind == "name":
            return self.name()
        if tok.text == "(":
            self.take()
            inner = self.expression()
            self.expect(")")
            return inner
        if tok.text == "{":
            return self.brace_list(None, tok.offset)
        if tok.text == "[":
            raise ExprError("a lambda is not an expression a formula can hold here", tok.offset)
        found = f"'{tok.text}'" if tok.kind != "end" else "the end of the formula"
        raise ExprError(f"expected a value, found {found}", tok.offset)

    def name(self) -> Node:
        tok = self.take()
        if tok.text in ("true", "false"):
            return Literal(tok.text, "bool", tok.offset)
        template = self.template_arguments()
        if self.tok.text == "{":
            spelled = tok.text + (f"<{','.join(template)}>" if template else "")
            return self.brace_list(spelled, tok.offset)
        return Name(tok.text, tok.offset, template)

    def template_arguments(self) -> tuple[str, ...]:
        """``<a, b>`` right after a name, when it reads as template arguments (a call or list follows)."""
        if self.tok.text != "<":
            return ()
        depth, j, parts, current = 0, self.i, [], ""
        while True:
            tok = self.tokens[j]
            if tok.text == "<":
                depth += 1
                current += "<" if depth > 1 else ""
            elif tok.text in (">", ">>"):
                depth -= len(tok.text)
                if depth <= 0:
                    break
                current += tok.text
            elif tok.text == "," and depth == 1:
                parts.append(current)
                current = ""
            elif tok.kind in _TEMPLATE_TOKENS or tok.text in (",", "*", "&"):
                current += tok.text
            else:
                return ()
            j += 1
        if depth < 0 or self.tokens[j + 1].text not in ("(", "{", "::"):
            return ()
        self.i = j + 1
        return (*parts, current)

    def brace_list(self, type_text: str | None, offset: int) -> BraceList:
        self.expect("{")
        items = self.arguments("}")
        return BraceList(items, offset, type_text)

    def arguments(self, close: str) -> tuple[Node, ...]:
        items: list[Node] = []
        while self.tok.text != close:
            items.append(self.expression())
            if self.tok.text != close:
                self.expect(",")
        self.take()
        return tuple(items)

    def postfix(self, node: Node) -> Node:
        while True:
            tok = self.tok
            if tok.text == "(":
                self.take()
                node = Call(node, self.arguments(")"), _offset(node))
            elif tok.text == "[":
                self.take()
                index = self.expression()
                self.expect("]")
                node = Index(node, index, _offset(node))
            elif tok.text in (".", "->"):
                self.take()
                member = self.tok
                if member.kind != "name":
                    raise ExprError(f"expected a member name after '{tok.text}'", member.offset)
                self.take()
                node = Member(node, member.text, tok.text == "->", member.offset, self.template_arguments())
            else:
                return node


def _literal_kind(tok: _Token) -> str:
    if tok.kind == "string":
        return "str"
    based = tok.text[:2] in ("0x", "0X", "0b", "0B")
    return "float" if not based and re.search(r"[.eE]|[fF]$", tok.text) else "int"


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "a": "\a", "b": "\b", "f": "\f"}
_ESCAPE = re.compile(
    r"\\(?:([ntrvabf\\'\"?])|([0-7]{1,3})|x([0-9a-fA-F]+)|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.DOTALL
)


def literal_value(node: Literal) -> bool | int | float | str:
    """The value C++ gives the literal ``node`` (``010`` is 8, ``"a\\n"`` holds a line break);
    ``ExprError`` at its column where C++ would refuse it or Python cannot hold it."""
    if node.kind == "bool":
        return node.text == "true"
    if node.kind == "str":
        return _string_value(node)
    if node.kind == "int":
        return _int_value(node)
    try:
        value = float(node.text.rstrip("fFlL"))
    except ValueError:
        raise ExprError(f"'{node.text}' is not a number C++ reads", node.offset) from None
    if math.isinf(value):
        raise ExprError(f"'{node.text}' is out of the range of a double", node.offset)
    return value


def _int_value(node: Literal) -> int:
    digits = node.text.rstrip("uUlL")
    base = {"0x": 16, "0X": 16, "0b": 2, "0B": 2}.get(digits[:2])
    if base is not None:
        return int(digits[2:], base)
    if len(digits) > 1 and digits.startswith("0"):
        if not set(digits) <= set("01234567"):
            raise ExprError(f"'{node.text}' is not an octal number (C++ reads a leading 0 as octal)", node.offset)
        return int(digits, 8)
    return int(digits)


def _string_value(node: Literal) -> str:
    body = node.text[1:-1]
    if "\n" in body or "\r" in body:
        at = node.offset + 1 + min(i for i in (body.find("\n"), body.find("\r")) if i >= 0)
        raise ExprError("a string literal cannot hold a line break (write \\n)", at)

    def one(m: re.Match[str]) -> str:
        simple, octal, hexa, short, long, other = m.groups()
        if simple is not None:
            return _ESCAPES.get(simple, simple)
        if other is not None:
            raise ExprError(f"unknown escape sequence '\\{other}'", node.offset + 1 + m.start())
        code = int(octal, 8) if octal else int(hexa or short or long, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise ExprError(f"the escape '{m.group()}' is not a character", node.offset + 1 + m.start())
        return chr(code)

    return _ESCAPE.sub(one, body)


def _offset(node: Node) -> int:
    return node.offset


def parse_expression(text: str) -> Node:
    """Parse one formula; ``ExprError`` (with its offset) when it is not one expression."""
    parser = _Parser(text)
    node = parser.expression()
    if parser.tok.kind != "end":
        raise ExprError(f"unexpected '{parser.tok.text}' after the expression", parser.tok.offset)
    return node
