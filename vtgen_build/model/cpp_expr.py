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

import re
from dataclasses import dataclass

from ..base.errors import Replacement

__all__ = [
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
    |(?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?[fFlLuU]*)
    |(?P<string>"(?:[^"\\]|\\.)*")
    |(?P<name>[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*|::\s*[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)
    |(?P<op>->|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~?:.,()\[\]{}&|^=;])
    """,
    re.VERBOSE,
)


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
        node = self.binary(1)
        if self.tok.text == "?":
            self.take()
            then = self.expression()
            self.expect(":")
            otherwise = self.expression()
            node = Conditional(node, then, otherwise, _offset(node))
        if self.tok.text == "=":
            raise ExprError("an assignment is not an expression a formula can hold", self.tok.offset)
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
            return Unary(tok.text, self.unary(), tok.offset)
        return self.postfix(self.primary())

    def primary(self) -> Node:
        tok = self.tok
        if tok.kind == "number":
            self.take()
            kind = "float" if re.search(r"[.eE]|[fF]$", tok.text) and not tok.text.startswith("0x") else "int"
            return Literal(tok.text, kind, tok.offset)
        if tok.kind == "string":
            self.take()
            return Literal(tok.text, "str", tok.offset)
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


def _offset(node: Node) -> int:
    return node.offset


def parse_expression(text: str) -> Node:
    """Parse one formula; ``ExprError`` (with its offset) when it is not one expression."""
    parser = _Parser(text)
    node = parser.expression()
    if parser.tok.kind != "end":
        raise ExprError(f"unexpected '{parser.tok.text}' after the expression", parser.tok.offset)
    return node
