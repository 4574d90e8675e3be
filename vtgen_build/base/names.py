"""Names that become C++: identifiers, namespaces, qualified names and ``#include`` spellings.

Every name read from the yaml or the command line that the emitters paste into C++ or
the preprocessor is checked here, where it is read, so that nothing but a plain
identifier (not a C++ keyword) reaches an identifier's place and nothing that could
end a directive, a string or a comment reaches an ``#include``.  Text that is pasted
whole (a schema, in a C++ string literal and a Python docstring) must hold no control
character: ``control_character`` finds the first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from .errors import Location, VtgenError

__all__ = [
    "CPP_KEYWORDS",
    "check_identifier",
    "check_include",
    "check_qualified_name",
    "control_character",
    "declared_name_problem",
    "distinct_names",
    "identifier_problem",
    "identifier_suggestion",
    "module_name_problem",
    "qualified_name_problem",
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


# Names the generated declarations spell as namespaces or types (``at::Tensor``, ``int64_t``): a
# kernel or a field declared under one of them hides it from every declaration after it.
_SPELLED_BY_DECLARATIONS = frozenset(
    ("at", "c10", "std", "torch", "vtgen", "size_t", *(f"{u}int{n}_t" for u in ("", "u") for n in (8, 16, 32, 64)))
)


def declared_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a function or field the generated headers declare, or None when it can."""
    problem = identifier_problem(name)
    if problem is None and name in _SPELLED_BY_DECLARATIONS:
        problem = f"{name!r} is a namespace or type the generated declarations use"
    return problem


def identifier_suggestion(name: str) -> str | None:
    """An identifier ``name`` was probably meant to be (``f cpu`` → ``f_cpu``, ``other::f`` → ``f``,
    ``delete`` → ``delete_``), or None when nothing sensible is near."""
    if control_character(name) is not None or len(name) > 200:
        return None
    candidate = re.sub(r"[^A-Za-z0-9_]+", "_", name.rpartition("::")[2]).strip("_")
    if candidate in CPP_KEYWORDS or candidate in _SPELLED_BY_DECLARATIONS:
        candidate += "_"
    return candidate if candidate != name and declared_name_problem(candidate) is None else None


# Control (Cc: C0, DEL, C1), format (Cf: bidirectional overrides, zero-width) and line/paragraph
# separator characters: none belongs in a schema or a name, and each can end or disguise a line.
_CONTROL_CATEGORIES = frozenset(("Cc", "Cf", "Zl", "Zp"))


def control_character(text: str) -> tuple[int, str] | None:
    """The first control character of ``text``: (0-based index, ``U+XXXX``), or None."""
    for i, char in enumerate(text):
        if unicodedata.category(char) in _CONTROL_CATEGORIES:
            return i, f"U+{ord(char):04X}"
    return None


def check_identifier(name: str, what: str, location: Location | None = None) -> None:
    """Raise a (located) error unless ``name`` is a C++ identifier; ``what`` names it (an option, a field)."""
    problem = identifier_problem(name)
    if problem is not None:
        raise VtgenError(f"{what}: {problem}", location)


def qualified_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be ``a::b::c`` (an optional leading ``::``, each part an identifier, no
    keyword), or None when it can: the one rule of the CLI's, setuptools' and CMake's namespaces."""
    for part in (name[2:] if name.startswith("::") else name).split("::"):
        problem = identifier_problem(part)
        if problem is not None:
            return problem
    return None


def check_qualified_name(name: str, what: str) -> None:
    """Raise unless ``name`` is a C++ qualified name (``qualified_name_problem``)."""
    problem = qualified_name_problem(name)
    if problem is not None:
        raise VtgenError(f"{what}: {name!r} is not a C++ qualified name ({problem})")


def module_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a dotted Python module name (``mypkg._fake``), or None when it can."""
    if all(part.isidentifier() for part in name.split(".")):
        return None
    return f"{name!r} is not a Python module name (e.g. mypkg._fake)"


def check_include(spelling: str, what: str) -> None:
    """A header as ``#include "..."`` spells it: relative path segments, nothing that ends the directive."""
    if not _INCLUDE.fullmatch(spelling):
        raise VtgenError(
            f"{what}: {spelling!r} is not a header name (a relative path of letters, digits, '_', '.', '+', '-')"
        )


def distinct_names(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` made distinct, fixed by their order: the first of equal names keeps it, each later one
    becomes the first of ``<name>_2``, ``<name>_3``... that no name holds (``foo.bar`` and ``foo_bar``
    both spell ``foo_bar`` in C++).  Distinct names come back unchanged."""
    taken = set(names)
    seen: set[str] = set()
    found = []
    for name in names:
        chosen, n = name, 1
        while chosen in seen or (chosen != name and chosen in taken):
            n += 1
            chosen = f"{name}_{n}"
        seen.add(chosen)
        taken.add(chosen)
        found.append(chosen)
    return tuple(found)
