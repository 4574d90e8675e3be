"""What an entry's calls reach, and our kernel checked on what it received (child side).

Standalone like ``child.py`` (stdlib and torch only; loaded by path).

``reach``: the aten ops (``add.Tensor``, ``elu_backward``) one call of an entry reaches below
autograd, in its forward pass and in its backward pass (a ``*_backward`` op is reached by the
backward pass of the forward op whose formula calls it).  The parent caches this per torch.

``captured_checks``: run an entry's calls (forward and backward) and keep a copy of the
arguments each target op received; then gradcheck the target op itself on them, backward and
forward-mode, differentiating the arguments its derivatives.yaml entry has formulas for.  Our
kernel of the op is proven entered by its counter; a failure names the argument, so the parent
reports it at that argument's formula.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import batching
from .rows import FAILED, NOT_RUN, PASSED, Check

__all__ = [
    "REACH_CALLS",
    "SEED",
    "Captured",
    "captured_checks",
    "is_random",
    "op_name",
    "reach",
    "reference",
    "same_draws",
    "save_sets",
]


def op_name(func: Any) -> str:
    """``sin``, ``add.Tensor``, ``mylib::my_op`` (aten's namespace left out, as registrations spell it)."""
    return str(func.name()).removeprefix("aten::")


def _mode(on_call: Callable[[Any, tuple[Any, ...], dict[str, Any]], None], keep: set[str] | None = None) -> Any:
    """Calls ``on_call`` after each aten call below autograd that succeeded (a dtype the kernel lacks
    is no sample); for the ops in ``keep`` with copies of the arguments made before the call (an
    in-place op changes its input)."""
    from torch.utils import _python_dispatch

    base: Any = _python_dispatch.TorchDispatchMode

    class Watch(base):  # type: ignore[misc]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            copied = keep is not None and op_name(func) in keep
            before = (_copy(tuple(args)), _copy(kwargs)) if copied else (tuple(args), kwargs)
            result = func(*args, **kwargs)
            on_call(func, *before)
            return result

    watch: Any = Watch
    return watch()


def _outputs(result: Any) -> list[Any]:
    import torch

    items = result if isinstance(result, (list, tuple)) else [result]
    return [t for t in items if isinstance(t, torch.Tensor) and t.requires_grad]


def _run_both(call: Any, on_call: Callable[[Any, tuple[Any, ...], dict[str, Any]], None], keep: set[str]) -> None:
    """The call's forward pass, then a backward pass of its differentiable outputs, watched."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with _mode(on_call, keep):
            result = call.fn(*call.inputs)
        outs = _outputs(result)
        wrt = [t for t in call.inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        if outs and wrt:
            grads = [torch.randn_like(o) for o in outs]
            with _mode(on_call, keep):
                torch.autograd.grad(outs, wrt, grads, allow_unused=True)


def _adder(into: set[str]) -> Callable[[Any, tuple[Any, ...], dict[str, Any]], None]:
    def add(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        into.add(op_name(func))

    return add


# How many calls of an entry the reach map reads (an OpInfo's later samples take other overloads and
# argument kinds: a Scalar overload, a second tensor list), and the time it may spend past the first.
REACH_CALLS = 8
REACH_SECONDS = 10.0


def _reach_one(call: Any, forward: set[str], backward: set[str]) -> None:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with _mode(_adder(forward)):
            result = call.fn(*call.inputs)
        outs = _outputs(result)
        wrt = [t for t in call.inputs if isinstance(t, torch.Tensor) and t.requires_grad]
        if outs and wrt:
            grads = [torch.randn_like(o) for o in outs]
            with _mode(_adder(backward)):
                torch.autograd.grad(outs, wrt, grads, allow_unused=True)


def reach(entry: Any, dtypes: list[Any]) -> tuple[list[str], list[str]] | None:
    """The ops the entry's first ``REACH_CALLS`` calls reach (forward, backward); None: it has no call here.

    The first call's failure is the entry's; a later call that fails adds nothing.
    """
    for dtype in dtypes:
        calls = iter(entry.calls(dtype, REACH_CALLS))
        call = next(calls, None)
        if call is None:
            continue
        forward: set[str] = set()
        backward: set[str] = set()
        _reach_one(call, forward, backward)
        stop = time.monotonic() + REACH_SECONDS
        for call in calls:
            if time.monotonic() > stop:
                break
            try:
                _reach_one(call, forward, backward)
            except Exception:
                continue
        return sorted(forward), sorted(backward)
    return None


@dataclass(frozen=True)
class Captured:
    func: Any  # the OpOverload
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def _copy(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


def capture(entry: Any, dtype: Any, targets: set[str], limit: int) -> dict[str, list[Captured]]:
    """Up to ``limit`` argument sets each target op received in the entry's calls."""
    found: dict[str, list[Captured]] = {}

    def keep(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        name = op_name(func)
        if name in targets and len(found.setdefault(name, [])) < limit:
            found[name].append(Captured(func, args, kwargs))

    for call in entry.calls(dtype, max(limit, REACH_CALLS)):  # as far as the reach map read
        try:
            _run_both(call, keep, targets)
        except Exception:
            continue
        if all(len(found.get(t, [])) >= limit for t in targets):
            break
    return found


def _differentiable(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


@dataclass(frozen=True)
class Prepared:
    fn: Callable[..., Any]
    inputs: tuple[Any, ...]
    positions: tuple[int, ...]  # per input, the op's positional argument it came from
    names: tuple[str, ...]  # the arguments differentiated


def prepare(captured: Captured, grad_names: set[str], outputs: Sequence[bool] | None = None) -> Prepared | None:
    """The op as a function of the arguments ``grad_names`` names (None: none is differentiable).

    ``outputs``: which of its outputs are differentiable; the function returns only those.
    """

    schema = captured.func._schema
    values: list[Any] = []
    slots: list[tuple[int, int]] = []  # (argument, element or -1) of each input
    for i, arg in enumerate(schema.arguments):
        value = captured.args[i] if i < len(captured.args) else captured.kwargs.get(arg.name)
        values.append(value)
        if arg.name not in grad_names or arg.is_out:
            continue
        if _differentiable(value):
            slots.append((i, -1))
        elif isinstance(value, (list, tuple)):
            slots += [(i, j) for j, v in enumerate(value) if _differentiable(v)]
    if not slots:
        return None
    chosen: list[Any] = [values[i] if j < 0 else values[i][j] for i, j in slots]
    inputs = tuple(t.detach().clone().requires_grad_(True) for t in chosen)
    given = len(captured.args)
    mutates = bool(schema.arguments) and schema.arguments[0].alias_info is not None
    by_keyword = [(i, a.name) for i, a in enumerate(schema.arguments) if i >= given and a.name in captured.kwargs]
    # other arguments it writes (rrelu_with_noise's noise): on copies, or a rerun would change what a Node saved
    scratch = [i for i, a in enumerate(schema.arguments) if i and a.alias_info is not None and a.alias_info.is_write]
    seeded = is_random(captured.func)

    def fn(*tensors: Any) -> Any:
        now: list[Any] = [list(v) if isinstance(v, (list, tuple)) else v for v in values]
        for (i, j), t in zip(slots, tensors, strict=True):
            if j < 0:
                now[i] = t
            else:
                now[i][j] = t
        for i in [0, *scratch] if mutates else scratch:  # a clone keeps the graph (and a dual's tangent)
            now[i] = [t.clone() for t in now[i]] if isinstance(now[i], list) else _clone(now[i])
        result = same_draws(seeded, lambda: captured.func(*now[:given], **{name: now[i] for i, name in by_keyword}))
        if mutates:  # what it changed (an in-place _foreach op returns nothing)
            return tuple(now[0]) if isinstance(now[0], list) else now[0]
        if outputs is None or not isinstance(result, (list, tuple)):
            return result
        kept = tuple(r for r, keep in zip(result, outputs, strict=False) if keep)
        return kept[0] if len(kept) == 1 else kept

    names = tuple(dict.fromkeys(schema.arguments[i].name for i, _ in slots))
    return Prepared(fn, inputs, tuple(i for i, _ in slots), names)


# The seed set before every evaluation of a random op's function (``same_draws``): gradcheck's
# perturbed evaluations then draw the mask (the noise, the samples) its first one drew.
SEED = 20240607


def is_random(func: Any) -> bool:
    """The op draws from the generator (tag ``nondeterministic_seeded``: dropout, rrelu_with_noise, normal)."""
    import torch

    return torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())


def same_draws(seeded: bool, call: Callable[[], Any]) -> Any:
    """``call()``; when ``seeded``, with the generator set to ``SEED`` first (and restored after)."""
    import torch

    if not seeded:
        return call()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return call()


def _clone(value: Any) -> Any:
    return value.clone() if hasattr(value, "clone") else value


def _double(prepared: Prepared) -> bool:
    """Its floating outputs are finite float64 / complex128: a bfloat16 result, or a sample outside
    the op's domain (log1p of x < -1), cannot be gradchecked."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = prepared.fn(*prepared.inputs)
    except Exception:
        return True  # the check itself will report it
    items = result if isinstance(result, (list, tuple)) else [result]
    wide = (torch.float64, torch.complex128)
    floats = [t for t in items if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())]
    return all(t.dtype in wide and bool(torch.isfinite(t.detach()).all()) for t in floats)


def _gradcheck(prepared: Prepared, kind: str, batched: bool) -> None:
    """One check; ``batched``: with its batched (vmap) part (``batching.py``)."""
    with warnings.catch_warnings():  # e.g. a deprecation torch itself triggers: not the formula's fault
        warnings.simplefilter("ignore")
        locate = (lambda: batching.input_of(prepared.fn, prepared.inputs)) if kind == "backward" else None
        batching.run_batched(lambda on: _gradcheck_quiet(prepared, kind, on), batched, locate)


def _gradcheck_quiet(prepared: Prepared, kind: str, batched: bool) -> None:
    import torch

    common = {"fast_mode": True, "check_undefined_grad": False}
    if kind == "backward":
        torch.autograd.gradcheck(
            prepared.fn, prepared.inputs, check_grad_dtypes=True, check_batched_grad=batched, **common
        )
    else:
        torch.autograd.gradcheck(
            prepared.fn,
            prepared.inputs,
            check_forward_ad=True,
            check_backward_ad=False,
            check_batched_grad=False,
            check_batched_forward_grad=batched,
            **common,
        )


def captured_checks(
    sets: list[Captured],
    grad_names: set[str],
    kinds: list[str],
    counters: Any,
    outputs: Sequence[bool] | None = None,
    batched: set[str] | frozenset[str] = frozenset(),
    at: Callable[[str], None] | None = None,
) -> list[Check]:
    """Per kind, one check over the captured argument sets: passed, failed (where, why) or not run.

    ``counters`` (``child.Counters``) tells which of our kernels each gradcheck entered; ``batched``:
    the kinds whose checks run their batched (vmap) part too; ``at`` hears of each set before it is
    checked (``child_loop.Progress``: a hang in it is reported there).
    """

    rows: list[Check] = []
    for kind in kinds:
        hit: set[str] = set()
        differentiated: set[str] = set()
        row = Check(kind, "function", NOT_RUN, why="no argument set with a differentiable input")
        for n, captured in enumerate(sets):
            # vmap refuses a random op's forward (its batched forward check): only its backward is batched
            vmap = kind in batched and not (kind == "forward" and is_random(captured.func))
            prepared = prepare(captured, grad_names, outputs)
            if prepared is None or not _double(prepared):
                continue
            if at is not None:
                at(f"argument set {n} of the captured {kind} check of {op_name(captured.func)}")
            before = counters.snapshot()
            try:
                _gradcheck(prepared, kind, vmap)
            except Exception as exc:
                hit |= counters.entered(before)
                message = " ".join(str(exc).split())[:600] or type(exc).__name__
                positions = tuple(prepared.positions)
                row = Check(kind, "function", FAILED, sample=n, message=message, positions=positions)
                row = batching.failed_by(row, exc)
                break
            hit |= counters.entered(before)
            differentiated.update(prepared.names)
            row = Check(kind, "function", PASSED, samples=n + 1, inputs=tuple(sorted(differentiated)))
        rows.append(replace(row, hit=tuple(sorted(hit))))
    return rows


class _NoCounters:
    """PyTorch's own kernels: nothing of ours to count."""

    def snapshot(self) -> list[int]:
        return []

    def entered(self, before: list[int]) -> set[str]:
        return set()


def save_sets(
    path: str,
    sets: list[Captured],
    grad_names: set[str],
    kind: str,
    outputs: Sequence[bool] | None,
    batched: set[str] | frozenset[str] = frozenset(),
) -> None:
    """Keep a failed captured check's argument sets for the reference run (``reference``)."""
    import torch

    rows = [(op_name(c.func), c.args, c.kwargs) for c in sets]
    kept = None if outputs is None else list(outputs)
    saved = {"sets": rows, "grad": sorted(grad_names), "kind": kind, "outputs": kept, "batched": sorted(batched)}
    torch.save(saved, path)


def _overload(torch: Any, name: str) -> Any:
    namespace, _, rest = name.rpartition("::")
    op, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace or "aten"), op), overload or "default")


def reference(path: str) -> Check:
    """The saved check run again with PyTorch's own kernels (a process that did not load our library).

    A check that fails here too fails for the arguments (a symmetric matrix gradchecked as a general
    one, statistics held fixed that the formula differentiates), not for our formula.
    """
    import torch

    saved = torch.load(path, weights_only=False)
    sets = [Captured(_overload(torch, name), tuple(args), dict(kwargs)) for name, args, kwargs in saved["sets"]]
    batched = set(saved.get("batched", []))
    rows = captured_checks(sets, set(saved["grad"]), [saved["kind"]], _NoCounters(), saved["outputs"], batched)
    return rows[0]
