"""The one record every diagnostic is: where, which rule, how bad, what."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = ["CODES", "Diagnostic", "Severity"]

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
class Diagnostic:
    """One finding.  ``file`` is as the tool saw it (absolute or relative to the working directory)."""

    code: str  # a key of CODES
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"unknown diagnostic code {self.code!r}")
        if self.line is None and self.column is not None:
            raise ValueError("a column needs a line")
