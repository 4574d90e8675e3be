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

from . import capture, child
from .child_loop import Counters, Progress, describe


def _name(opinfo: Any) -> str:
    return str(opinfo.name) + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def _families(request: dict[str, Any]) -> dict[str, list[str]]:
    """Family -> the installed ops of it (``variants``: op -> [family, variant], the parent's reading)."""
    found: dict[str, list[str]] = {}
    for op, (family, _) in request["variants"].items():
        found.setdefault(family, []).append(op)
    return found


def _request(request: dict[str, Any], counters: Counters) -> dict[str, Any]:
    """What ``child._run_entry`` reads of a request (no reference files: ours are rerun here)."""
    ops = sorted(set(counters.ops))
    return {**request, "out_ops": [], "autograd_ops": ops, "reference_dir": None, "whole": [],
            "max_samples": request.get("max_samples", 0)}  # fmt: skip


def own_entries(request: dict[str, Any], counters: Counters, at: Progress) -> list[dict[str, Any]]:
    """Each OpInfo named for a selected family, checked through our kernels (one row per entry)."""
    from torch.testing._internal.common_methods_invocations import op_db

    families = _families(request)
    asked = _request(request, counters)
    candidates = child.direct_candidates(counters, asked)
    rows = []
    for opinfo in op_db:
        if (opinfo.aten_name or opinfo.name) not in families:
            continue
        try:
            rows.append({**child._run_entry(opinfo, counters, asked, candidates, at), "opinfo": True})
        except Exception as exc:
            rows.append({"entry": _name(opinfo), "error": describe(exc)})
    return rows


def through_backward(request: dict[str, Any], counters: Counters, at: Progress) -> list[dict[str, Any]]:
    """An installed ``X_backward`` op: the double-backward and forward-over-reverse checks of the OpInfos
    named ``X`` (their backward calls it), attributed to it when they entered its kernel."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    rows = []
    for op in sorted(o for o in request["variants"] if o.split(".")[0].endswith("_backward")):
        forward = op.split(".")[0].removesuffix("_backward")
        for opinfo in (o for o in op_db if _name(o).split(".")[-1] == forward):
            checks = []
            for name in request["dtypes"]:
                args = [a.name for a in getattr(torch.ops.aten, op.split(".")[0]).default._schema.arguments]
                found = child._through_backward(opinfo, getattr(torch, name), request.get("max_samples") or 2,
                                                counters, args, bool(request.get("batched")))  # fmt: skip
                checks += [{**c, "variant": "function", "dtype": name, "ours_ran": op in c.get("hit", [])}
                           for c in found]  # fmt: skip
            rows.append({"entry": f"{op} (through {_name(opinfo)})", "aten": op, "opinfo_name": _name(opinfo),
                         "direct": {"function": [op], "inplace": []}, "checks": checks})  # fmt: skip
    return rows


def reference(rows: list[dict[str, Any]], request: dict[str, Any]) -> None:
    """Each failed OpInfo check again with torch's own kernels (ours removed): shared, it is not ours."""
    import torch
    from torch.testing._internal.common_methods_invocations import op_db

    by_name = {_name(o): o for o in op_db}
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
