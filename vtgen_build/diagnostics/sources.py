"""Diagnostics from what the tool produces: its error, a compiler's output, a gradcheck failure."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..base.errors import VtgenError
from .record import Diagnostic, Fix

if TYPE_CHECKING:
    from ..gradcheck.report import Failure, Report

__all__ = [
    "fix_at",
    "from_compiler_output",
    "from_error",
    "from_gradcheck_failure",
    "from_gradcheck_report",
    "from_os_error",
]

_YAML = (".yaml", ".yml")
# the compiler's own did-you-mean for a misspelled name (g++, then clang++; U+2018/U+2019 quotes in a UTF-8 locale):
#   'class at::Tensor' has no member named 'coss'; did you mean 'cos'?   'x' was not declared in this scope; ...
#   no member named 'coss' in 'at::Tensor'; did you mean 'cos'?          use of undeclared identifier 'x'; ...
_Q, _E = "['\u2018]", "['\u2019]"
_SUGGESTED = re.compile(
    rf"(?:no member named {_Q}(?P<member>\w+){_E}|^{_Q}(?P<name>\w+){_E} was not declared in this scope"
    rf"|use of undeclared identifier {_Q}(?P<ident>\w+){_E}).*; did you mean {_Q}(?P<new>\w+){_E}\?$"
)


def fix_at(file: str, line: int, old: str, new: str) -> Fix | None:
    """The edit ``old`` → ``new`` at the first place ``old`` is a whole word on ``file``'s ``line``, if it is."""
    try:
        with open(file, encoding="utf-8") as f:
            rows = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if not 0 < line <= len(rows):
        return None
    found = re.search(rf"(?<![\w]){re.escape(old)}(?![\w])", rows[line - 1])
    return Fix(line, found.start() + 1, old, new) if found else None


def _compiler_fix(message: str, file: str, line: int) -> Fix | None:
    """The compiler's suggestion for a misspelled name in a formula, as an edit of its yaml line."""
    m = _SUGGESTED.search(message)
    if m is None or not file.endswith(_YAML):
        return None  # an error in generated or hand-written C++: its place is not the user's text
    return fix_at(file, line, m["member"] or m["name"] or m["ident"], m["new"])


def from_error(error: VtgenError) -> Diagnostic:
    """A ``VtgenError``: a yaml place makes it ``VTGEN-YAML``, anything else ``VTGEN-INPUT``."""
    where = error.location
    if where is None:
        return Diagnostic("VTGEN-INPUT", "error", error.message)
    code = "VTGEN-YAML" if where.file.endswith(_YAML) else "VTGEN-INPUT"
    fix = fix_at(where.file, where.line, error.fix.old, error.fix.new) if error.fix else None
    return Diagnostic(code, "error", error.message, where.file, where.line, fix=fix)


def from_os_error(error: OSError) -> Diagnostic:
    return Diagnostic("VTGEN-SYSTEM", "error", str(error))  # the message names the file


def from_compiler_output(text: str, unit: str, failed: bool) -> list[Diagnostic]:
    """One diagnostic per ``error:`` line of ``text`` (paths as the check printed them).

    A unit that failed without any such line (the compiler crashed, or said something
    else) still yields one diagnostic, naming the unit and the end of the output.
    """
    from ..compile.compiler_output import ERROR_LINE  # here: `generate` never loads the compile package

    found = []
    for raw in text.splitlines():
        m = ERROR_LINE.match(raw)
        if m is not None:
            col = int(m.group("col")) if m.group("col") else None
            file, line, message = m.group("file"), int(m.group("line")), m.group("msg")
            fix = _compiler_fix(message, file, line)
            found.append(Diagnostic("VTGEN-COMPILE", "error", message, file, line, col, fix))
    if failed and not found:
        tail = "\n".join(text.strip().splitlines()[-10:]) or "(no output)"
        found.append(Diagnostic("VTGEN-COMPILE", "error", f"{unit} did not compile:\n{tail}"))
    return found


def from_gradcheck_failure(failure: Failure) -> Diagnostic:
    where = failure.location
    if where is None:
        return Diagnostic("VTGEN-GRADCHECK", "error", failure.message)
    return Diagnostic("VTGEN-GRADCHECK", "error", failure.message, where.file, where.line)


def from_gradcheck_report(report: Report, verbose: bool = False) -> list[Diagnostic]:
    """Failures at their formula's line (a crash, a hang or an exit in a kernel too); entries that raised
    (warnings); ops no check verified (notes); with ``verbose``, a note per check that ran (op, kind,
    variant, dtype, samples, status)."""
    found = [from_gradcheck_failure(f) for f in report.failures]
    if verbose:
        found += [Diagnostic("VTGEN-CHECKED", "note", f"{op}: {what}") for op, what in report.checked]
    # an entry that raised (a crash or a hang is a failure above): it verified nothing, which the verdict counts
    found += [Diagnostic("VTGEN-GRADCHECK", "warning", f"gradcheck entry {e}") for e in report.errors]
    # a passed check whose batched (vmap) part could not run: said, never silent
    found += [Diagnostic("VTGEN-UNVERIFIED", "note", f"{name}: {what}") for name, what in report.unbatched]
    found += [Diagnostic("VTGEN-UNVERIFIED", "note", f"{op}: not verified: {why}") for op, why in report.not_run]
    said = {op for op, _ in report.not_run}
    for u in report.unverified:
        if u.op not in said:
            detail = f" ({u.detail})" if u.detail else ""
            found.append(Diagnostic("VTGEN-UNVERIFIED", "note", f"{u.op}: not verified: {u.reason}{detail}"))
    found += [Diagnostic("VTGEN-UNVERIFIED", "note", f"{op}: no autograd kernel of ours: {why}")
              for op, why in report.no_kernel]  # fmt: skip
    return found
