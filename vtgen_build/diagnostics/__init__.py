"""Diagnostics as records, and the formats they are printed in (text, JSON, GitHub, SARIF).

Every command collects what it finds as ``Diagnostic`` records (``record.py``); one
formatter (``formats.py``) prints them for a person, a script, a GitHub Actions log
or GitHub code scanning.  ``sources.py`` turns what the rest of the tool produces
(a ``VtgenError``, a compiler's output, a gradcheck failure) into records.

May import: every room below it (``compile`` for compiler output, ``gradcheck`` for its
failures); only the command line imports it.
"""

from __future__ import annotations

from .formats import FORMATS, Findings, render
from .record import CODES, Diagnostic, Fix, Severity
from .sources import from_compiler_output, from_error, from_gradcheck_failure, from_gradcheck_report, from_os_error

__all__ = [
    "CODES",
    "FORMATS",
    "Diagnostic",
    "Findings",
    "Fix",
    "Severity",
    "from_compiler_output",
    "from_error",
    "from_gradcheck_failure",
    "from_gradcheck_report",
    "from_os_error",
    "render",
]
