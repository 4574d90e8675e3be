"""Names that become C++: identifiers, namespaces, qualified names and ``#include`` spellings.

Every name read from the yaml or the command line that the emitters paste into C++ or
the preprocessor is checked here, where it is read, so that nothing but a plain
identifier (not a C++ keyword) reaches an identifier's place and nothing that could
end a directive, a string or a comment reaches an ``#include``.
"""

from __future__ import annotations

import re

from .errors import Location, VtgenError

__all__ = [
    "CPP_KEYWORDS",
    "check_identifier",
    "check_include",
    "check_qualified_name",
    "identifier_problem",
]

CPP_KEYWORDS = frozenset(
    (
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "auto",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char8_t",
        "char16_t",
        "char32_t",
        "class",
        "compl",
        "concept",
        "const",
        "consteval",
        "constexpr",
        "constinit",
        "const_cast",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "requires",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "template",
        "this",
        "thread_local",
        "throw",
        "true",
        "try",
        "typedef",
        "typeid",
        "typename",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
    )
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# An include spelling: path segments of plain characters ('/'-separated), no quotes, angle brackets,
# backslashes, blanks, control characters or comment starts.
_INCLUDE = re.compile(r"/?[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*")


def identifier_problem(name: str) -> str | None:
    """Why ``name`` cannot be a C++ identifier, or None when it can."""
    if not _IDENTIFIER.fullmatch(name):
        return f"{name!r} is not a C++ identifier (letters, digits and '_', not starting with a digit)"
    if name in CPP_KEYWORDS:
        return f"{name!r} is a C++ keyword"
    return None


def check_identifier(name: str, what: str, location: Location | None = None) -> None:
    """Raise a (located) error unless ``name`` is a C++ identifier; ``what`` names it (an option, a field)."""
    problem = identifier_problem(name)
    if problem is not None:
        raise VtgenError(f"{what}: {problem}", location)


def check_qualified_name(name: str, what: str) -> None:
    """``a::b::c`` (an optional leading ``::``), each part an identifier."""
    parts = (name[2:] if name.startswith("::") else name).split("::")
    for part in parts:
        problem = identifier_problem(part)
        if problem is not None:
            raise VtgenError(f"{what}: {name!r} is not a C++ qualified name ({problem})")


def check_include(spelling: str, what: str) -> None:
    """A header as ``#include "..."`` spells it: relative path segments, nothing that ends the directive."""
    if not _INCLUDE.fullmatch(spelling):
        raise VtgenError(
            f"{what}: {spelling!r} is not a header name (a relative path of letters, digits, '_', '.', '+', '-')"
        )
