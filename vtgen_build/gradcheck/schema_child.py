"""Run in a child Python (with torch): gradcheck ops on samples built from their schemas.

    python schema_child.py REQUEST.json RESULTS.jsonl

Standalone (stdlib and torch only).  The request names the library to load (a path to a
shared library, or a package whose import loads it) and, per op, the samples planned by
``schema_samples.py``.  Each op runs backward, double-backward and forward-AD gradcheck in
float64 (and complex128 when planned), through its function and in-place variants, and its
out= variant is compared with the function.  Our kernel is proven entered by the library's
entry counters when it has them (``check --gradcheck`` builds), else by the Node that its
outputs' ``grad_fn`` is (the Node the yaml gives the op) and by the dispatcher naming a
generated ``VariableType_<k>.cpp`` as the op's Autograd kernel.  Results are JSON lines in the
shape of ``child.py``'s entries, so the report reads both alike.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import sys
import warnings
from typing import TYPE_CHECKING, Any

KINDS = (("backward", "schema_grad"), ("gradgrad", "schema_gradgrad"), ("forward", "schema_forward_ad"))
_NOT_IMPLEMENTED = re.compile(r"not (been )?implemented|forward AD with \S+ that does not support it", re.IGNORECASE)
SEED = 20240607  # as capture.SEED: set before every evaluation of a random op (tag nondeterministic_seeded)
_GENERATED = re.compile(r"Autograd\[alias\]: registered at \S*VariableType_\d+\.cpp:\d+")


if TYPE_CHECKING:  # mypy reads the package; the script loads its siblings by path
    from .batching import input_of, row_of, run_batched, timed
    from .child_loop import Counters, Progress, Run, Timeout, hidden_status, load_library, run_entries
else:  # loaded by path: this file runs as a script
    _here = os.path.dirname(os.path.abspath(__file__))
    _spec = importlib.util.spec_from_file_location("vtgen_gradcheck_child_loop", f"{_here}/child_loop.py")
    _loop = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_loop)
    Counters, Progress, Run, Timeout = _loop.Counters, _loop.Progress, _loop.Run, _loop.Timeout
    hidden_status, load_library, run_entries = _loop.hidden_status, _loop.load_library, _loop.run_entries
    _spec = importlib.util.spec_from_file_location("vtgen_gradcheck_batching", f"{_here}/batching.py")
    _batching = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_batching)
    input_of, row_of, run_batched, timed = _batching.input_of, _batching.row_of, _batching.run_batched, _batching.timed


def load(library: str) -> Counters | None:
    """Load the library (its counters when it has them); a package name is imported instead."""
    if os.sep in library or library.endswith((".so", ".dylib", ".dll")):
        lib = load_library(library)
        if not hasattr(lib, "vtgen_gradcheck_count"):
            return None
        status = hidden_status(lib)
        if status != "ok":
            raise RuntimeError(f"libtorch's hidden helpers could not be bound: {status}")
        return Counters(lib)
    importlib.import_module(library)
    return None


def _tensor(torch: Any, spec: dict[str, Any], shape: list[int], dtype: Any) -> Any:
    values, size = spec["values"], tuple(shape)
    if spec["dtype"] == "long" or values == "index":
        return torch.randint(0, spec["high"] or 2, size, dtype=torch.long)
    if spec["dtype"] == "bool":
        return torch.rand(size) > 0.5
    real = torch.float64
    if values == "positive":
        t = torch.rand(size, dtype=real) + 0.5
    elif values == "probability":
        t = torch.rand(size, dtype=real) * 0.8 + 0.1
    elif values == "unit":
        t = torch.rand(size, dtype=real) * 1.6 - 0.8
    elif values == "nonzero":
        t = (torch.rand(size, dtype=real) + 0.5) * torch.where(torch.rand(size) > 0.5, 1.0, -1.0).double()
    elif values == "spd":
        a = torch.randn(size, dtype=real)
        t = a @ a.mT + size[-1] * torch.eye(size[-1], dtype=real)
    elif values == "one_hot":
        t = torch.nn.functional.one_hot(torch.randint(0, size[-1], size[:-1]), size[-1]).double()
    else:
        t = torch.randn(size, dtype=real)
    if dtype.is_complex and values in ("normal", "nonzero"):  # off the real axis: no branch cut under a sample
        t = torch.complex(t, torch.randn(size, dtype=real))
    return t.requires_grad_(bool(spec["grad"]))


def make(torch: Any, sample: list[dict[str, Any]], dtype: Any, seed: int) -> dict[str, Any]:
    """The sample's arguments by name (tensors made from a fixed seed)."""
    torch.manual_seed(seed)
    made: dict[str, Any] = {}
    for spec in sample:
        if spec["kind"] == "tensor":
            made[spec["name"]] = _tensor(torch, spec, spec["shape"], dtype)
        elif spec["kind"] == "tensors":
            made[spec["name"]] = [_tensor(torch, spec, s, dtype) for s in spec["shapes"]]
        else:
            value = spec["value"]
            made[spec["name"]] = list(value) if isinstance(value, list) else value
    return made


def _op(torch: Any, namespace: str, op: str) -> Any:
    name, _, overload = op.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), name), overload or "default")


class Call:
    """The op as gradcheck sees it: the differentiable tensors positional, the rest fixed."""

    def __init__(
        self, torch: Any, fn: Any, args: dict[str, Any], writes: list[str], keep: list[int], seeded: bool = False
    ) -> None:
        self.torch, self.fn, self.args, self.writes, self.keep = torch, fn, args, writes, keep
        self.slots = [(n, i) for n, v in args.items() for i, t in _tensors(v) if t.requires_grad]
        self.names = [n for n, _ in self.slots]
        # a random op: each evaluation seeded alike; what else it writes (rrelu_with_noise's noise) on copies
        self.seeded = seeded
        schema = getattr(fn, "_schema", None)
        written = (
            [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write] if schema else []
        )
        self.scratch = [n for n in written if n not in writes and n in args] if seeded else []

    def inputs(self) -> tuple[Any, ...]:
        return tuple(dict(_tensors(self.args[n]))[i] for n, i in self.slots)

    def __call__(self, *inputs: Any) -> Any:
        args: dict[str, Any] = {n: list(v) if isinstance(v, list) else v for n, v in self.args.items()}
        for (n, i), t in zip(self.slots, inputs, strict=True):
            if i is None:
                args[n] = t
            else:
                args[n][i] = t
        for name in [*self.writes, *self.scratch]:  # written on copies: gradcheck's inputs stay as they are
            value = args[name]
            args[name] = [t.clone() for t in value] if isinstance(value, list) else value.clone()
        if self.seeded:
            with self.torch.random.fork_rng(devices=[]):
                self.torch.manual_seed(SEED)
                result = self.fn(**args)
        else:
            result = self.fn(**args)
        outs = result if isinstance(result, tuple) else (result,)
        # an in-place op: what it wrote (some return nothing)
        outs = (
            tuple(args[n] for n in self.writes)
            if self.writes
            else tuple(o for i, o in enumerate(outs) if i in self.keep)
        )
        flat = [t for o in outs for t in (o if isinstance(o, list) else [o])]
        kept = tuple(o for o in flat if isinstance(o, self.torch.Tensor) and (o.is_floating_point() or o.is_complex()))
        return kept[0] if len(kept) == 1 else kept


def _tensors(value: Any) -> list[tuple[int | None, Any]]:
    import torch

    if isinstance(value, torch.Tensor):
        return [(None, value)]
    if isinstance(value, list):
        return [(i, t) for i, t in enumerate(value) if isinstance(t, torch.Tensor)]
    return []


def gradcheck(torch: Any, kind: str, call: Call, batched: bool = False) -> None:
    """One kind of check; ``batched``: with its batched (vmap) part, a failure of which alone is a
    ``BatchingFailure`` (``batching.py``).  vmap refuses a random op's forward: its forward check is unbatched."""
    args = call.inputs()
    batched = batched and not (call.seeded and kind == "forward")
    locate = (lambda: input_of(call, args)) if kind == "backward" else None
    run_batched(lambda on: _gradcheck(torch, kind, call, args, on), batched, locate)


def _gradcheck(torch: Any, kind: str, call: Call, args: tuple[Any, ...], batched: bool) -> None:
    common = {"fast_mode": True}
    if kind == "backward":
        torch.autograd.gradcheck(
            call, args, check_grad_dtypes=True, check_undefined_grad=True, check_batched_grad=batched, **common
        )
    elif kind == "gradgrad":
        torch.autograd.gradgradcheck(
            call, args, check_fwd_over_rev=False, check_rev_over_rev=True, check_batched_grad=batched, **common
        )
    else:
        torch.autograd.gradcheck(
            call, args, check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
            check_batched_grad=False, check_batched_forward_grad=batched, **common,
        )  # fmt: skip


def node_proof(torch: Any, call: Call, node: str | None) -> bool:
    """The outputs' ``grad_fn`` is the Node our kernel creates."""
    out = call(*call.inputs())
    outs = out if isinstance(out, tuple) else (out,)
    names = {o.grad_fn.name() for o in outs if o.grad_fn is not None}
    return node is not None and node in names


def dispatch_proof(torch: Any, qualified: str) -> bool:
    """The dispatcher's Autograd kernel of the op is a generated one (registered in VariableType_<k>.cpp)."""
    return bool(_GENERATED.search(torch._C._dispatch_dump(qualified)))


def _refused(torch: Any, fn: Any, args: dict[str, Any]) -> str | None:
    """Why the op rejects the sample itself (no gradient involved), or None."""
    plain = {n: [t.detach().clone() for t in v] if isinstance(v, list) and _tensors(v) else v for n, v in args.items()}
    plain = {n: v.detach().clone() if isinstance(v, torch.Tensor) else v for n, v in plain.items()}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = fn(**plain)
    except Exception as exc:
        return f"the op rejects the sample: {' '.join(str(exc).split())[:200]}"
    outs = [t for o in (result if isinstance(result, (tuple, list)) else [result]) for t in _tensors(o)]
    outs += [t for v in plain.values() for t in _tensors(v)]  # what an in-place op wrote (some return nothing)
    if any(t[1].is_nested or t[1].layout != torch.strided for t in outs):
        return "needs sparse / quantized / nested inputs: a sparse or nested result"
    if any((t[1].is_floating_point() or t[1].is_complex()) and not bool(t[1].isfinite().all()) for t in outs):
        return "the sample is outside the op's domain: a result is not finite"
    return None


def _proven(torch: Any, counters: Counters | None, before: list[int], call: Call, want: str, node: str | None,
            qualified: str, kind: str) -> tuple[bool, list[str]]:  # fmt: skip
    if counters is not None:
        hit = counters.entered(before)
        return want in hit, sorted(hit & {want})
    ok = dispatch_proof(torch, qualified) and (kind == "forward" or node_proof(torch, call, node))
    return ok, [want] if ok else []


def _check(
    torch: Any, entry: dict[str, Any], kind: str, variant: str, dtype: Any, counters: Counters | None, at: Progress,
    batched: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One kind of check of one variant over every sample: passed, failed (which sample, why) or not run."""
    want = entry["op"] if variant == "function" else entry["inplace"]
    node = entry["node"] if variant == "function" else entry["inplace_node"]
    qualified = f"{entry['namespace']}::{want}"
    fn = _op(torch, entry["namespace"], want)
    ran, hit, why = 0, False, "no usable sample"
    for i, sample in enumerate(entry["samples"]):
        at(f"sample {i} ({str(dtype).removeprefix('torch.')}) of the {kind} check of {want}")
        args = make(torch, sample, dtype, seed=i)
        refused = _refused(torch, fn, args)
        if refused:
            why = refused
            continue
        keep = entry["forward_outputs"] if kind == "forward" else entry["outputs"]
        writes = entry["writes"] if variant == "function" else entry["inplace_writes"]
        call = Call(torch, fn, args, writes, keep, bool(entry.get("random")))
        if not call.slots:
            continue
        before = counters.snapshot() if counters else []
        try:
            gradcheck(torch, kind, call, batched)
        except Timeout:
            raise
        except Exception as exc:
            text = " ".join(str(exc).split())
            if _NOT_IMPLEMENTED.search(text):  # the yaml says so (not_implemented), or torch has no formula
                return {"status": "not run", "why": f"not differentiable twice / forward: {text[:200]}"}
            proven, hits = _proven(torch, counters, before, call, want, node, qualified, kind)
            positions = [entry["positions"].get(n, -1) for n in call.names]
            return {"status": "failed", "sample": i, "message": text[:600], "positions": positions,
                    "ours_ran": proven, "hit": hits, **row_of(exc)}  # fmt: skip
        proven, _ = _proven(torch, counters, before, call, want, node, qualified, kind)
        hit = hit or proven
        ran += 1
    if not ran:
        return {"status": "not run", "why": why}
    return {"status": "passed", "samples": ran, "ours_ran": hit, "hit": [want] if hit else []}


def qualified_out(entry: dict[str, Any]) -> str:
    return f"{entry['namespace']}::{entry['out']}"


def _empty(torch: Any, like: Any) -> Any:
    return [torch.empty_like(t) for t in like] if isinstance(like, list) else torch.empty_like(like)


def _out_check(torch: Any, entry: dict[str, Any], counters: Counters | None, at: Progress) -> dict[str, Any]:
    """The out= variant runs through our kernel on the first sample (it has no formula: autograd refuses it).

    Its values are torch's own kernels' business (some out= overloads differ from their function), not checked.
    """
    fn, out_fn = _op(torch, entry["namespace"], entry["op"]), _op(torch, entry["namespace"], entry["out"])
    at(f"sample 0 (float64) of the out= check of {entry['out']}")
    args = make(torch, entry["samples"][0], torch.float64, seed=0)
    plain = {n: v.detach() if isinstance(v, torch.Tensor) else v for n, v in args.items()}
    expected = fn(**plain)
    expected = expected if isinstance(expected, tuple) else (expected,)
    before = counters.snapshot() if counters else []
    out_fn(**plain, **{n: _empty(torch, e) for n, e in zip(entry["out_args"], expected, strict=True)})
    ours = entry["out"] in counters.entered(before) if counters else dispatch_proof(torch, qualified_out(entry))
    return {"status": "passed", "samples": 1, "ours_ran": ours, "hit": [entry["out"]] if ours else []}


def run_op(
    torch: Any, entry: dict[str, Any], counters: Counters | None, at: Progress, batched: bool = False
) -> dict[str, Any]:
    """Every check of one op's schema samples (``batched``: with their batched parts)."""
    checks: list[dict[str, Any]] = []
    for kind, test in KINDS:
        for variant in ("function", "inplace"):
            for name in entry["dtypes"]:
                row = {"test": test, "kind": kind, "variant": variant, "dtype": name}
                if variant == "inplace" and not entry["inplace"]:
                    continue
                if kind == "forward" and not entry["forward"]:
                    checks.append({**row, "status": "not run", "why": "no forward formula"})
                    continue
                dtype = getattr(torch, name)
                checks.append({**row, **_check(torch, entry, kind, variant, dtype, counters, at, batched)})
    if entry["out"]:
        row = {"test": "schema_out", "kind": "backward", "variant": "out", "dtype": "float64"}
        try:
            checks.append({**row, **_out_check(torch, entry, counters, at)})
        except Exception as exc:
            checks.append({**row, "status": "not run", "why": f"the out= op rejects the sample: {str(exc)[:200]}"})
    direct = {"function": [entry["op"]], "inplace": [entry["inplace"]] if entry["inplace"] else []}
    direct["out"] = [entry["out"]] if entry["out"] else []
    entered = sorted({h for c in checks for h in c.get("hit", [])})
    return {"entry": f"{entry['op']} (schema samples)", "aten": entry["op"], "direct": direct, "entered": entered,
            "checks": checks, "schema": True}  # fmt: skip


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        request = json.load(f)
    import torch

    warnings.filterwarnings("ignore")
    counters = load(request["library"])
    skip = set(request.get("skip", []))

    with open(argv[2], "a", encoding="utf-8") as out:
        at = Progress(out)

        def checked(entry: dict[str, Any]) -> Run:
            return timed(lambda: [run_op(torch, entry, counters, at, bool(request.get("batched")))])

        names = {f"{e['op']} (schema samples)": e["op"] for e in request["ops"]}
        chosen = ((f"{e['op']} (schema samples)", checked(e)) for e in request["ops"])
        runs = ((name, run) for name, run in chosen if name not in skip)
        run_entries(out, runs, int(request["timeout"]), at, names)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
