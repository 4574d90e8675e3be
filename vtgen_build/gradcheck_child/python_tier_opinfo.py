"""The Python tier's OpInfo checks, child side; standalone (stdlib and torch only).

After the schema samples (``python_tier.py``), the ops' own OpInfo entries run through the kernels the
Python tier installed, with the compiled tier's own check code (``child._run_entry``: backward,
double backward and forward AD, function and in-place variants, PyTorch's skips and dtypes), and an
op only a backward pass reaches (``elu_backward``) gets the double-backward and forward-over-reverse
checks of the OpInfos named for its forward op (``nn.functional.elu``: ``child._through_backward``).
A failed check is run again with torch's own kernels once ours are removed (``reference``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from . import capture, child, opinfo_import
from .child_loop import Counters, Progress, Run
from .protocol import CheckRequest, TierRequest
from .rows import FAILED, NOT_RUN, Check, Entry

_THROUGH = " (through "  # a row of an op reached through an OpInfo's backward pass: "elu_backward (through nn...)"


def _name(opinfo: Any) -> str:
    return str(opinfo.name) + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def _families(request: TierRequest) -> dict[str, list[str]]:
    """Family -> the installed ops of it (``variants``: (op, family, variant), the parent's reading)."""
    found: dict[str, list[str]] = {}
    for op, family, _ in request.variants:
        found.setdefault(family, []).append(op)
    return found


def _request(request: TierRequest, counters: Counters) -> CheckRequest:
    """What ``child._run_entry`` reads of a request (no reference files: ours are rerun here)."""
    return CheckRequest("", None, (), tuple(sorted(set(counters.ops))), request.variants, request.dtypes,
                        request.max_samples, request.timeout, (), (), None, request.batched, request.first_failure,
                        ())  # fmt: skip


def entries(request: TierRequest, counters: Counters, at: Progress) -> list[tuple[str, Run]]:
    """The entries to run, each under the per-entry time limit (``child_loop.run_entries``): each OpInfo
    named for a selected family, checked through our kernels; for each installed ``X_backward`` op, the
    double-backward and forward-over-reverse checks of the OpInfos named ``X`` (their backward calls it)."""
    op_db = opinfo_import.op_db()
    families = _families(request)
    asked = _request(request, counters)
    candidates = child.direct_candidates(counters, asked)
    found: list[tuple[str, Run]] = []
    for opinfo in (o for o in op_db if (o.aten_name or o.name) in families):
        run = _own(opinfo, counters, asked, candidates, at)
        found.append((_name(opinfo), run))
    for op in sorted(op for op, _, _ in request.variants if op.split(".")[0].endswith("_backward")):
        forward = op.split(".")[0].removesuffix("_backward")
        found += [(f"{op}{_THROUGH}{_name(o)})", _through(op, o, counters, request, at))
                  for o in op_db if _name(o).split(".")[-1] == forward]  # fmt: skip
    return found


def _own(opinfo: Any, counters: Counters, asked: CheckRequest, candidates: list[str], at: Progress) -> Run:
    return lambda: [child._run_entry(opinfo, counters, asked, candidates, at)]


def _through(op: str, opinfo: Any, counters: Counters, request: TierRequest, at: Progress) -> Run:
    """``op``'s row of the OpInfo's double-backward and forward-over-reverse checks (``_through_backward``),
    each check attributed to it when it entered its kernel."""

    def run() -> list[Entry]:
        import torch

        args = [a.name for a in getattr(torch.ops.aten, op.split(".")[0]).default._schema.arguments]
        checks: list[Check] = []
        for name in request.dtypes:
            limit = request.max_samples or 2
            dtype = getattr(torch, name)
            found = child._through_backward(opinfo, dtype, limit, counters, args, request.batched, at=at)
            checks += [replace(c, variant="function", dtype=name, ours_ran=op in c.hit) for c in found]
        direct = (("function", (op,)), ("inplace", ()))
        return [Entry(f"{op}{_THROUGH}{_name(opinfo)})", tuple(checks), direct, aten=op, source=_name(opinfo))]

    return run


def reference(rows: list[Entry], request: TierRequest) -> list[Entry]:
    """Each failed OpInfo check again with torch's own kernels (ours removed): shared, it is not ours."""
    import torch

    by_name = {_name(o): o for o in opinfo_import.op_db()}
    limit, batched = request.max_samples, request.batched

    def judged(opinfo: Any, c: Check) -> Check:
        if opinfo is None or c.status != FAILED:
            return c
        dtype = getattr(torch, c.dtype)
        theirs = child._check(opinfo, c.kind, c.variant, dtype, limit or 2, capture._NoCounters(), set(), batched)
        if theirs.status != FAILED:
            return c
        return replace(c, status=NOT_RUN, why=f"torch's own kernels fail it too: {theirs.message[:200]}")

    return [r.with_checks(judged(by_name.get(_opinfo_of(r.name)), c) for c in r.checks) for r in rows]


def _opinfo_of(entry: str) -> str:
    """The OpInfo an entry's row ran: its own name, or the one a ``_through`` row names."""
    _, through, opinfo = entry.partition(_THROUGH)
    return opinfo.removesuffix(")") if through else entry
