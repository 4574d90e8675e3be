"""Diagnostics from what the tool produces: its error, a compiler's output, a gradcheck failure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.errors import VtgenError
from ..compile.diagnostics import ERROR_LINE
from .record import Diagnostic

if TYPE_CHECKING:
    from ..gradcheck.report import Failure, Report

__all__ = ["from_compiler_output", "from_error", "from_gradcheck_failure", "from_gradcheck_report", "from_os_error"]

_YAML = (".yaml", ".yml")


def from_error(error: VtgenError) -> Diagnostic:
    """A ``VtgenError``: a yaml place makes it ``VTGEN-YAML``, anything else ``VTGEN-INPUT``."""
    where = error.location
    if where is None:
        return Diagnostic("VTGEN-INPUT", "error", error.message)
    code = "VTGEN-YAML" if where.file.endswith(_YAML) else "VTGEN-INPUT"
    return Diagnostic(code, "error", error.message, where.file, where.line)


def from_os_error(error: OSError) -> Diagnostic:
    return Diagnostic("VTGEN-SYSTEM", "error", str(error))  # the message names the file


def from_compiler_output(text: str, unit: str, failed: bool) -> list[Diagnostic]:
    """One diagnostic per ``error:`` line of ``text`` (paths as the check printed them).

    A unit that failed without any such line (the compiler crashed, or said something
    else) still yields one diagnostic, naming the unit and the end of the output.
    """
    found = []
    for raw in text.splitlines():
        m = ERROR_LINE.match(raw)
        if m is not None:
            col = int(m.group("col")) if m.group("col") else None
            found.append(
                Diagnostic("VTGEN-COMPILE", "error", m.group("msg"), m.group("file"), int(m.group("line")), col)
            )
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
    found += [Diagnostic("VTGEN-UNVERIFIED", "note", f"{op}: not verified: {why}") for op, why in report.not_run]
    said = {op for op, _ in report.not_run}
    for u in report.unverified:
        if u.op not in said:
            detail = f" ({u.detail})" if u.detail else ""
            found.append(Diagnostic("VTGEN-UNVERIFIED", "note", f"{u.op}: not verified: {u.reason}{detail}"))
    return found
