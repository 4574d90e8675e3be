"""Incremental `generate` on copies of the real yaml: after any sequence of edits, the bytes equal a clean run's.

The property test applies random edits (formula edits, saved-value changes, removed, re-added and
moved entries, native_functions.yaml edits, option changes) and, after every step, compares the
output directory with a clean generation of the same inputs computed in memory.  The other tests
pin down the fast paths: which path ran, how many files were rewritten, and what `--explain` says.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import faulty
from vtgen_build.base.errors import VtgenError
from vtgen_build.engine import incremental
from vtgen_build.engine.generate import GenerateOptions, GenerateResult, _generator_stats, _settings, generate
from vtgen_build.inputs.files import Inputs

pytestmark = pytest.mark.torch

_FORMULA = re.compile(r"^(  (?:self|other): )((?!non_differentiable|auto_)[^\n]+)$", re.M)


def clean_files(inputs: Inputs, options: GenerateOptions) -> dict[str, str] | str:
    """What a clean run writes (path → content), or its error message."""
    try:
        settings = _settings(options, inputs, None, _generator_stats())
        return dict(incremental.full_run(inputs, options, settings, []).files)
    except VtgenError as exc:
        return str(exc)


def on_disk(out: Path) -> dict[str, str]:
    return {
        str(p.relative_to(out)): p.read_text(encoding="utf-8")
        for p in out.rglob("*")
        if p.is_file() and not p.relative_to(out).parts[0].startswith(".")  # manifest, cache, lock, temporaries
    }


def run(inputs: Inputs, options: GenerateOptions) -> object:
    try:
        return generate(inputs, options)
    except VtgenError as exc:
        return str(exc)


class Workspace:
    """Copies of the three yaml files under fixed paths (the manifest names its inputs by path)."""

    def __init__(self, root: Path, real_yaml: object) -> None:
        self.root = root
        self.real = real_yaml
        self.inputs = Inputs(*(str(root / n) for n in ("native_functions.yaml", "derivatives.yaml", "tags.yaml")))
        self.out = root / "out"

    def copy_inputs(self) -> None:
        """Fresh copies of the real yaml files."""
        for name, src in (
            ("native_functions.yaml", "native_functions"),
            ("derivatives.yaml", "derivatives"),
            ("tags.yaml", "tags"),
        ):
            shutil.copyfile(getattr(self.real, src), self.root / name)

    def seed(self) -> Path:
        """Copy the inputs in and generate once: the clean output each test starts from."""
        self.copy_inputs()
        seeded = self.root / "seeded"
        generate(self.inputs, GenerateOptions(str(seeded)))
        return seeded

    def reset(self, seeded_out: Path) -> None:
        self.copy_inputs()
        shutil.rmtree(self.out, ignore_errors=True)
        shutil.copytree(seeded_out, self.out)
        generate(self.inputs, GenerateOptions(str(self.out)))  # settle: the generator's code may have changed since

    def cli_args(self) -> list[str]:
        """``python -m vtgen_build generate`` on this workspace (run in a subprocess)."""
        i = self.inputs
        return [sys.executable, "-m", "vtgen_build", "generate", "--native-functions", i.native_functions,
                "--derivatives", i.derivatives, "--tags", str(i.tags), "--out", str(self.out)]  # fmt: skip

    def text(self, which: str) -> str:
        return Path(getattr(self.inputs, which)).read_text(encoding="utf-8")

    def write(self, which: str, text: str) -> None:
        Path(getattr(self.inputs, which)).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def workspace(real_yaml) -> Iterator[tuple[Workspace, Path]]:  # type: ignore[no-untyped-def]
    root = Path(tempfile.mkdtemp(prefix="vtgen-incr-"))
    ws = Workspace(root, real_yaml)
    seeded = ws.seed()  # one clean run, copied before every example
    yield ws, seeded
    shutil.rmtree(root, ignore_errors=True)


def _chunks(text: str) -> list[incremental.Chunk]:
    chunks = incremental.split_entries(text)
    assert chunks is not None
    return chunks


def _join(text: str, chunks: list[incremental.Chunk]) -> str:
    first = _chunks(text)[0].line
    return "".join(text.splitlines(keepends=True)[:first]) + "".join(c.text for c in chunks)


def edit(ws: Workspace, kind: str, pick: int, state: dict[str, object]) -> None:
    """Apply one edit of ``kind``; ``pick`` chooses where."""
    deriv = ws.text("derivatives")
    if kind in ("formula", "saved"):
        found = list(_FORMULA.finditer(deriv))
        m = found[pick % len(found)]
        new = f"({m.group(2)}) * 2" if kind == "formula" else f"{m.group(2)} + result * 0"
        ws.write("derivatives", deriv[: m.start(2)] + new + deriv[m.end(2) :])
    elif kind == "remove":
        chunks = _chunks(deriv)
        index = pick % len(chunks)
        state.setdefault("removed", []).append(chunks.pop(index))  # type: ignore[union-attr]
        ws.write("derivatives", _join(deriv, chunks))
    elif kind == "readd":
        removed = state.get("removed") or []
        chunks = _chunks(deriv)
        if removed:
            chunks.insert(pick % (len(chunks) + 1), removed.pop())  # type: ignore[union-attr]
        ws.write("derivatives", _join(deriv, chunks))
    elif kind == "swap":
        chunks = _chunks(deriv)
        i = pick % (len(chunks) - 1)
        chunks[i], chunks[i + 1] = chunks[i + 1], chunks[i]
        ws.write("derivatives", _join(deriv, chunks))
    elif kind == "native":
        native = ws.text("native_functions")
        starts = [m.start() for m in re.finditer(r"^- func: ", native, re.M)]
        at = starts[pick % len(starts)]
        ws.write("native_functions", native[:at] + "# edited\n" + native[at:])
    elif kind == "schema":  # rename an argument in a derivative entry: no function has that schema any more
        m = list(re.finditer(r"^- name: (\w+)\(Tensor self", deriv, re.M))[pick % 50]
        ws.write("derivatives", deriv[: m.end()] + "_renamed" + deriv[m.end() :])
    elif kind == "options":
        state["options"] = replace(state["options"], shards=[10, 7, 3][pick % 3])  # type: ignore[type-var]
    elif kind == "touch":
        ws.write("derivatives", deriv)  # same bytes, new mtime


EDITS = st.lists(
    st.tuples(
        st.sampled_from(
            ["formula", "formula", "saved", "remove", "readd", "swap", "native", "schema", "options", "touch"]
        ),
        st.integers(min_value=0, max_value=10_000),
    ),
    min_size=2,
    max_size=4,
)


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(edits=EDITS)
def test_incremental_output_equals_a_clean_run_after_every_edit(workspace, edits) -> None:  # type: ignore[no-untyped-def]
    ws, seeded = workspace
    ws.reset(seeded)
    state: dict[str, object] = {"options": GenerateOptions(str(ws.out))}
    failed = False  # the last run stopped at an error: the next one cannot be incremental
    for kind, pick in [("formula", 0), *edits]:  # one formula edit first: an incremental run in every example
        before = (state["options"], ws.text("derivatives"), ws.text("native_functions"))
        edit(ws, kind, pick, state)
        options = state["options"]
        assert isinstance(options, GenerateOptions)
        same = before == (options, ws.text("derivatives"), ws.text("native_functions"))
        result = run(ws.inputs, options)
        expected = clean_files(ws.inputs, options)
        if isinstance(expected, str):
            assert result == expected, (kind, pick)  # the same located error, clean or not
            failed = True
            continue
        assert isinstance(result, GenerateResult), result
        assert on_disk(ws.out) == expected, (kind, pick, result)
        why = result.explanations[0] if result.explanations else ""
        assert result.mode == _expected_mode(kind, same, failed, result), (kind, pick, result.mode, why)
        failed = False


# Why an edit of each kind needs a full run (what generate.py / incremental.py say, nothing else).
_SHAPE = ("a view op's entry changed", "kernels changed shape", "Nodes changed", "kernels changed shard")
_FULL_REASONS = {
    "formula": _SHAPE,
    "saved": _SHAPE,
    "remove": ("entries added or removed",),
    "readd": ("entries added or removed",),
    "swap": ("entries moved", "schema or dispatch keys changed"),  # two neighbours swap their texts
    "schema": ("schema or dispatch keys changed",),
    "native": ("native_functions.yaml changed",),
    "options": ("no usable manifest",),  # the manifest was written for other settings
}


def _expected_mode(kind: str, unchanged: bool, after_error: bool, result: GenerateResult) -> str:
    """The path a run must take after an edit of ``kind``; a full run only for that kind's reasons."""
    if after_error:
        return "full"
    if unchanged or kind == "touch":
        return "up-to-date"
    if kind in ("formula", "saved") and result.mode == "incremental":
        return "incremental"
    why = result.explanations[0] if result.explanations else ""
    assert any(r in why for r in _FULL_REASONS[kind]), (kind, why)
    return "full"


def _edit_once(ws: Workspace, old: str, new: str) -> GenerateResult:
    """Replace the first ``old`` in derivatives.yaml by ``new``; the next run must be incremental."""
    deriv = ws.text("derivatives")
    assert old in deriv
    ws.write("derivatives", deriv.replace(old, new, 1))
    result = generate(ws.inputs, GenerateOptions(str(ws.out)))
    assert result.mode == "incremental"
    return result


def test_formula_edit_replans_only_its_family_and_explains_why(workspace) -> None:  # type: ignore[no-untyped-def]
    ws, seeded = workspace
    ws.reset(seeded)
    options = GenerateOptions(str(ws.out))
    assert generate(ws.inputs, options).mode == "up-to-date"  # reset() settled it
    result = _edit_once(ws, "self: grad * self.cos().conj()", "self: grad * self.cos().conj() * 2")
    assert result.plan is not None and {k.op for k in result.plan.kernels} == {
        "sin",
        "sin_",
        "sin.out",
        "_foreach_sin",
        "_foreach_sin_",
    }
    assert len(result.explanations) == 1 and "'sin(Tensor self) -> Tensor') changed" in result.explanations[0]
    assert not any(w.endswith(".h") for w in result.written)
    assert len(result.written) <= 3  # Functions_<k> (backward) + VariableType of sin and sin_ (forward formula)
    assert on_disk(ws.out) == clean_files(ws.inputs, options)


def _includers(out: Path, header: str) -> list[str]:
    return sorted(p.name for p in out.glob("*.cpp") if f'#include "{header}"' in p.read_text())


def test_saved_value_change_in_one_op_rewrites_at_most_three_files_and_no_shared_header(workspace) -> None:  # type: ignore[no-untyped-def]
    ws, seeded = workspace
    ws.reset(seeded)
    options = GenerateOptions(str(ws.out))
    old = "  self: norm_backward(grad, self - other, p, result)\n  other: -norm_backward(grad, self - other, p, result)"
    assert ws.text("derivatives").count(old) == 1  # dist: saves self, other, p, result
    result = _edit_once(ws, old, old.replace("result)", "(self - other).norm(p))"))
    headers = [w for w in result.written if w.endswith(".h")]
    assert len(headers) == 1 and "struct TORCH_API DistBackward0 " in (ws.out / headers[0]).read_text()
    assert len(result.written) <= 3, result.written
    assert on_disk(ws.out) == clean_files(ws.inputs, options)
    assert len(_includers(ws.out, headers[0])) == 2  # its kernel's shard and its apply's shard, nothing else


def test_saved_value_change_in_a_family_touches_only_its_own_headers(workspace) -> None:  # type: ignore[no-untyped-def]
    ws, seeded = workspace
    ws.reset(seeded)
    options = GenerateOptions(str(ws.out))
    old = "- name: exp(Tensor self) -> Tensor\n  self: grad * result.conj()"
    result = _edit_once(ws, old, "- name: exp(Tensor self) -> Tensor\n  self: grad * self.exp().conj()")
    headers = sorted(w for w in result.written if w.endswith(".h"))
    assert len(headers) == 1  # exp, exp_, exp.out and _foreach_exp(_) share one shard, so one Node header
    assert {"ExpBackward0", "ForeachExpBackward0"} <= set(
        re.findall(r"struct TORCH_API (\w+)", (ws.out / headers[0]).read_text())
    )
    assert on_disk(ws.out) == clean_files(ws.inputs, options)


def test_global_inputs_and_broken_manifests_mean_a_clean_run(workspace) -> None:  # type: ignore[no-untyped-def]
    ws, seeded = workspace
    ws.reset(seeded)
    options = GenerateOptions(str(ws.out))
    (ws.out / incremental.CACHE / incremental.INDEX).write_bytes(b"garbage")
    ws.write("derivatives", ws.text("derivatives").replace("self.cos().conj()", "self.cos().conj() * 2", 1))
    result = generate(ws.inputs, options)
    assert result.mode == "full" and "no usable cache" in result.explanations[0]
    (ws.out / ".vtgen-manifest.json").write_text("{not json")
    assert generate(ws.inputs, options).mode == "full"
    tags = Path(ws.inputs.tags or "")
    tags.write_text(tags.read_text() + "\n# edited\n")
    result = generate(ws.inputs, options)
    assert result.mode == "full" and "tags.yaml changed" in result.explanations[0]
    assert on_disk(ws.out) == clean_files(ws.inputs, options)


def test_depfile_lists_every_input_read(workspace, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from vtgen_build.engine.generate import write_depfile

    ws, _ = workspace
    write_depfile(str(tmp_path / "d.d"), "stamp", ws.inputs)
    text = (tmp_path / "d.d").read_text()
    for path in (ws.inputs.native_functions, ws.inputs.derivatives, ws.inputs.tags):
        assert str(path) in text
    assert "pytorch_policy.yaml" in text and "VariableType.cpp" in text  # the policy and the templates


def test_two_runs_on_one_directory_are_serialized_by_the_lock(workspace, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws, seeded = workspace
    ws.reset(seeded)
    ws.write("derivatives", ws.text("derivatives").replace("self.cos().conj()", "self.cos().conj() * 2", 1))
    pause = tmp_path / "paused"
    cli = faulty.command(ws.cli_args()[3:], pause=f"outputs written:{pause}")  # its args, under the harness
    first = subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not pause.exists():  # until it stands between writing the outputs and the manifest
            assert first.poll() is None, first.communicate()
            os.sched_yield()
        with open(ws.out / ".vtgen.lock", "a+b") as handle, pytest.raises(BlockingIOError):
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # it holds the lock mid-run
        second = subprocess.Popen(ws.cli_args(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pause.unlink()
        outputs = [p.communicate(timeout=120) for p in (first, second)]
    finally:
        first.kill()
    assert (first.returncode, second.returncode) == (0, 0), outputs
    assert "up to date" not in outputs[0][0] and "up to date" in outputs[1][0], outputs  # it waited, then saw it done
    assert on_disk(ws.out) == clean_files(ws.inputs, GenerateOptions(str(ws.out)))
