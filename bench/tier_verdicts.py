"""``bench_gradcheck.py --verdicts``: edit -> verdict for both tiers of ``check --gradcheck``, side by side.

For each op (sin, celu, elu_backward) a wrong edit of its formula, then the revert; each step timed as:

* Python tier, warm: ``--tier python`` with the check directory's worker up (the child forked with
  torch and PyTorch's test suite imported), from the command's start to its end;
* Python tier, ``--watch``: a ``check --gradcheck --watch --tier python --op OP`` running beside the
  worker, from the save (the file written) to the ``watch: OK|FAILED`` line (its poll: 0.3 s);
* Python tier, one-shot: ``--tier python --no-worker`` (the child imports torch itself);
* compiled tier, warm and one-shot: ``--tier compiled``, after one cold run built every unit (each
  mode's wrong text is its own, so each compiles its edited unit; the revert finds its unit built);
* a bare ``python -c 'import torch'`` of the same step, so that a loaded machine's figures can be judged;
  for the one-shot runs (whose processes are all the bench's children) their CPU seconds (user + system)
  too, which a loaded machine inflates far less than wall time.

Every verdict is checked: a wrong edit exits 1 with the error at the edited line (the Python tier's
marked ``[python tier]``), a revert exits 0.  The commands run with bytecode caching on, as an
installed package has it (``PYTHONDONTWRITEBYTECODE`` is dropped).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

__all__ = ["COLUMNS", "Edit", "Table", "measure", "render"]

COLUMNS = ("py_warm", "py_watch", "py_once", "py_once_cpu", "compiled_warm", "compiled_once", "import_torch",
           "import_torch_once", "import_torch_once_cpu")  # fmt: skip
_HEAD = ("python tier warm", "python tier --watch", "python tier one-shot", "(its CPU)", "compiled warm",
         "compiled one-shot", "import torch (warm step)", "import torch (one-shot step)", "(its CPU)")  # fmt: skip
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass(frozen=True)
class Edit:
    op: str
    right: str
    wrong_once: str  # the one-shot runs' wrong text
    wrong_warm: str  # the warm runs' (another unit to compile)


@dataclass
class Table:
    rows: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def put(self, op: str, step: str, column: str, seconds: float) -> None:
        self.rows.setdefault((op, step), {})[column] = seconds


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(argv: Sequence[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.perf_counter()
    done = subprocess.run(list(argv), capture_output=True, text=True, check=False, env=ENV)
    return time.perf_counter() - began, done


def _timed_cpu(table: Table, op: str, step: str, column: str, run: Callable[[], float]) -> None:
    """``column``: ``run``'s wall seconds; ``column``_cpu: the CPU seconds of the processes it waited for."""
    cpu = _cpu()
    table.put(op, step, column, run())
    table.put(op, step, f"{column}_cpu", _cpu() - cpu)


def _verdict(base: list[str], op: str, extra: Sequence[str], wrong_at: int | None, marked: bool) -> float:
    seconds, done = _run([*base, "--gradcheck", "--op", op, *extra])
    tag = "[python tier] " if marked else ""
    wrong_found = done.returncode == 1 and f":{wrong_at}: error: {tag}" in done.stderr
    right = done.returncode == 0 if wrong_at is None else wrong_found
    if not right:
        said = f"{done.stdout[-1500:]}{done.stderr[-2500:]}"
        raise SystemExit(f"{op} {' '.join(extra)}: exit {done.returncode}, a wrong verdict:\n{said}")
    return seconds


def _import_torch() -> float:
    return _run([sys.executable, "-c", "import torch"])[0]


def _write(derivatives: Path, text: str, edit: Edit, wrong: str | None) -> int | None:
    """The yaml with ``wrong`` in place of the right line (None: the revert); the edited line."""
    derivatives.write_text(text if wrong is None else text.replace(edit.right, wrong, 1), encoding="utf-8")
    return None if wrong is None else text[: text.index(edit.right)].count("\n") + 1


def measure(base: list[str], derivatives: Path, out: Path, edits: Sequence[Edit], compiled: bool) -> Table:
    """Every column of every (op, step); ``compiled``: the compiled tier's too (its cold run first)."""
    text, table, tool = derivatives.read_text(encoding="utf-8"), Table(), base[:3]
    if compiled:
        ops = [a for e in edits for a in ("--op", e.op)]
        cold = _run([*base, "--gradcheck", *ops, "--no-worker"])[0]
        table.notes.append(f"compiled tier, cold run of all three (one-shot): {cold:.1f} s")
    began = time.perf_counter()
    subprocess.run([*tool, "worker", "start", "--out", str(out)], check=True, capture_output=True, env=ENV)
    table.notes.append(f"worker start: {time.perf_counter() - began:.1f} s")
    try:
        for edit in edits:
            for step, wrong in (("wrong", edit.wrong_warm), ("revert", None)):
                at = _write(derivatives, text, edit, wrong)
                table.put(edit.op, step, "py_warm", _verdict(base, edit.op, ("--tier", "python"), at, True))
                if compiled:
                    table.put(edit.op, step, "compiled_warm", _verdict(base, edit.op, (), at, False))
                table.put(edit.op, step, "import_torch", _import_torch())
            for step, seconds in _watched(base, derivatives, text, edit):
                table.put(edit.op, step, "py_watch", seconds)
    finally:
        subprocess.run([*tool, "worker", "stop", "--out", str(out)], check=False, capture_output=True, env=ENV)
    for edit in edits:
        for step, wrong in (("wrong", edit.wrong_once), ("revert", None)):
            at = _write(derivatives, text, edit, wrong)
            once = ("--tier", "python", "--no-worker")
            _timed_cpu(table, edit.op, step, "py_once", partial(_verdict, base, edit.op, once, at, True))
            if compiled:
                table.put(edit.op, step, "compiled_once", _verdict(base, edit.op, ("--no-worker",), at, False))
            _timed_cpu(table, edit.op, step, "import_torch_once", _import_torch)
    derivatives.write_text(text, encoding="utf-8")
    return table


def _watched(base: list[str], derivatives: Path, text: str, edit: Edit) -> list[tuple[str, float]]:
    """A ``--watch --tier python`` of the op: its first verdict OK, then (save -> printed verdict) the
    wrong edit's FAILED at its line and the revert's OK; Ctrl-C ends it."""
    log = derivatives.parent / f"watch-{edit.op}.txt"
    argv = [*base, "--gradcheck", "--watch", "--tier", "python", "--op", edit.op]
    with open(log, "w", encoding="utf-8") as said:
        process = subprocess.Popen(argv, stdout=said, stderr=said, text=True, env=ENV)
    try:
        _seen(log, "watch: OK", 1, process)
        found = []
        steps = (("wrong", edit.wrong_warm, "watch: FAILED", 1), ("revert", None, "watch: OK", 2))
        for step, wrong, verdict, count in steps:
            began = time.perf_counter()
            at = _write(derivatives, text, edit, wrong)
            said_now = _seen(log, verdict, count, process)
            found.append((step, time.perf_counter() - began))
            if at is not None and f":{at}: error: [python tier]" not in said_now:
                raise SystemExit(f"--watch {edit.op}: no [python tier] error at line {at}:\n{said_now[-3000:]}")
        return found
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()


def _seen(log: Path, text: str, count: int, process: subprocess.Popen[str], limit: float = 600) -> str:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        said = log.read_text(encoding="utf-8")
        if said.count(text) >= count:
            return said
        if process.poll() is not None:
            raise SystemExit(f"the watching command ended (exit {process.returncode}):\n{said[-3000:]}")
        time.sleep(0.02)
    raise SystemExit(f"no {count}x {text!r} within {limit:.0f} s:\n{log.read_text(encoding='utf-8')[-3000:]}")


def render(table: Table, edits: Sequence[Edit], load: tuple[float, float]) -> str:
    lines = [f"load average {load[0]:.1f} at the start, {load[1]:.1f} at the end", *table.notes, "",
             "| op | edit | " + " | ".join(_HEAD) + " |", "|---|---|" + "---|" * len(_HEAD)]  # fmt: skip
    for edit in edits:
        for step in ("wrong", "revert"):
            row = table.rows.get((edit.op, step), {})
            cells = (f"{row[c]:.2f} s" if c in row else "-" for c in COLUMNS)
            lines.append(f"| {edit.op} | {step} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
