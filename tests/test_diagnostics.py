"""``--format text|json|github|sarif``: a yaml error, a compiler error inside a formula, a gradcheck failure.

The yaml and compiler errors come from real runs of the CLI (the compiler one: one small unit
of the sample, against the stub headers); the gradcheck failure is a recorded child record fed
through the real report (the same records ``check --gradcheck`` reads), not a new torch build.
GitHub's workflow-command syntax and SARIF 2.1.0's required fields are asserted here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.parse
from pathlib import Path

import pytest

from vtgen_build.base.errors import Location
from vtgen_build.diagnostics import Diagnostic, Findings, from_compiler_output, from_gradcheck_report, render
from vtgen_build.diagnostics.record import Fix
from vtgen_build.gradcheck.formulas import FormulaPlaces
from vtgen_build.gradcheck.records import entries_of
from vtgen_build.gradcheck.report import Report

from .conftest import SAMPLE, CliRunner, sample_inputs

CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
_COMMAND = re.compile(r"^::(?P<cmd>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<data>.*)$")
_PROPERTY = re.compile(r"^(?P<key>file|line|col|endLine|endColumn|title)=(?P<value>[^,:\r\n]*)$")
_ESCAPES = re.compile(r"%(?!25|0D|0A|3A|2C)")


def unescape(text: str) -> str:
    return re.sub(r"%(25|0D|0A|3A|2C)", lambda m: bytes.fromhex(m.group(1)).decode(), text)


def github_commands(text: str) -> list[tuple[str, dict[str, str], str]]:
    """Each line as (command, properties, message), asserting GitHub's syntax and escaping."""
    found = []
    for line in text.splitlines():
        m = _COMMAND.match(line)
        assert m is not None, line
        assert _ESCAPES.search(m.group("data")) is None, line  # every % is an escape
        props = {}
        for prop in (m.group("props") or "").split(","):
            p = _PROPERTY.match(prop)
            assert p is not None, prop
            assert _ESCAPES.search(p.group("value")) is None, prop
            props[p.group("key")] = unescape(p.group("value"))
        found.append((m.group("cmd"), props, unescape(m.group("data"))))
    return found


def sarif_results(text: str) -> list[dict[str, object]]:
    """The results of a SARIF log, asserting what SARIF 2.1.0 and GitHub code scanning require
    (code scanning also rejects a result without a location)."""
    log = json.loads(text)
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "vtgen-build"
    rules = driver["rules"]
    assert all(r["id"].startswith("VTGEN-") and r["shortDescription"]["text"] for r in rules)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("error", "warning", "note", "none")
        assert result["message"]["text"]
        assert result["locations"], result  # GitHub code scanning rejects a result without a location
        for loc in result["locations"]:
            artifact, region = loc["physicalLocation"]["artifactLocation"], loc["physicalLocation"]["region"]
            assert not artifact["uri"].startswith("/") and ":" not in artifact["uri"]  # repository-relative
            assert isinstance(region["startLine"], int) and region["startLine"] >= 1
    return list(run["results"])


def where(result: dict[str, object]) -> tuple[str, int]:
    loc = result["locations"][0]["physicalLocation"]  # type: ignore[index]
    return loc["artifactLocation"]["uri"], loc["region"]["startLine"]


def _edited(src: Path, dst: Path, old: str, new: str) -> int:
    text = src.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    dst.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


# -- the formatters alone ------------------------------------------------------------------------
def test_github_escapes_data_and_properties(tmp_path: Path) -> None:
    (tmp_path / "dir,a:b").mkdir()
    d = Diagnostic("VTGEN-COMPILE", "error", "50% of 3:\r\nline, two", str(tmp_path / "dir,a:b/x.yaml"), 3, 7)
    text = render(Findings((d,), False, root=str(tmp_path)), "github")
    assert text == "::error file=dir%2Ca%3Ab/x.yaml,line=3,col=7,title=VTGEN-COMPILE::50%25 of 3:%0D%0Aline, two\n"
    assert github_commands(text) == [
        ("error", {"file": "dir,a:b/x.yaml", "line": "3", "col": "7", "title": "VTGEN-COMPILE"}, d.message)
    ]


def test_a_compiler_error_in_a_generated_file_is_reported_there(tmp_path: Path) -> None:
    out = tmp_path / "outside"
    text = f"{out}/VariableType_0.cpp:40:47: error: 'x' was not declared in this scope\n   40 | x\n"
    (d,) = from_compiler_output(text, "VariableType_0.cpp", failed=True)
    assert (d.file, d.line, d.column, d.code) == (f"{out}/VariableType_0.cpp", 40, 47, "VTGEN-COMPILE")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "derivatives.yaml").write_text("[]\n")
    # the generated file lies outside the repository: SARIF shows it at the yaml's first line
    findings = Findings((d,), False, root=str(repo), anchor=str(repo / "derivatives.yaml"))
    ((_, props, message),) = github_commands(render(findings, "github"))
    assert "file" not in props and message.startswith(f"{out}/VariableType_0.cpp:40:47: 'x' was not declared")
    (result,) = sarif_results(render(findings, "sarif"))
    assert where(result) == ("derivatives.yaml", 1)
    assert f"{out}/VariableType_0.cpp:40:47" in result["message"]["text"]  # type: ignore[index]
    inside = Findings((d,), False, root=str(tmp_path))
    assert where(sarif_results(render(inside, "sarif"))[0]) == ("outside/VariableType_0.cpp", 40)


@pytest.mark.parametrize("rel", ["my ops#1/native_functions.yaml", "nf,x:y%z.yaml", "a?b/[c]&d;e=f.yaml", "é/n f.yaml"])
def test_sarif_uris_are_percent_encoded(tmp_path: Path, rel: str) -> None:
    """``artifactLocation.uri`` is a URI reference: read back, it is the path (no fragment, query or scheme)."""
    (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / rel).write_text("[]\n")
    d = Diagnostic("VTGEN-YAML", "error", "bad", str(tmp_path / rel), 2, 1)
    (result,) = sarif_results(render(Findings((d,), False, root=str(tmp_path)), "sarif"))
    uri, line = where(result)
    parts = urllib.parse.urlsplit(uri)
    assert (parts.scheme, parts.netloc, parts.query, parts.fragment) == ("", "", "", ""), uri
    assert urllib.parse.unquote(parts.path) == rel and line == 2
    assert re.fullmatch(r"[A-Za-z0-9._~/%-]+", uri), uri  # only unreserved characters and escapes


def test_a_unit_that_failed_without_an_error_line_is_still_reported() -> None:
    (d,) = from_compiler_output("g++: internal compiler error: Killed (program cc1plus)\n", "Functions_0.cpp", True)
    assert d.file is None and "Functions_0.cpp did not compile" in d.message and "Killed" in d.message
    assert from_compiler_output("", "Functions_0.cpp", failed=False) == []


# -- a yaml error, from the CLI ------------------------------------------------------------------
@pytest.fixture
def bad_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """``generate`` arguments whose derivatives.yaml (in the working directory) names an unknown argument."""
    monkeypatch.chdir(tmp_path)
    old = "  self: softsign_backward(grad, self)"
    line = _edited(SAMPLE / "derivatives.yaml", tmp_path / "derivatives.yaml", old, old.replace("self:", "selff:"))
    args = ["generate", *sample_inputs(SAMPLE, Path("derivatives.yaml")), "--out", str(tmp_path / "out")]
    return args, line


def test_yaml_error_as_json(run_cli: CliRunner, bad_yaml: tuple[list[str], int]) -> None:
    args, line = bad_yaml
    result = run_cli(*args, "--format", "json")
    assert result.code == 1
    doc = json.loads(result.out)
    assert doc["ok"] is False and doc["tool"] == "vtgen-build"
    (d,) = doc["diagnostics"]
    assert (d["code"], d["severity"], d["file"], d["line"]) == ("VTGEN-YAML", "error", "derivatives.yaml", line)
    assert "'selff' is not an argument" in d["message"] and "did you mean 'self'" in d["message"]
    assert d["fix"] == {"line": line, "column": 3, "old": "selff", "new": "self"}  # the did-you-mean, as an edit


def test_a_fix_is_given_only_where_its_word_is(tmp_path: Path) -> None:
    """The compiler's suggestion (g++ and clang++ spellings) becomes an edit of the yaml line that has the word;
    a suggestion for generated C++, a word not on the line, or an edit whose text moved, gives none."""
    yaml = tmp_path / "derivatives.yaml"
    yaml.write_text("- name: f(Tensor self) -> Tensor\n  self: grad * self.coss()\n", encoding="utf-8")
    said = "\u2018const class at::Tensor\u2019 has no member named \u2018coss\u2019; did you mean \u2018cos\u2019?"
    gxx = f"{yaml}:2:9: error: {said}"
    clang = f"{yaml}:2:9: error: no member named 'coss' in 'at::Tensor'; did you mean 'cos'?"
    for output in (gxx, clang):
        (d,) = from_compiler_output(output, "u.cpp", failed=True)
        assert d.fix == Fix(2, 21, "coss", "cos")
        assert d.fix.apply(yaml.read_text(encoding="utf-8")) == yaml.read_text(encoding="utf-8").replace("coss", "cos")
    (moved,) = from_compiler_output(clang.replace(":2:", ":1:"), "u.cpp", failed=True)  # `coss` is not on line 1
    (generated,) = from_compiler_output(clang.replace(str(yaml), "Functions_0.cpp"), "u.cpp", failed=True)
    assert moved.fix is None and generated.fix is None
    assert Fix(2, 20, "coss", "cos").apply(yaml.read_text(encoding="utf-8")) is None  # not at its place: no edit


def test_yaml_error_as_github_sarif_and_text(run_cli: CliRunner, bad_yaml: tuple[list[str], int]) -> None:
    args, line = bad_yaml
    ((cmd, props, message),) = github_commands(run_cli(*args, "--format", "github").out)
    assert (cmd, props) == ("error", {"file": "derivatives.yaml", "line": str(line), "title": "VTGEN-YAML"})
    assert "'selff'" in message
    (result,) = sarif_results(run_cli(*args, "--format", "sarif").out)
    assert result["ruleId"] == "VTGEN-YAML" and where(result) == ("derivatives.yaml", line)
    ((change,),) = [f["artifactChanges"] for f in result["fixes"]]
    assert change["artifactLocation"]["uri"] == "derivatives.yaml"
    (replacement,) = change["replacements"]
    assert replacement == {
        "deletedRegion": {"startLine": line, "startColumn": 3, "endLine": line, "endColumn": 8},
        "insertedContent": {"text": "self"},
    }  # `selff`, columns 3-7
    text = run_cli(*args)
    assert text.out == "" and text.err.startswith(f"derivatives.yaml:{line}: error: 'selff' is not an argument")


# -- a compiler error inside a formula -------------------------------------------------------------
@pytest.mark.skipif(CXX is None, reason="no C++ compiler")
def test_compiler_error_in_a_formula_in_every_format(
    run_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    old = "stack_mean_backward(grad, dim, tensors.size())"
    line = _edited(SAMPLE / "derivatives.yaml", tmp_path / "derivatives.yaml", old, old.replace("size()", "sizee()"))
    args = ["check", *sample_inputs(SAMPLE, Path("derivatives.yaml")), "-I", str(SAMPLE / "include")]
    args += ["--out", str(tmp_path / "check"), "--op", "stack_mean", "--no-pch", "--format", "json"]
    result = run_cli(*args)  # one small unit: the failing one is never cached, so it is compiled once here
    assert result.code == 1, result.err[-2000:]
    doc = json.loads(result.out)  # stdout holds only the document; the compiler's text went to stderr
    assert doc["ok"] is False and "FAILED" in doc["summary"] and "[1/1] ops.cpp" in result.err
    (d,) = doc["diagnostics"]
    assert (d["code"], d["file"], d["line"]) == ("VTGEN-COMPILE", "derivatives.yaml", line)
    assert isinstance(d["column"], int) and "sizee" in d["message"]
    assert (d["fix"]["line"], d["fix"]["old"], d["fix"]["new"]) == (line, "sizee", "size")  # the compiler's own
    records = (Diagnostic(**{**d, "fix": Fix(**d["fix"])}),)
    ((cmd, props, message),) = github_commands(render(Findings(records, False, root=str(tmp_path)), "github"))
    assert (cmd, props["file"], props["line"], props["title"]) == (
        "error",
        "derivatives.yaml",
        str(line),
        "VTGEN-COMPILE",
    )
    assert props["col"] == str(d["column"]) and "sizee" in message
    (sarif,) = sarif_results(render(Findings(records, False, root=str(tmp_path)), "sarif"))
    assert sarif["ruleId"] == "VTGEN-COMPILE" and sarif["level"] == "error"
    assert where(sarif) == ("derivatives.yaml", line)


# -- a gradcheck failure (a recorded child record) ------------------------------------------------
def _recorded_failure() -> Report:
    y = "tools/autograd/derivatives.yaml"
    places = {
        "xlogy.Tensor": FormulaPlaces(
            ("self", "other"), False, (), ((("self",), Location(y, 1007)), (("other",), Location(y, 1008))),
            (Location(y, 1009),), Location(y, 1006),
        )
    }  # fmt: skip
    check = {"test": "test_fn_grad", "kind": "backward", "variant": "function", "dtype": "float64",
             "status": "failed", "ours_ran": True, "hit": ["xlogy.Tensor"], "sample": 2, "positions": [0, 1],
             "message": "Jacobian mismatch for output 0 with respect to input 1,\nnumerical:tensor(1.)\n"}  # fmt: skip
    record = {"entry": "xlogy", "direct": {"function": ["xlogy.Tensor"], "inplace": []}, "checks": [check]}
    return Report.from_results(
        entries_of([record]), ["xlogy.Tensor", "sinc"], {"sinc": "no OpInfo entry"}, places, None, 0
    )


def test_verbose_lists_every_check_that_ran(tmp_path: Path) -> None:
    """`check --gradcheck --verbose`: each op and sample checked, in the text and as notes in --format json."""
    report = _recorded_failure()
    line = "  checked: xlogy: backward (function, float64, sample 2): failed"
    assert line in report.render(verbose=True).splitlines() and line not in report.render()
    findings = Findings(tuple(from_gradcheck_report(report, verbose=True)), False, root=str(tmp_path))
    doc = json.loads(render(findings, "json"))
    notes = [d for d in doc["diagnostics"] if d["code"] == "VTGEN-CHECKED"]
    assert [(d["severity"], d["message"]) for d in notes] == [
        ("note", "xlogy: backward (function, float64, sample 2): failed")
    ]
    assert "VTGEN-CHECKED" not in {d.code for d in from_gradcheck_report(report)}


def test_gradcheck_failure_in_every_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tools/autograd").mkdir(parents=True)
    anchor = str(tmp_path / "tools/autograd/derivatives.yaml")
    findings = Findings(tuple(from_gradcheck_report(_recorded_failure())), False, root=str(tmp_path), anchor=anchor)
    failure, unverified = findings.diagnostics
    assert (failure.code, failure.file, failure.line) == ("VTGEN-GRADCHECK", "tools/autograd/derivatives.yaml", 1008)
    assert (unverified.code, unverified.severity) == ("VTGEN-UNVERIFIED", "note")
    monkeypatch.chdir(tmp_path)  # the recorded places are relative to the checkout, as --pytorch-root . gives them
    doc = json.loads(render(findings, "json"))
    github = github_commands(render(findings, "github"))
    results = sarif_results(render(findings, "sarif"))
    assert [d["code"] for d in doc["diagnostics"]] == ["VTGEN-GRADCHECK", "VTGEN-UNVERIFIED"]
    assert doc["diagnostics"][0]["line"] == 1008 and "mismatch for input 1" in doc["diagnostics"][0]["message"]
    (cmd, props, message), (note, _, _) = github
    assert (cmd, props["file"], props["line"], note) == ("error", "tools/autograd/derivatives.yaml", "1008", "notice")
    assert "\nnumerical:tensor(1.)" in message  # the newline survived the escaping
    assert [r["ruleId"] for r in results] == ["VTGEN-GRADCHECK", "VTGEN-UNVERIFIED"]
    assert where(results[0]) == ("tools/autograd/derivatives.yaml", 1008) and results[1]["level"] == "note"
    assert where(results[1]) == ("tools/autograd/derivatives.yaml", 1)  # an op with no place: the anchor


def test_a_crashed_entry_fails_the_run_and_one_that_raised_is_a_warning() -> None:
    """An entry that killed the child (or hung, or exited) is a failure of its op, exit 1, even with
    --allow-unverified; an entry that raised (its samples could not be made) verified nothing: a warning,
    never an error beside ``ok: true``."""
    rows = [
        {"entry": "spin (schema samples)", "aten": "spin", "error": "the process hung in sample 0", "fatal": True},
        {"entry": "nn.functional.odd", "error": "ValueError: no sample"},
    ]
    report = Report.from_results(entries_of(rows), ["spin"], {}, {}, None, 0)
    report.accept_unverified = True
    assert report.status == 1 and report.failed_ops == ["spin"] and not report.ok
    error, warning = from_gradcheck_report(report)
    assert (error.severity, error.message) == ("error", "spin (schema samples): the process hung in sample 0")
    said = "gradcheck entry nn.functional.odd: ValueError: no sample"
    assert (warning.severity, warning.message) == ("warning", said)
    raised = Report.from_results(entries_of(rows[1:]), [], {}, {}, None, 0)
    assert raised.status == 0 and [d.severity for d in from_gradcheck_report(raised)] == ["warning"]
