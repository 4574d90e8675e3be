"""The Python tier's OpInfo checks, child side; standalone (stdlib and torch only).

After the schema samples (``python_tier.py``), the ops' own OpInfo entries run through the kernels the
Python tier installed, with the compiled tier's own check code (``child._run_entry``: backward,
double backward and forward AD, function and in-place variants, PyTorch's skips and dtypes), and an
op only a backward pass reaches (``elu_backward``) gets the double-backward and forward-over-reverse
checks of the OpInfos named for its forward op (``nn.functional.elu``: ``child._through_backward``).
A failed check is run again with torch's own kernels once ours are removed (``reference``).
"""

from __future__ import annotations

from typing import Any

from . import capture, child, opinfo_import
from .child_loop import Counters, Progress, Run
from .protocol import CheckRequest


def _name(opinfo: Any) -> str:
    return str(opinfo.name) + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def _families(request: dict[str, Any]) -> dict[str, list[str]]:
    """Family -> the installed ops of it (``variants``: op -> [family, variant], the parent's reading)."""
    found: dict[str, list[str]] = {}
    for op, (family, _) in request["variants"].items():
        found.setdefault(family, []).append(op)
    return found


def _request(request: dict[str, Any], counters: Counters) -> CheckRequest:
    """What ``child._run_entry`` reads of a request (no reference files: ours are rerun here)."""
    variants = tuple((op, v[0], v[1]) for op, v in request["variants"].items())
    return CheckRequest("", None, (), tuple(sorted(set(counters.ops))), variants, tuple(request["dtypes"]),
                        request.get("max_samples", 0), int(request["timeout"]), (), (), None,
                        bool(request.get("batched")), bool(request.get("first_failure")), ())  # fmt: skip


def entries(request: dict[str, Any], counters: Counters, at: Progress) -> list[tuple[str, Run]]:
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
    for op in sorted(o for o in request["variants"] if o.split(".")[0].endswith("_backward")):
        forward = op.split(".")[0].removesuffix("_backward")
        found += [(f"{op} (through {_name(o)})", _through(op, o, counters, request))
                  for o in op_db if _name(o).split(".")[-1] == forward]  # fmt: skip
    return found


def _own(opinfo: Any, counters: Counters, asked: CheckRequest, candidates: list[str], at: Progress) -> Run:
    return lambda: [{**child._run_entry(opinfo, counters, asked, candidates, at), "opinfo": True}]


def _through(op: str, opinfo: Any, counters: Counters, request: dict[str, Any]) -> Run:
    """``op``'s row of the OpInfo's double-backward and forward-over-reverse checks (``_through_backward``),
    each check attributed to it when it entered its kernel."""

    def run() -> list[dict[str, Any]]:
        import torch

        args = [a.name for a in getattr(torch.ops.aten, op.split(".")[0]).default._schema.arguments]
        checks = []
        for name in request["dtypes"]:
            limit, batched = request.get("max_samples") or 2, bool(request.get("batched"))
            found = child._through_backward(opinfo, getattr(torch, name), limit, counters, args, batched)
            checks += [{**c, "variant": "function", "dtype": name, "ours_ran": op in c.get("hit", [])} for c in found]
        return [{"entry": f"{op} (through {_name(opinfo)})", "aten": op, "opinfo_name": _name(opinfo),
                 "source": _name(opinfo), "direct": {"function": [op], "inplace": []}, "checks": checks}]  # fmt: skip

    return run


def reference(rows: list[dict[str, Any]], request: dict[str, Any]) -> None:
    """Each failed OpInfo check again with torch's own kernels (ours removed): shared, it is not ours."""
    import torch

    by_name = {_name(o): o for o in opinfo_import.op_db()}
    limit, batched = request.get("max_samples", 0), bool(request.get("batched"))
    for row in rows:
        opinfo = by_name.get(str(row.get("opinfo_name", row.get("entry"))))
        for c in row.get("checks", []):
            if opinfo is None or c.get("status") != "failed":
                continue
            kind, variant, dtype = c["kind"], c.get("variant", "function"), getattr(torch, c["dtype"])
            theirs = child._check(opinfo, kind, variant, dtype, limit or 2, capture._NoCounters(), set(), batched)
            if theirs["status"] == "failed":
                c.update({"status": "not run", "why": f"torch's own kernels fail it too: {theirs['message'][:200]}"})
