"""``#line`` directives (``--line-directives``): a compiler error inside a formula names its yaml line.

A formula is wrapped as ``#line N "derivatives.yaml"`` … a restore marker; once a
file's text is complete, :func:`resolve_line_markers` turns each marker into a
``#line`` naming the generated file again, so every other error keeps its real
place.  The yaml is named by its absolute path (the compiler runs elsewhere, e.g. in a CMake build
directory), so the output is byte-identical for the same inputs at the same paths; ``generate``
without ``--line-directives`` writes none.
"""

from __future__ import annotations

import os

from ..base.errors import Location

__all__ = ["at_yaml_line", "resolve_line_markers"]

_RESTORE = "#line vtgen-restore"


def _quoted(path: str) -> str:
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def at_yaml_line(expr: str, location: Location | None, column: int = 1) -> str:
    """``expr`` on lines of its own, reported by the compiler at ``location`` (its column padded)."""
    if location is None:
        return expr
    pad = " " * max(column - 1, 0)
    return f"\n#line {location.line} {_quoted(os.path.abspath(location.file))}\n{pad}{expr}\n{_RESTORE}\n"


def resolve_line_markers(text: str, name: str) -> str:
    """Replace each restore marker of ``text`` (the whole file ``name``) by its ``#line``."""
    if _RESTORE not in text:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.strip() == _RESTORE:
            lines[i] = f"#line {i + 2} {_quoted(name)}"  # the line after this one is line i + 2
    return "\n".join(lines)
