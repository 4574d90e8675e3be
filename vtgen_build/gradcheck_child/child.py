"""Run in a child Python (with torch) by ``check --gradcheck``; standalone: stdlib and torch only.

    python launch.py child REQUEST.json RESULTS.jsonl

Loads the library named in the request (it overrides the Autograd kernels of its
ops) and runs PyTorch's OpInfo samples (CPU) through gradcheck, gradgradcheck and
forward-mode gradcheck, honouring each OpInfo's support flags, dtypes, skips and
expected failures.  Writes one JSON object per line: ``{"start": entry}`` before
an entry, then its result, so that the parent knows which entry a crash hit.
Results are data only; nothing here reads code from the parent.

    python launch.py child --reach REQUEST.json RESULTS.jsonl   (what every entry reaches: ``capture.reach``)
    python launch.py child --reference LIST.json RESULTS.json  (failed checks again with torch's own kernels)

A request's ``targets`` are ops checked on the arguments captured from the entries whose
calls reach them (``capture.captured_checks``), entries from every sample source
(``sample_sources``): OpInfo, ModuleInfo and plugged-in ones.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import replace
from typing import Any

from . import batching, capture, opinfo_import, sample_sources
from .child_loop import Counters, Progress, Run, describe, hidden_status, load_library, run_entries
from .protocol import (
    FAILED,
    NOT_RUN,
    PASSED,
    CaptureTarget,
    Check,
    CheckRequest,
    Entry,
    InstalledSchema,
    InstalledSchemas,
    ReachRequest,
    ReachRow,
    ReferenceAnswer,
    ReferenceRequest,
    SchemasQuery,
)

# (test name as PyTorch's test_ops.py calls it, its class names, check kind, variant)
CHECKS = (
    ("test_fn_grad", ("TestBwdGradients", "TestGradients"), "backward", "function"),
    ("test_fn_gradgrad", ("TestBwdGradients", "TestGradients"), "gradgrad", "function"),
    ("test_forward_mode_AD", ("TestFwdGradients", "TestGradients"), "forward", "function"),
    # forward AD through the backward formulas (where the OpInfo says supports_fwgrad_bwgrad): the same
    # Jacobian as the double backward's, made with the forward formulas of the ops the backward calls
    ("test_fn_fwgrad_bwgrad", ("TestFwdGradients", "TestGradients"), "fwd_over_rev", "function"),
    ("test_inplace_grad", ("TestBwdGradients", "TestGradients"), "backward", "inplace"),
    ("test_inplace_gradgrad", ("TestBwdGradients", "TestGradients"), "gradgrad", "inplace"),
    ("test_inplace_forward_mode_AD", ("TestFwdGradients", "TestGradients"), "forward", "inplace"),
)
# run for an op reached only by the backward pass of an OpInfo's call (a ``*_backward`` op)
THROUGH_BACKWARD = (
    ("test_fn_gradgrad", ("TestBwdGradients", "TestGradients"), "gradgrad"),
    ("test_fn_fwgrad_bwgrad", ("TestFwdGradients", "TestGradients"), "fwd_over_rev"),
)


def _skipped(opinfo: Any, test: str, classes: tuple[str, ...], dtype: Any) -> str | None:
    """Why PyTorch's own test suite skips (or expects to fail) this test, if it does."""
    for info in opinfo.decorators:
        if not hasattr(info, "is_active"):
            continue
        if not any(info.is_active(cls, test, "cpu", dtype, {}) for cls in classes):
            continue
        for deco in info.decorators:
            name = getattr(deco, "__qualname__", type(deco).__name__)
            if "expectedFailure" in name:
                return f"expected failure in {info.cls_name}.{test}"
            if "skip" in name.lower():
                return f"skipped in {info.cls_name}.{test}"
    return None


def _supports(opinfo: Any, kind: str, variant: str) -> str | None:
    """None when this check applies to the OpInfo, else why not."""
    if not opinfo.supports_autograd and kind != "forward":
        return "supports_autograd is False"
    if kind == "gradgrad" and not opinfo.supports_gradgrad:
        return "supports_gradgrad is not True"
    if kind == "fwd_over_rev" and not opinfo.supports_fwgrad_bwgrad:
        return "supports_fwgrad_bwgrad is not True"
    if kind == "forward" and not opinfo.supports_forward_ad:
        return "supports_forward_ad is False"
    if variant == "inplace":
        if opinfo.inplace_variant is None:
            return "no inplace variant"
        if not opinfo.supports_inplace_autograd:
            return "supports_inplace_autograd is False"
    return None


def _grad_positions(args: tuple[Any, ...]) -> list[int]:
    """For each tensor gradcheck differentiates, the position of the argument it came from."""
    import torch

    positions: list[int] = []
    for p, a in enumerate(args):
        items = a if isinstance(a, (list, tuple)) else [a]
        positions += [p for t in items if isinstance(t, torch.Tensor) and t.requires_grad]
    return positions


def _batched(opinfo: Any, kind: str, variant: str) -> bool:
    """Does PyTorch's own test run this check with its batched (vmap) part? (``batching.py``)"""
    if kind == "backward":
        return bool(opinfo.check_batched_grad)
    if kind == "gradgrad":
        return bool(opinfo.check_batched_gradgrad)
    if kind == "forward":
        flag = opinfo.check_batched_forward_grad if variant == "function" else opinfo.check_inplace_batched_forward_grad
        return bool(flag)
    return False  # forward-over-reverse: PyTorch's test turns it off


def _run_sample(opinfo: Any, kind: str, variant: str, sample: Any, batched: bool = False) -> None:
    """One sample through one check; ``batched``: with its batched part where the OpInfo enables it."""
    op = opinfo.get_op() if variant == "function" else opinfo.inplace_variant
    sources = sample_sources
    flat, lengths = sources.flatten_args((sample.input, *sample.args))

    def call(*inputs: Any) -> Any:
        args = sources.unflatten_args(inputs, lengths)
        if variant == "inplace":
            args[0] = args[0].clone()
        return sample.output_process_fn_grad(opinfo.gradcheck_wrapper(op, *args, **sample.kwargs))

    args = tuple(flat)
    fast = True if opinfo.gradcheck_fast_mode is None else opinfo.gradcheck_fast_mode
    common = {"nondet_tol": opinfo.gradcheck_nondet_tol, "fast_mode": fast}
    locate = (lambda: batching.input_of(call, args)) if kind == "backward" else None
    on = batched and _batched(opinfo, kind, variant)
    batching.run_batched(lambda b: _gradcheck(call, args, kind, common, b), on, locate)


def _gradcheck(call: Any, args: tuple[Any, ...], kind: str, common: dict[str, Any], batched: bool) -> None:
    import torch

    batching.gradcheck_kind(torch, call, args, kind, common, batched)


def _samples(opinfo: Any, dtype: Any, variant: str, limit: int) -> list[Any]:
    out: list[Any] = []
    for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=True):
        if variant == "inplace" and getattr(sample, "broadcasts_input", False):
            continue
        out.append(sample)
        if limit and len(out) >= limit:
            break
    return out


def _inplace_takes(opinfo: Any, sample: Any) -> bool:
    """Can the in-place op itself take ``sample`` (e.g. a result dtype its input can hold)?

    Asked below Autograd and ADInplaceOrView, of torch's own kernel: our kernels are not run
    here, so one that throws on every sample fails the check instead of making it "not run".
    """
    import torch

    try:
        with warnings.catch_warnings(), torch._C._AutoDispatchBelowADInplaceOrView():
            warnings.simplefilter("ignore")
            opinfo.inplace_variant(sample.input.detach().clone(), *sample.args, **sample.kwargs)
    except Exception:
        return False
    return True


def _check(
    opinfo: Any, kind: str, variant: str, dtype: Any, limit: int, counters: Counters | capture._NoCounters,
    hit: set[str],
    batched: bool = False, at: Progress | None = None, only: frozenset[int] | None = None,
) -> Check:  # fmt: skip
    """One check over an OpInfo's samples: passed, failed (which sample, why) or not applicable.

    ``only``: the samples it runs (their indices), not the first ``limit``;
    ``hit`` collects the ops whose kernels gradcheck entered (not the making of the samples);
    ``batched``: with the batched (vmap) part where the OpInfo enables it (``batching.py``); ``at``
    hears of each sample before it runs (a crash or a hang in it is reported there).
    """
    ran, named = 0, str(dtype).removeprefix("torch.")
    found = Check(kind, variant, NOT_RUN, dtype=named)
    chosen = enumerate(_samples(opinfo, dtype, variant, limit if only is None else max(only, default=-1) + 1))
    for i, sample in ((i, s) for i, s in chosen if only is None or i in only):
        if at is not None:
            at(f"sample {i} ({named}) of the {kind} check of {_name(opinfo)} ({variant})")
        if variant == "inplace" and not _inplace_takes(opinfo, sample):
            continue
        before = counters.snapshot()
        try:
            _run_sample(opinfo, kind, variant, sample, batched)
        except Exception as exc:
            hit |= counters.entered(before)
            message = " ".join(str(exc).split())[:600] or type(exc).__name__
            positions = tuple(_grad_positions((sample.input, *sample.args)))
            failed = replace(found, status=FAILED, sample=i, message=message, positions=positions)
            return batching.failed_by(failed, exc)
        hit |= counters.entered(before)
        ran += 1
    return replace(found, status=PASSED, samples=ran) if ran else replace(found, why="no usable sample")


def _shadowed(op: str) -> bool:
    """torch has a CompositeImplicitAutograd kernel for ``op``: it wins over an Autograd kernel."""
    import torch

    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", "CompositeImplicitAutograd"))
    except RuntimeError:
        return False


def _reached(opinfo: Any, variant: str, dtypes: list[Any]) -> set[str] | None:
    """The aten ops one call of the variant reaches below autograd (its first sample); None: unknown.

    CompositeImplicitAutograd ops are decomposed above that level, so an overload that merely
    shares the OpInfo's name (``max.binary`` calls ``max.other``, which becomes ``maximum``) is
    not in it, while an op whose Autograd kernel must run (ours, or torch's own if ours did not
    take) is.
    """
    from torch.utils import _python_dispatch

    mode: Any = _python_dispatch.TorchDispatchMode

    class Record(mode):  # type: ignore[misc]
        seen: set[str]

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.seen.add(str(func.name()).removeprefix("aten::"))
            return func(*args, **(kwargs or {}))

    op = opinfo.get_op() if variant == "function" else opinfo.inplace_variant
    supported = opinfo.supported_dtypes("cpu")
    dtype = next((d for d in dtypes if d in supported), None)
    if op is None or dtype is None:
        return None
    try:
        sample = next(iter(opinfo.sample_inputs("cpu", dtype, requires_grad=False)))
        first = sample.input.clone() if variant == "inplace" else sample.input
        record = Record()
        record.seen = set()
        with warnings.catch_warnings(), record:
            warnings.simplefilter("ignore")
            op(first, *sample.args, **sample.kwargs)
    except Exception:
        return None
    return record.seen


def direct_candidates(counters: Counters, request: CheckRequest) -> list[str]:
    """Our registered ops an OpInfo can call directly (``_entry_ops``), the same for every entry."""
    out_ops, autograd_ops = set(request.out_ops), set(request.autograd_ops)
    return [op for op in counters.ops if op not in out_ops and op in autograd_ops and not _shadowed(op)]


def _entry_ops(opinfo: Any, candidates: list[str], variants: dict[str, Any], dtypes: list[Any]) -> dict[str, list[str]]:
    """Our registered ops an OpInfo calls directly, per variant (none: a composite of others).

    out= overloads do not count: an OpInfo's function and in-place variants never call them; nor do
    kernels registered for another key than Autograd (AutogradNestedTensor): dense samples miss them;
    nor ops torch implements as CompositeImplicitAutograd, whose kernel the dispatcher prefers; nor
    overloads of the OpInfo's name that its call does not reach (``_reached``). ``variants``
    (op -> [family, variant]) is the parent's reading of each op's name: ``__iand__`` is the
    in-place variant of ``__and__``; nothing here cuts names.
    """
    base = opinfo.aten_name or opinfo.name
    found: dict[str, list[str]] = {}
    for variant in ("function", "inplace"):
        mine = [op for op in candidates if variants.get(op) == [base, variant]]
        reached = _reached(opinfo, variant, dtypes) if mine else None
        found[variant] = mine if reached is None else [op for op in mine if op in reached]
    return found


def _run_entry(opinfo: Any, counters: Counters, request: CheckRequest, candidates: list[str], at: Progress) -> Entry:
    """An OpInfo entry's checks, each dtype of each; asked to answer at the first failure (``first_failure``)
    and not told to run the entry ``whole``, it ends at the first failed check that entered our kernels:
    the row says ``cut`` (the parent runs it again whole if PyTorch's own kernels fail that check too)."""
    import torch

    dtypes = [getattr(torch, d) for d in request.dtypes]
    checks: list[Check] = []
    direct = _entry_ops(opinfo, candidates, request.variant_of, dtypes)
    cut = request.first_failure and _name(opinfo) not in request.whole
    for test, classes, kind, variant in CHECKS:
        supported = opinfo.supported_backward_dtypes("cpu") if kind != "forward" else opinfo.supported_dtypes("cpu")
        for dtype in dtypes:
            why = _supports(opinfo, kind, variant) or (None if dtype in supported else "dtype not supported")
            why = why or _skipped(opinfo, test, classes, dtype)
            if why:
                checks.append(
                    Check(kind, variant, NOT_RUN, test=test, dtype=str(dtype).removeprefix("torch."), why=why)
                )
                continue
            checks.append(_entry_check(opinfo, (test, kind, variant, dtype), counters, request, direct[variant], at))
            if cut and checks[-1].status == FAILED and checks[-1].ours_ran:
                return _entry_row(opinfo, direct, checks, cut=True)
    return _entry_row(opinfo, direct, checks)


def _entry_check(
    opinfo: Any, check: tuple[str, str, str, Any], counters: Counters, request: CheckRequest, mine: list[str],
    at: Progress,
) -> Check:  # fmt: skip
    """One check of an OpInfo entry (``check``: test, kind, variant, dtype) and the kernels of ours it entered
    (``mine``: those of the ops the entry calls itself, when it calls any); a failure's call kept for the
    reference rerun."""
    test, kind, variant, dtype = check
    hit: set[str] = set()
    batched = request.batched
    result = _check(opinfo, kind, variant, dtype, request.max_samples, counters, hit, batched, at)
    ours = bool(hit & set(mine)) if mine else bool(hit)
    result = replace(result, test=test, ours_ran=ours, hit=tuple(sorted(hit & set(mine)) if mine else sorted(hit)[:12]))
    if result.status == FAILED and request.reference_dir:
        call = [_name(opinfo), kind, variant, result.dtype, request.max_samples, batched]
        result = replace(result, reference=_keep_call_for_reference(request.reference_dir, call))
    return result


def _entry_row(opinfo: Any, direct: dict[str, list[str]], checks: list[Check], cut: bool = False) -> Entry:
    called = tuple((variant, tuple(ops)) for variant, ops in direct.items())
    return Entry(_name(opinfo), tuple(checks), called, aten=opinfo.aten_name or opinfo.name, cut=cut)


def _name(opinfo: Any) -> str:
    return str(opinfo.name) + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


_CPU_KEYS = ("CPU", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
_LAYOUT_KEYS = ("SparseCPU", "SparseCsrCPU", "QuantizedCPU", "NestedTensorCPU", "MkldnnCPU")


def uncheckable(op: str) -> str:
    """Why no CPU float sample can reach the op's kernel here (one of a fixed list), or "".

    A random op (tag ``nondeterministic_seeded``) is checkable: every evaluation of its function is
    seeded alike (``capture.same_draws``).
    """
    import torch

    def has(key: str) -> bool:
        try:
            return bool(torch._C._dispatch_has_kernel_for_dispatch_key(op, key))
        except RuntimeError:
            return False

    # a CompositeImplicitAutograd kernel takes dense CPU inputs before any Autograd kernel does (the
    # dispatcher's order), unless a CPU or CompositeExplicitAutograd kernel is registered
    if not any(has(k) for k in _CPU_KEYS):
        if any(has(k) for k in _LAYOUT_KEYS):
            return "needs sparse / quantized / nested inputs"
        return "needs a backend this machine lacks (no CPU kernel)"
    return ""


def schemas(ops: list[str]) -> InstalledSchemas:
    """Each op's argument names in the installed torch, and why no CPU sample reaches it (None: it lacks the op)."""
    import torch

    found: list[tuple[str, InstalledSchema | None]] = []
    for op in ops:
        name, _, overload = op.partition(".")  # aten::add.Tensor
        match = [s for s in torch._C._jit_get_schemas_for_operator(name) if s.overload_name == overload]
        args = match[0].arguments if match else None
        positional = tuple(a.name for a in args or () if not a.kwarg_only)
        keywords = tuple(a.name for a in args or () if a.kwarg_only)
        found.append((op, None if args is None else InstalledSchema(positional, keywords, uncheckable(op))))
    return InstalledSchemas(tuple(found))


def reach_all(results: str, skip: set[str], timeout: int) -> None:
    """One JSON line per entry of every source: the ops its first calls reach, forward and backward."""
    import torch

    sources = sample_sources
    dtypes = [torch.float64, torch.complex128]

    def reached(entry: Any) -> Run:
        def run() -> list[Entry | ReachRow]:
            found = capture.reach(entry, dtypes)
            if not found:
                return [Entry(entry.name, error="no call for float64 or complex128")]
            return [ReachRow(entry.name, tuple(found[0]), tuple(found[1]))]

        return run

    with open(results, "a", encoding="utf-8") as out:
        run_entries(out, ((e.name, reached(e)) for e in sources.all_entries() if e.name not in skip), timeout)


def _target_records(
    entry: Any, targets: list[CaptureTarget], request: CheckRequest, counters: Counters, at: Progress | None = None
) -> list[Any]:
    """Each target op gradchecked on the arguments it received in the entry's calls, per dtype; ``at`` hears of
    each sample before it runs (``_check``)."""
    import torch

    limit = request.max_samples or 2
    checks: dict[str, list[Check]] = {t.op: [] for t in targets}
    for dtype_name in request.dtypes:
        dtype = getattr(torch, dtype_name)
        found = capture.capture(entry, dtype, {t.op for t in targets}, limit)
        for t in targets:
            rows = _captured(entry, t, found.get(t.op, []), dtype_name, counters, request, at)
            checks[t.op] += [_attributed(row, t, dtype_name) for row in rows]
    return [
        Entry(
            f"{t.op} (arguments from {entry.name})",
            tuple(c for c in checks[t.op] if c.status != NOT_RUN or c.why == "random"),
            (("function", (t.counter,)), ("inplace", ())),
            aten=t.op,
            source=entry.name,
        )
        for t in targets
    ]


def _captured(
    entry: Any, t: CaptureTarget, sets: list[Any], dtype_name: str, counters: Counters, request: CheckRequest,
    at: Progress | None = None,
) -> list[Check]:  # fmt: skip
    """The target's checks on the argument sets captured from ``entry`` (``sets``), then the entry's own check of
    its whole call (through a backward op's forward, or after a captured failure)."""
    import torch

    dtype, limit, batched = getattr(torch, dtype_name), request.max_samples or 2, request.batched
    kinds = [k for k in ["backward"] + (["forward"] if t.forward else []) if _allowed(entry, k, dtype)]
    vmap = {k for k in kinds if _vmap_ok(entry, k, request)}
    rows = []
    for row in capture.captured_checks(sets, set(t.grad), kinds, counters, t.outputs, vmap, at):
        row = replace(row, test="captured_grad" if row.kind == "backward" else "captured_forward_ad")
        if row.status == FAILED and request.reference_dir:
            row = replace(row, reference=_keep_for_reference(request.reference_dir, entry.name, t, dtype_name, row))
            capture.save_sets(row.reference, sets, set(t.grad), row.kind, t.outputs, vmap)
        rows.append(row)
    # the samples the reach map read: the one reaching the op may be a later one
    whole = max(limit, capture.REACH_CALLS)
    if entry.name in t.through_backward and hasattr(entry, "opinfo") and not entry.inplace:
        names = [a.name for a in sets[0].func._schema.arguments] if sets else None
        reaching = _double_backward_reaches(entry, dtype, t.counter, counters, whole, at)
        rows += _through_backward(entry.opinfo, dtype, whole, counters, names, batched, reaching, at)
    else:
        rows += _through_call(entry, rows, dtype, whole, counters, batched, at)
    if request.reference_dir:
        rows = [_keep_whole_call(entry, row, whole, batched, request.reference_dir) for row in rows]
    return rows


def _double_backward_reaches(
    entry: Any, dtype: Any, counter: str, counters: Counters, limit: int, at: Progress | None = None
) -> frozenset[int]:
    """The first ``limit`` of the samples the reach map read whose backward, run as a double backward runs it
    (building its graph), calls our kernel of the op (``counter``): the samples whose double backward can run
    its formulas.  The others check nothing of it, and may cost much: cumprod's OpInfo asks for full Jacobians,
    and a sample with zeros takes the twice-differentiable path of its backward, ~90,000 aten calls per sample,
    each a Python Function in the Python tier; its other samples never call ``scatter_`` there.  (The reach map
    is read under a dispatch mode, where cumprod's backward takes its tensor-subclass path, which does.)
    ``at`` hears of each sample before its backward runs (a hang in it is reported there)."""
    import torch

    found: list[int] = []
    named = str(dtype).removeprefix("torch.")
    for i, call in enumerate(entry.calls(dtype, capture.REACH_CALLS)):
        if at is not None:
            at(f"sample {i} ({named}) of the probe of {entry.name}'s double backward for {counter}")
        before, raised = counters.snapshot(), False
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs = capture._outputs(call.fn(*call.inputs))
                wrt = [x for x in call.inputs if isinstance(x, torch.Tensor) and x.requires_grad]
                if outs and wrt:
                    grads = [torch.randn_like(o) for o in outs]
                    torch.autograd.grad(outs, wrt, grads, allow_unused=True, create_graph=True)
        except Exception:  # run by the check, which says why: a raising formula fails, never goes unchecked
            raised = True
        if raised or counter in counters.entered(before):
            found.append(i)
        if len(found) >= limit:
            break
    return frozenset(found)


def _keep_whole_call(entry: Any, row: Check, whole: int, batched: bool, folder: str) -> Check:
    """A failed check of an OpInfo's whole call, described for the reference rerun."""
    if row.status != FAILED or row.test not in _WHOLE_CALL:
        return row
    call = [_name(entry.opinfo), row.kind, "function", row.dtype, whole, batched]
    return replace(row, reference=_keep_call_for_reference(folder, call))


def _attributed(row: Check, t: CaptureTarget, dtype_name: str) -> Check:
    """A check of the target's: ours when it entered our kernel of the op; a whole call's check that did not
    is no verdict on it (a failure there is another's)."""
    ours = t.counter in row.hit
    if row.status in (FAILED, PASSED) and not ours and row.test in _WHOLE_CALL:
        why = f"its samples did not enter our kernel of it (entered: {', '.join(row.hit) or 'none'})"
        row = Check(row.kind, "function", NOT_RUN, test=row.test, why=why)
    hit = (t.counter,) if ours or row.status == FAILED else ()
    return replace(row, variant="function", dtype=dtype_name, ours_ran=ours, hit=hit)


def _vmap_ok(entry: Any, kind: str, request: CheckRequest) -> bool:
    """A captured check runs its batched part unless turned off, or the entry is an OpInfo that turns it off."""
    opinfo = getattr(entry, "opinfo", None)
    if not request.batched:
        return False
    return opinfo is None or _batched(opinfo, kind, "inplace" if getattr(entry, "inplace", False) else "function")


_WHOLE_CALL = ("through_grad", "through_forward_ad", "test_fn_gradgrad", "test_fn_fwgrad_bwgrad")


def _through_call(
    entry: Any, rows: list[Check], dtype: Any, limit: int, counters: Counters, batched: bool, at: Progress | None = None
) -> list[Check]:
    """For each failed captured check, the OpInfo's own check of the whole call (its gradcheck wrapper
    keeps the inputs' invariants: a symmetric matrix stays symmetric), which enters our kernel too.

    A captured failure can be the arguments' (``reference.py`` tells); this one cannot.
    """
    if not hasattr(entry, "opinfo") or entry.inplace:
        return []
    found: list[Check] = []
    for kind in sorted({r.kind for r in rows if r.status == FAILED}):
        if not _allowed(entry, kind, dtype):
            continue
        hit: set[str] = set()
        try:
            result = _check(entry.opinfo, kind, "function", dtype, limit, counters, hit, batched, at)
        except Exception as exc:  # its samples cannot be made here (a sparse-only sample)
            result = Check(kind, "function", NOT_RUN, dtype=str(dtype).removeprefix("torch."), why=describe(exc, 200))
        test = "through_grad" if kind == "backward" else "through_forward_ad"
        # positions: the OpInfo call's inputs, not the op's arguments
        found.append(replace(result, test=test, positions=(), hit=tuple(sorted(hit))))
    return found


def _keep_for_reference(folder: str, entry: str, target: CaptureTarget, dtype: str, row: Check) -> str:
    """Where a failed captured check's arguments are kept for the reference run (``--reference``)."""
    import hashlib

    key = json.dumps([entry, target.op, dtype, row.kind])
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:24] + ".pt")


def _keep_call_for_reference(folder: str, call: list[Any]) -> str:
    """Where a failed OpInfo check of the whole call (by name or ``_WHOLE_CALL``) is described for the
    reference run: [OpInfo entry, kind, variant, dtype, samples], as ``_reference_call`` reads it."""
    import hashlib

    text = json.dumps(call)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, hashlib.sha256(text.encode()).hexdigest()[:24] + ".json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def _reference_call(path: str) -> Check:
    """The described OpInfo check again, its samples made afresh, with PyTorch's own kernels."""
    import torch

    with open(path, encoding="utf-8") as f:
        name, kind, variant, dtype, limit, *batched = json.load(f)
    entry = next(iter(sample_sources.all_entries({name})), None)
    if entry is None or not hasattr(entry, "opinfo"):
        return Check(kind, variant, NOT_RUN, dtype=dtype, why=f"no OpInfo entry {name}")
    nothing = capture._NoCounters()
    return _check(
        entry.opinfo, kind, variant, getattr(torch, dtype), limit, nothing, set(), bool(batched and batched[0])
    )


def run_references(listing: str, results: str) -> None:
    """``--reference``: each kept check again with PyTorch's own kernels (this process loads no library)."""
    with open(listing, encoding="utf-8") as f:
        request = ReferenceRequest.from_json(json.load(f))
    found: list[tuple[str, Check]] = []
    for path in request.paths:
        try:
            found.append((path, _reference_call(path) if path.endswith(".json") else capture.reference(path)))
        except Exception as exc:
            found.append((path, Check("", "function", "not run", why=describe(exc, 200))))
    with open(results, "w", encoding="utf-8") as f:
        json.dump(ReferenceAnswer(tuple(found)).to_json(), f)


# the test PyTorch runs an OpInfo's backward and forward-mode checks in, per captured check kind
_OWN_TEST = {
    "backward": ("test_fn_grad", ("TestBwdGradients", "TestGradients")),
    "forward": ("test_forward_mode_AD", ("TestFwdGradients", "TestGradients")),
}


def _allowed(entry: Any, kind: str, dtype: Any) -> bool:
    """An OpInfo's samples serve a captured check only where PyTorch's own test runs that check."""
    opinfo = getattr(entry, "opinfo", None)
    if opinfo is None:
        return True
    test, classes = _OWN_TEST[kind]
    variant = "inplace" if getattr(entry, "inplace", False) else "function"
    return _supports(opinfo, kind, variant) is None and _skipped(opinfo, test, classes, dtype) is None


def _through_backward(
    opinfo: Any, dtype: Any, limit: int, counters: Counters, arguments: list[str] | None = None, batched: bool = False,
    only: frozenset[int] | None = None, at: Progress | None = None,
) -> list[Check]:  # fmt: skip
    """The OpInfo's double backward and forward-over-reverse checks, where PyTorch's tests run them.

    ``arguments``: the backward op's argument names, to say which of its formulas a failure is at; ``only``: the
    samples to run them on (``_check``).
    """
    rows: list[Check] = []
    if only is not None and not only:  # no sample's double backward reaches the op
        return rows
    for test, classes, kind in THROUGH_BACKWARD:
        why = _supports(opinfo, kind, "function") or _skipped(opinfo, test, classes, dtype)
        if why or dtype not in opinfo.supported_backward_dtypes("cpu"):
            continue
        hit: set[str] = set()
        result = _check(opinfo, kind, "function", dtype, limit, counters, hit, batched, at, only)
        # the forward op's inputs, not the backward op's arguments
        mapped = _backward_positions(result.positions, arguments or [])
        rows.append(replace(result, test=test, hit=tuple(sorted(hit)), positions=mapped))
    return rows


def _backward_positions(forward: tuple[int, ...], arguments: list[str]) -> tuple[int, ...]:
    """A double backward's inputs (the forward op's one input, then the gradient of its output) as the
    backward op's arguments (``self`` or ``input``, then ``grad_output``); none when that is unclear."""
    own = [arguments.index(n) for n in ("self", "input") if n in arguments][:1]
    if len(forward) != 1 or not own or "grad_output" not in arguments:
        return ()
    return (own[0], arguments.index("grad_output"))


def run_targets(request: CheckRequest, counters: Counters, out: Any) -> None:
    """The request's target ops, checked on the arguments of the entries that reach them."""
    by_entry: dict[str, list[CaptureTarget]] = {}
    for t in request.targets:
        for name in t.entries:
            by_entry.setdefault(name, []).append(t)
    skip = set(request.skip)

    at = Progress(out)

    def checked(entry: Any) -> Run:
        ran = Entry(f"via {entry.name}")  # the entry's own row (the target rows name the ops)
        run: Run = batching.timed(lambda: [*_target_records(entry, by_entry[entry.name], request, counters, at), ran])
        return run

    entries = sample_sources.all_entries(set(by_entry))
    chosen = ((f"via {e.name}", checked(e)) for e in entries if f"via {e.name}" not in skip)
    run_entries(out, chosen, request.timeout, at)


def main(argv: list[str]) -> int:
    if argv[1] == "--reach":
        with open(argv[2], encoding="utf-8") as f:
            reach = ReachRequest.from_json(json.load(f))
        warnings.filterwarnings("ignore")
        reach_all(argv[3], set(reach.skip), reach.timeout)
        return 0
    if argv[1] == "--reference":
        warnings.filterwarnings("ignore")
        run_references(argv[2], argv[3])
        return 0
    if argv[1] == "--schemas":
        with open(argv[2], encoding="utf-8") as f:
            query = SchemasQuery.from_json(json.load(f))
        with open(argv[3], "w", encoding="utf-8") as f:
            json.dump(schemas(list(query.ops)).to_json(), f)
        return 0
    with open(argv[1], encoding="utf-8") as f:
        request = CheckRequest.from_json(json.load(f))
    import torch  # noqa: F401  (libtorch must be loaded before the library that links it)

    warnings.filterwarnings("ignore")
    # PyTorch prints "Overriding a previously registered kernel" here: expected, that is the point
    library = load_library(request.library)
    status = hidden_status(library)
    if status != "ok":
        print(f"vtgen-build: error: libtorch's hidden helpers could not be bound: {status}", file=sys.stderr)
        return 3
    counters = Counters(library)
    candidates = direct_candidates(counters, request)
    op_db = opinfo_import.op_db()  # without scipy's references, sample tracking quiet
    wanted = set(request.ops) if request.ops is not None else None
    skip = set(request.skip)

    with open(argv[2], "a", encoding="utf-8") as out:
        at = Progress(out)

        def checked(opinfo: Any) -> Run:
            run: Run = batching.timed(lambda: [_run_entry(opinfo, counters, request, candidates, at)])
            return run

        chosen = (
            (_name(opinfo), checked(opinfo))
            for opinfo in op_db
            if _name(opinfo) not in skip and (wanted is None or (opinfo.aten_name or opinfo.name) in wanted)
        )
        run_entries(out, chosen, request.timeout, at)  # the ops' own samples first: the cheapest verdict
        run_targets(request, counters, out)
    return 0
