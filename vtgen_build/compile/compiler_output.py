"""The compiler's output made readable: paths, formulas at their yaml line, ops to blame, hints.

(Reading what the compiler printed; the ``Diagnostic`` records every command prints, and their
formats, are the ``diagnostics`` room.)"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["ERROR_LINE", "Diagnostics", "Locator", "first_error", "namespace_hint", "read_diagnostics"]

_LOCATED = re.compile(r"^(?P<pre>In file included from |\s+from )?(?P<path>[^\s:][^:]*):(?P<line>\d+)(?P<rest>[:,].*)$")
_IN_FUNCTION = re.compile(r"^(?P<path>[^\s:][^:]*): (?P<rest>In .*)$")
_ERROR = re.compile(r"\b(fatal )?error:")
# a located error, `path:line[:col]: [fatal] error: message` (g++ and clang++; -Werror makes warnings errors)
ERROR_LINE = re.compile(
    r"^(?P<file>[^\s:][^:\n]*):(?P<line>\d+):(?:(?P<col>\d+):)? (?:fatal )?error: (?P<msg>.*)$", re.M
)
# g++: 'x' was not declared in this scope; did you mean 'ns::x'?  (U+2018 and U+2019 quotes in a UTF-8 locale)
# clang++: use of undeclared identifier 'x'; did you mean 'ns::x'?
_Q, _E = "['\u2018]", "['\u2019]"
_UNDECLARED = re.compile(
    rf"error: (?:{_Q}(?P<g>\w+){_E} was not declared in this scope|use of undeclared identifier {_Q}(?P<c>\w+){_E})"
    rf"(?:; did you mean {_Q}(?P<ns>(?:\w+::)+)(?P<name>\w+){_E}\?)?"
)


class Locator(Protocol):
    """What the generated output knows about its own lines (an ``OutputIndex``)."""

    def formula_after(self, path: str, line: int) -> tuple[str, int] | None: ...

    def ops_at(self, path: str, line: int) -> set[str]: ...


@dataclass(frozen=True)
class Diagnostics:
    text: str  # the compiler's output, paths made readable
    errors: int
    ops: frozenset[str]  # the ops whose code the errors are in


def _display(path: str, out: Path) -> str:
    p = Path(path)
    if not p.is_absolute() and p.parent == Path(".") and (out / p).is_file():
        p = out / p  # `#line N "VariableType_3.cpp"`: a generated unit
    try:
        return os.path.relpath(p) if p.resolve().is_relative_to(Path.cwd()) else str(p)
    except ValueError:
        return str(p)


def read_diagnostics(text: str, index: Locator, out: Path) -> Diagnostics:
    """The compiler's output with paths made readable, its error count and the ops at fault."""
    lines: list[str] = []
    located: list[tuple[str, int] | None] = []
    for raw in text.splitlines():
        m = _LOCATED.match(raw)
        if m is None:
            f = _IN_FUNCTION.match(raw)
            lines.append(f"{_display(f.group('path'), out)}: {f.group('rest')}" if f else raw)
            located.append(None)
            continue
        path, line, rest = _display(m.group("path"), out), int(m.group("line")), m.group("rest")
        moved = index.formula_after(path, line) if not m.group("pre") else None
        if moved is not None:  # the code wrapping a formula (e.g. `cond ? (formula) : Tensor()`)
            path, line, rest = _display(moved[0], out), moved[1], re.sub(r"^:\d+:", ":", rest)
        lines.append(f"{m.group('pre') or ''}{path}:{line}{rest}")
        located.append((path, line))
    error_rows = [i for i, line in enumerate(lines) if _ERROR.search(line)]
    ops: set[str] = set()
    for n, row in enumerate(error_rows):
        end = error_rows[n + 1] if n + 1 < len(error_rows) else len(lines)
        start = error_rows[n - 1] + 1 if n else 0
        for i in [row, *range(start, end)]:  # the error's own place first, then its context
            where = located[i]
            if where is not None and (blamed := index.ops_at(*where)):
                ops |= blamed
                break
    return Diagnostics("\n".join(lines), len(error_rows), frozenset(ops))


def first_error(text: str) -> str:
    """The first error of a compiler's output, as ``file:line: error: message``.

    Without a located error: the first line that says ``error:`` (a linker's), else the first
    line at all, prefixed ``error:``.
    """
    found = ERROR_LINE.search(text)
    if found is not None:
        return f"{found['file']}:{found['line']}: error: {found['msg'].strip()}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line for line in lines if _ERROR.search(line)]
    return (said or [f"error: {(lines or ['(the compiler said nothing)'])[0]}"])[0]


def namespace_hint(texts: list[str]) -> str | None:
    """The one namespace the compiler suggests for every undeclared name, when there is one.

    Formulas call helpers by their bare name; when the helpers live in a namespace the
    generated code does not bring into scope, every such error carries a did-you-mean
    into that namespace.  Any undeclared name without such a suggestion means the
    namespace alone would not fix the build: no hint then.
    """
    spaces: set[str] = set()
    for text in texts:
        for m in _UNDECLARED.finditer(text):
            if m.group("ns") is None or m.group("name") != (m.group("g") or m.group("c")):
                return None
            spaces.add(m.group("ns")[:-2])
    return spaces.pop() if len(spaces) == 1 else None
