"""The one record every diagnostic is: where, which rule, how bad, what."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = ["CODES", "Diagnostic", "Fix", "Severity"]

Severity = Literal["error", "warning", "note"]

# code -> (short name, what the rule checks); the codes are stable: scripts and SARIF consumers key on them
CODES: MappingProxyType[str, tuple[str, str]] = MappingProxyType(
    {
        "VTGEN-YAML": ("yaml", "An entry of native_functions.yaml, derivatives.yaml or tags.yaml is invalid."),
        "VTGEN-INPUT": ("input", "An option, input path or configuration value is invalid."),
        "VTGEN-COMPILE": ("compile", "The generated code (a formula, a kernel or a Node) does not compile."),
        "VTGEN-GRADCHECK": ("gradcheck", "PyTorch's gradcheck found a formula that computes a wrong derivative."),
        "VTGEN-UNVERIFIED": ("unverified", "An op's formulas were not verified by any gradient check."),
        "VTGEN-CHECKED": ("checked", "A gradient check that ran: the op, the samples, the result (--verbose)."),
        "VTGEN-SYSTEM": ("system", "The machine refused an operation (disk, permissions, a tool that failed to run)."),
    }
)


@dataclass(frozen=True)
class Fix:
    """A did-you-mean as an edit of the diagnostic's file: ``old`` at ``line``:``column`` (1-based) reads ``new``."""

    line: int
    column: int
    old: str
    new: str

    def apply(self, text: str) -> str | None:
        """``text`` (a whole file) with this edit made, or None when ``old`` is no longer at its place."""
        lines = text.splitlines(keepends=True)
        if not 0 < self.line <= len(lines):
            return None
        row, at = lines[self.line - 1], self.column - 1
        if row[at : at + len(self.old)] != self.old:
            return None
        lines[self.line - 1] = row[:at] + self.new + row[at + len(self.old) :]
        return "".join(lines)


@dataclass(frozen=True)
class Diagnostic:
    """One finding.  ``file`` is as the tool saw it (absolute or relative to the working directory)."""

    code: str  # a key of CODES
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based
    fix: Fix | None = None  # its did-you-mean, as an edit of ``file``

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown diagnostic code {self.code!r}")
        if self.line is None and self.column is not None:
            raise ValueError("a column needs a line")
        if self.fix is not None and self.file is None:
            raise ValueError("a fix needs a file")
