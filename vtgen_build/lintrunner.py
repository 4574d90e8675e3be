"""A lintrunner adapter: ``python -m vtgen_build.lintrunner [--paths-file F] CHECK-OPTIONS... [-- FILE...]``.

lintrunner passes the files it lints (``{{PATHSFILE}}``: a file naming one per line,
or the paths after ``--``).  When one of them is a file the check reads (the yaml,
the manual helpers), the adapter runs ``vtgen-build check CHECK-OPTIONS --format json``
(the fast check against the stub headers; add ``--changed-since REV`` to check only
the ops a branch changed) and prints one lintrunner ``LintMessage`` JSON object per
diagnostic, on its own line.  Otherwise it prints nothing.

A diagnostic with a did-you-mean (an unknown yaml key or argument name, the
compiler's suggestion for a misspelled name in a formula) carries its fix: the
message holds ``original`` and ``replacement``: the whole file before and after
every fix in it (the same text on each such message of one file, as lintrunner
writes each replacement over the file), so ``lintrunner -a`` applies them all.  It always exits 0, as
lintrunner's protocol asks: a failure of the tool itself is a message too.

A ``.lintrunner.toml`` entry for a PyTorch checkout::

    [[linter]]
    code = 'VTGEN'
    include_patterns = [
        'aten/src/ATen/native/native_functions.yaml',
        'aten/src/ATen/native/tags.yaml',
        'tools/autograd/derivatives.yaml',
        'torch/csrc/autograd/FunctionsManual.h',
        'torch/csrc/autograd/FunctionsManual.cpp',
    ]
    command = ['python3', '-m', 'vtgen_build.lintrunner', '--paths-file', '{{PATHSFILE}}', '--pytorch-root', '.']
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from types import MappingProxyType

from .base.errors import VtgenError
from .diagnostics.record import Fix

__all__ = ["LINTER_CODE", "lint_messages", "main"]

LINTER_CODE = "VTGEN"
_SEVERITY = MappingProxyType({"error": "error", "warning": "warning", "note": "advice"})


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(check options, files): ``--paths-file F`` and everything after ``--`` are files."""
    args, files = list(argv), []
    if "--" in args:
        at = args.index("--")
        args, files = args[:at], args[at + 1 :]
    if "--paths-file" in args:
        at = args.index("--paths-file")
        if at + 1 == len(args):
            raise VtgenError("--paths-file needs a file")
        with open(args[at + 1], encoding="utf-8") as f:
            files += [line.strip() for line in f if line.strip()]
        del args[at : at + 2]
    return args, files


def lint_messages(document: dict[str, object]) -> list[dict[str, object]]:
    """lintrunner ``LintMessage`` objects for the diagnostics of a ``--format json`` document."""
    found = document.get("diagnostics")
    messages = []
    for d in found if isinstance(found, list) else []:
        path = d.get("file")
        messages.append({
            "path": os.path.abspath(path) if isinstance(path, str) else None,
            "line": d.get("line"),
            "char": d.get("column"),
            "code": LINTER_CODE,
            "severity": _SEVERITY.get(str(d.get("severity")), "error"),
            "name": d.get("code"),
            "original": None,
            "replacement": None,
            "description": d.get("message"),
        })  # fmt: skip
    _attach_fixes(messages, [_fix(d) for d in (found if isinstance(found, list) else [])])
    return messages


def _fix(diagnostic: dict[str, object]) -> Fix | None:
    fix = diagnostic.get("fix")
    if not isinstance(fix, dict):
        return None
    line, column, old, new = (fix.get(k) for k in ("line", "column", "old", "new"))
    if isinstance(line, int) and isinstance(column, int) and isinstance(old, str) and isinstance(new, str):
        return Fix(line, column, old, new)
    return None


def _attach_fixes(messages: list[dict[str, object]], fixes: list[Fix | None]) -> None:
    """Each message with a fix gets its file before and after all of that file's fixes."""
    by_path: dict[str, list[Fix]] = {}
    fixing: dict[str, list[dict[str, object]]] = {}
    for message, fix in zip(messages, fixes, strict=True):
        path = message["path"]
        if fix is not None and isinstance(path, str):
            by_path.setdefault(path, []).append(fix)
            fixing.setdefault(path, []).append(message)
    for path, found in by_path.items():
        try:
            with open(path, encoding="utf-8", newline="") as f:
                original = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        text = original
        for fix in sorted(set(found), key=lambda f: (f.line, f.column), reverse=True):  # later edits first
            text = fix.apply(text) or text
        for message in fixing[path] if text != original else []:
            message["original"], message["replacement"] = original, text


def _failure(message: str) -> dict[str, object]:
    return {"path": None, "line": None, "char": None, "code": LINTER_CODE, "severity": "error",
            "name": "VTGEN-INPUT", "original": None, "replacement": None, "description": message}  # fmt: skip


def _run(argv: Sequence[str]) -> list[dict[str, object]]:
    from .cli.commands import check_files
    from .cli.commands import main as cli_main

    options, files = _split(argv)
    wanted = set(check_files(options))
    if not any(os.path.realpath(f) in wanted for f in files):
        return []  # none of the files is read by the check
    document = io.StringIO()
    with contextlib.redirect_stdout(document):
        code = cli_main(["check", *options, "--format", "json"])
    try:
        parsed = json.loads(document.getvalue())
    except ValueError:
        return [_failure(f"vtgen-build check exited {code} without a report")]
    messages = lint_messages(parsed)
    if code != 0 and not messages:
        messages.append(_failure(str(parsed.get("summary") or f"vtgen-build check exited {code}")))
    return messages


def main(argv: Sequence[str] | None = None) -> int:
    try:
        messages = _run(sys.argv[1:] if argv is None else argv)
    except (VtgenError, OSError) as exc:
        messages = [_failure(str(exc))]
    for message in messages:
        print(json.dumps(message, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
