"""Printing diagnostics: ``text`` for people, ``json`` for scripts, ``github`` workflow commands, SARIF 2.1.0.

Paths: ``text`` and ``json`` print each file as the tool saw it; ``github`` and
``sarif`` need paths relative to the repository root (``root``), and leave a file
outside it out of the location (its path stays in the message).  A SARIF
``artifactLocation.uri`` is a URI reference, so the path is percent-encoded
(``my ops#1/nf.yaml`` → ``my%20ops%231/nf.yaml``: no fragment, no scheme).
"""

from __future__ import annotations

import dataclasses
import json
import os
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from .record import CODES, Diagnostic, Fix

__all__ = ["FORMATS", "Findings", "github_data", "github_property", "render", "repository_path"]

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_GITHUB_COMMAND = MappingProxyType({"error": "error", "warning": "warning", "note": "notice"})


@dataclass(frozen=True)
class Findings:
    """What one command found: its diagnostics, its one-line outcome, and where the repository is."""

    diagnostics: tuple[Diagnostic, ...]
    ok: bool
    summary: str = ""
    root: str = "."  # paths in github/sarif output are relative to this directory
    tool_version: str = ""
    # SARIF: where a result with no place in the repository is shown (line 1), since GitHub's code
    # scanning rejects a result without a location; its own place stays in the message
    anchor: str | None = None
    interrupted: bool = False  # Ctrl-C ended the run: the diagnostics are what it had found by then


def render(report: Findings, fmt: str) -> str:
    """``report`` in format ``fmt`` (one of FORMATS), ending with a newline unless empty."""
    if fmt == "text":
        text = "\n".join(_text(d) for d in report.diagnostics)
    elif fmt == "json":
        text = _json(report)
    elif fmt == "github":
        text = "\n".join(_github(d, report.root) for d in report.diagnostics)
    elif fmt == "sarif":
        text = json.dumps(_sarif(report), indent=2, sort_keys=True)
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return text + "\n" if text else ""


def _place(d: Diagnostic) -> str:
    parts = [p for p in (d.file, d.line, d.column) if p is not None]
    return ":".join(str(p) for p in parts)


def _text(d: Diagnostic) -> str:
    place = _place(d) if d.file else "vtgen-build"
    return f"{place}: {d.severity}: {d.message}"


def _json(report: Findings) -> str:
    rows = [
        {
            "code": d.code,
            "severity": d.severity,
            "message": d.message,
            "file": d.file,
            "line": d.line,
            "column": d.column,
            "fix": None if d.fix is None else dataclasses.asdict(d.fix),  # line, column, old, new
        }
        for d in report.diagnostics
    ]
    body = {
        "tool": "vtgen-build",
        "version": report.tool_version,
        "ok": report.ok,
        "interrupted": report.interrupted,
        "summary": report.summary,
        "diagnostics": rows,
    }
    return json.dumps(body, indent=2)


def repository_path(file: str, root: str) -> str | None:
    """``file`` relative to ``root`` in POSIX spelling, or None when it lies outside."""
    real, base = os.path.realpath(file), os.path.realpath(root)
    if os.path.commonpath([real, base]) != base:
        return None
    return Path(os.path.relpath(real, base)).as_posix()


def github_data(text: str) -> str:
    """A workflow command's message, escaped as GitHub's toolkit does."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github_property(text: str) -> str:
    """A workflow command's property value: the message escapes, and ``:`` and ``,`` too."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")


def _github(d: Diagnostic, root: str) -> str:
    props: list[tuple[str, object]] = []
    path = repository_path(d.file, root) if d.file else None
    if path is not None:
        props.append(("file", path))
        if d.line is not None:
            props.append(("line", d.line))
        if d.column is not None:
            props.append(("col", d.column))
    props.append(("title", d.code))
    message = d.message if path is not None or not d.file else f"{_place(d)}: {d.message}"
    spelled = ",".join(f"{k}={github_property(str(v))}" for k, v in props)
    return f"::{_GITHUB_COMMAND[d.severity]} {spelled}::{github_data(message)}"


def _sarif_rules(codes: Sequence[str]) -> list[dict[str, object]]:
    return [
        {
            "id": code,
            "name": CODES[code][0],
            "shortDescription": {"text": CODES[code][1]},
            "defaultConfiguration": {"level": "note" if code in ("VTGEN-UNVERIFIED", "VTGEN-CHECKED") else "error"},
        }
        for code in codes
    ]


def _sarif_result(d: Diagnostic, rule_index: int, report: Findings) -> dict[str, object]:
    result: dict[str, object] = {"ruleId": d.code, "ruleIndex": rule_index, "level": d.severity}
    path = repository_path(d.file, report.root) if d.file else None
    result["message"] = {"text": d.message if path is not None or not d.file else f"{_place(d)}: {d.message}"}
    region: dict[str, int] = {"startLine": d.line or 1}
    if path is not None and d.column is not None:
        region["startColumn"] = d.column
    if path is not None and d.fix is not None:
        result["fixes"] = [_sarif_fix(d.fix, path)]
    if path is None and report.anchor is not None:
        path, region = repository_path(report.anchor, report.root), {"startLine": 1}
    if path is not None:
        artifact = {"uri": urllib.parse.quote(path, safe="/"), "uriBaseId": "%SRCROOT%"}
        result["locations"] = [{"physicalLocation": {"artifactLocation": artifact, "region": region}}]
    return result


def _sarif_fix(fix: Fix, path: str) -> dict[str, object]:
    """A did-you-mean as a SARIF ``fix``: the word's region of the line, replaced."""
    end = fix.column + len(fix.old)
    region = {"startLine": fix.line, "startColumn": fix.column, "endLine": fix.line, "endColumn": end}
    artifact = {"uri": urllib.parse.quote(path, safe="/"), "uriBaseId": "%SRCROOT%"}
    replacement = {"deletedRegion": region, "insertedContent": {"text": fix.new}}
    change = {"artifactLocation": artifact, "replacements": [replacement]}
    return {"description": {"text": f"replace '{fix.old}' with '{fix.new}'"}, "artifactChanges": [change]}


def _sarif(report: Findings) -> dict[str, object]:
    codes = list(CODES)
    driver = {"name": "vtgen-build", "version": report.tool_version, "rules": _sarif_rules(codes)}
    results = [_sarif_result(d, codes.index(d.code), report) for d in report.diagnostics]
    run: dict[str, object] = {"tool": {"driver": driver}, "results": results}
    if report.interrupted:  # the run did not complete: say so where SARIF consumers look
        notice = {"level": "error", "message": {"text": report.summary}}
        run["invocations"] = [{"executionSuccessful": False, "toolExecutionNotifications": [notice]}]
    return {"version": "2.1.0", "$schema": SARIF_SCHEMA, "runs": [run]}
