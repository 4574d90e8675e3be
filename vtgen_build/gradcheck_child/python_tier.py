"""The Python tier of ``check --gradcheck``, child side; standalone (stdlib and torch only).

    python launch.py python_tier REQUEST.json RESULTS.jsonl [TORCH.json]

The parent translates PyTorch's own formulas of the selected entries to Python (one module text per
aten overload, the op library's Python autograd form: an ``autograd.Function`` whose forward runs the
op below autograd).  Here each text is run with ``torch.library.Library`` standing in as a recorder,
and the Autograd kernel it would register is installed for the overload's ``AutogradCPU`` key (behind
a counter, so that a check knows our kernel ran): the installed torch then runs our translation of
the formulas instead of its compiled ones.  Nothing is compiled.

The checks are the schema-sample checks (``schema_child._check``: backward, double backward and
forward-mode gradcheck, float64 and complex128, function and in-place variants; the float64 backward
of the function first) and the adjoint test (``adjoint_gap``); an op's checks end at its first gradient
mismatch unless the request says otherwise.  A failed check is run again with torch's own kernels (our registrations
removed): a failure they share is the sample's, not the formula's.

The process is started before the request exists, so that importing torch overlaps the parent's
planning: it waits for REQUEST.json (written atomically) and ends if the parent goes away.  Once torch is
imported it says which torch that is in TORCH.json (the fields of ``torchlib/probe.py``): the parent keys the
compiled tier's cached reach map by it, with no process of its own to ask.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import time
import types
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from . import python_tier_opinfo, python_tier_reach, schema_child
from .batching import timed
from .child_loop import Counters, Progress, Run, describe, run_entries
from .cpp_calls import CppTorch, scalar
from .protocol import OpSamples, TierEntry, TierModule, TierRequest, TierStart
from .rows import FAILED, NOT_RUN, PASSED, Check, Entry

_MISMATCH = re.compile(r"Jacobian (computed with forward mode )?mismatch|adjoint mismatch|batched grad", re.IGNORECASE)
KEY = "AutogradCPU"  # the key our kernels take: ahead of torch's own Autograd kernel for dense CPU tensors
ADJOINT = "adjoint"
AGREE = "agree"  # our values against torch's own (the unedited yaml only: the helpers' proof, coverage)
_FORMULAS_PACKAGE = "_vtgen_library_formulas"  # the package an op library's formulas module is imported from
_WAIT = 0.01  # seconds between looks for the request
_RTOL, _ATOL = 1e-7, 1e-10  # the adjoint identity in float64/complex128: both sides are exact up to rounding


class _Recorder:
    """Stands in for ``torch.library.Library`` while a module text runs: keeps what it registers."""

    def __init__(self, namespace: str, kind: str, *rest: Any) -> None:
        self.namespace = namespace
        self.impls: list[tuple[str, Any]] = []

    def impl(self, name: str, fn: Any, key: str = "", **kwargs: Any) -> None:
        if key == "Autograd":  # an op library's module registers vmap rules too: not formulas, left out
            self.impls.append((name, fn))


class PyCounters(Counters):
    """Calls of each installed kernel (``child_loop.Counters``, counted in Python: no library to ask)."""

    def __init__(self) -> None:  # no library: Counters' own state is unused
        self.ops: list[str] = []
        self.hits: dict[str, int] = {}
        self.live: dict[str, int] = {}  # the calls that could use the kernel's formulas (``gradients_in``)

    def wrap(self, op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        if op not in self.hits:  # a scoped kernel is installed again for each of its checks: counted on
            self.ops.append(op)
            self.hits[op] = self.live[op] = 0

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.hits[op] += 1
            self.live[op] += gradients_in(args, kwargs)
            return fn(*args, **kwargs)

        return counted

    def snapshot(self) -> list[int]:
        return [self.hits[op] for op in self.ops]

    def entered(self, before: list[int]) -> set[str]:
        return {op for op, b, a in zip(self.ops, before, self.snapshot(), strict=True) if a > b}

    def live_snapshot(self) -> list[int]:
        return [self.live[op] for op in self.ops]

    def live_entered(self, before: list[int]) -> set[str]:
        """The kernels called since ``before`` with gradients flowing through them: their formulas could run."""
        return {op for op, b, a in zip(self.ops, before, self.live_snapshot(), strict=True) if a > b}


def gradients_in(args: Any, kwargs: Any) -> bool:
    """A call can run the kernel's formulas: a tensor input that requires grad with grad mode on (its backward
    formulas), or one with a forward-AD tangent (its forward formula).  Tensors in lists are not looked at."""
    import torch

    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return True
    forward_ad: Any = torch.autograd.forward_ad
    return any(forward_ad.unpack_dual(t).tangent is not None for t in tensors)


def _wait_for(path: str) -> TierRequest:
    parent = os.getppid()
    while not os.path.exists(path):
        if os.getppid() != parent:
            raise SystemExit(4)  # the parent went away
        time.sleep(_WAIT)
    with open(path, encoding="utf-8") as f:
        return TierRequest.from_json(json.load(f))


def _recorded(torch: Any, op: str, text: str, package: str) -> list[tuple[str, str, Any]]:
    """Run a module text with the recorder as ``torch.library.Library``; what it registers (namespace, name,
    kernel).  ``package``: where the text's relative import of its formulas module looks."""
    recorders: list[_Recorder] = []

    def record(namespace: str, kind: str, *rest: Any) -> _Recorder:
        recorders.append(_Recorder(namespace, kind, *rest))
        return recorders[-1]

    code = compile(text, f"<python tier: {op}>", "exec")
    scope = {"__name__": f"{package}._tier", "__package__": package}
    real = torch.library.Library
    torch.library.Library = record
    try:
        exec(code, scope)
    finally:
        torch.library.Library = real
    scope["torch"] = CppTorch(torch)  # type: ignore[assignment]  # the formulas' calls bound as C++ binds them
    return [(r.namespace, name, fn) for r in recorders for name, fn in r.impls]


_WRAPPED = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


_SCALARS = ("Scalar", "Scalar?", "number", "number?")  # the JIT schema spells Scalar "number"


def _schema(torch: Any, namespace: str, name: str) -> Any:
    packet, _, overload = name.partition(".")
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload or "default")._schema


def _as_tensors(torch: Any, namespace: str, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A Python number where the schema has a Tensor (a C++ wrapped number: ``x * 2.0``) reaches a Python
    kernel as the number; the formulas read it as a tensor (``other.scalar_type()``): a 0-dim tensor of the
    dtype the op computes in, so the forward's result keeps its dtype.  A ``Scalar`` gets ``conj()``
    (``cpp_calls.scalar``), a left-out one too: its schema default is passed (``alpha=1``)."""
    arguments = list(enumerate(_schema(torch, namespace, name).arguments))
    kinds = {a.name: "tensor" if str(a.type) == "Tensor" else "scalar" for _, a in arguments
             if str(a.type) == "Tensor" or str(a.type) in _SCALARS}  # fmt: skip
    defaults = [(i, a.name, a.default_value) for i, a in arguments
                if str(a.type) in _SCALARS and a.default_value is not None]  # fmt: skip
    names = [a.name for _, a in arguments]

    def convert(key: str, value: Any, like: Any) -> Any:
        kind = kinds.get(key)
        if kind == "scalar":
            return scalar(value)
        if kind != "tensor" or isinstance(value, torch.Tensor) or type(value) not in _WRAPPED:
            return value
        dtype = torch.result_type(like, value) if like is not None else getattr(torch, _WRAPPED[type(value)])
        return torch.scalar_tensor(value, dtype=dtype)

    def kernel(*args: Any, **kwargs: Any) -> Any:
        like = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        args = tuple(convert(names[i] if i < len(names) else "", a, like) for i, a in enumerate(args))
        kwargs = {k: convert(k, v, like) for k, v in kwargs.items()}
        left = {n: scalar(v) for i, n, v in defaults if i >= len(args) and n not in kwargs}
        return fn(*args, **kwargs, **left)

    return kernel


class Scoped:
    """The view ops' kernels, installed only while their own checks run (``python_tier.py`` in the parent
    says why): ``around(ops, run)`` runs ``run`` with the kernels of those of ``ops`` installed."""

    def __init__(self, torch: Any, modules: Sequence[TierModule], counters: PyCounters, package: str) -> None:
        self.torch, self.counters, self.package = torch, counters, package
        self.modules = {m.op: m for m in modules}
        for op in self.modules:  # counted from the start, as the kernels installed for the whole run are
            counters.wrap(op, lambda *args, **kwargs: None)

    def around(self, ops: Any, run: Callable[[], Any]) -> Callable[[], Any]:
        mine = [self.modules[op] for op in ops if op in self.modules]
        if not mine:
            return run

        def scoped() -> Any:
            libs, _ = install(self.torch, mine, self.counters, self.package)
            try:
                return run()
            finally:
                for lib in libs:
                    lib._destroy()

        return scoped


def install(
    torch: Any, modules: Sequence[TierModule], counters: PyCounters, package: str
) -> tuple[list[Any], dict[str, str]]:
    """Each module's kernels as the AutogradCPU kernels of their overloads (in the namespace each module
    registers in: aten, or an op library's); op -> why a module could not.  ``package``: where the modules'
    formulas module is (the child's own helpers for PyTorch's yaml, an op library's module otherwise)."""
    libs: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for m in modules:
        try:
            for namespace, name, fn in _recorded(torch, m.op, m.text, package):
                if namespace not in libs:
                    libs[namespace] = torch.library.Library(namespace, "IMPL")
                libs[namespace].impl(name, counters.wrap(m.op, _as_tensors(torch, namespace, name, fn)), KEY)
        except Exception as exc:
            failed[m.op] = describe(exc)
    return list(libs.values()), failed


def _library(request: TierRequest) -> str:
    """An op library's request: load it (its ops and forward kernels; its own Autograd kernels are replaced by
    ours) and make its formulas module importable as the modules import it; the package they import from."""
    schema_child.load(request.library or "")
    formulas = request.formulas
    if not formulas:
        return str(__package__)
    package = types.ModuleType(_FORMULAS_PACKAGE)
    package.__path__ = [os.path.dirname(os.path.abspath(formulas))]
    sys.modules[_FORMULAS_PACKAGE] = package
    return _FORMULAS_PACKAGE


def _dot(torch: Any, a: Any, b: Any) -> float:
    """The real inner product Re(sum(conj(a) * b)): the one PyTorch's complex gradients are adjoint under."""
    if a is None or b is None:
        return 0.0
    product = (a.conj() * b).sum() if (a.is_complex() or b.is_complex()) else (a * b).sum()
    return float(product.real if product.is_complex() else product)


def _outputs(out: Any) -> tuple[Any, ...]:
    return out if isinstance(out, tuple) else (out,)


def adjoint_gap(torch: Any, call: Any) -> tuple[float, float, float]:
    """<J·u, v> (forward mode) and <u, Jᵀ·v> (backward mode) for random u, v; and their scale.

    One forward-AD call and one backward call through the op: finite differences play no part.  The duals
    carry copies of u: a forward formula may write its input's tangent in place (``at::_index_put_impl_(self_t,
    ...)``), which must not change the u of the inner product."""
    fw = torch.autograd.forward_ad
    xs = call.inputs()
    us = [torch.randn_like(x) for x in xs]
    with fw.dual_level():
        duals = [fw.make_dual(x.detach(), u.clone()) for x, u in zip(xs, us, strict=True)]
        unpacked = [fw.unpack_dual(o) for o in _outputs(call(*duals))]
    vs = [torch.randn_like(p.primal) for p in unpacked]
    outs = _outputs(call(*xs))
    used = [(o, v) for o, v in zip(outs, vs, strict=True) if o.requires_grad]
    grads = torch.autograd.grad([o for o, _ in used], xs, [v for _, v in used], allow_unused=True) if used else ()
    left = [_dot(torch, v, p.tangent) for v, p in zip(vs, unpacked, strict=True)]
    right = [_dot(torch, g, u) for g, u in zip(grads, us, strict=False)]
    scale = sum(abs(t) for t in left) + sum(abs(t) for t in right)
    return sum(left), sum(right), scale


def _op_accepts(torch: Any, call: Any) -> bool:
    """Does the op itself take the sample (its forward, below autograd, does not raise)?  A schema sample
    the op refuses (a non-square matrix for a linear-algebra op) tests no formula."""
    try:
        with torch.no_grad():
            call(*call.inputs())
    except Exception:
        return False
    return True


def _adjoint_check(torch: Any, entry: OpSamples, dtype: Any, at: Progress, counters: PyCounters) -> Check:
    fn = schema_child._op(torch, entry.namespace, entry.op)
    ran, hit, named = 0, False, str(dtype).removeprefix("torch.")
    found = Check(ADJOINT, "function", NOT_RUN, dtype=named)
    for i, sample in enumerate(entry.samples):
        at(f"sample {i} ({named}) of the adjoint test of {entry.op}")
        args = schema_child.make(torch, sample, dtype, seed=i)
        call = schema_child.Call(torch, fn, args, [], entry.outputs, entry.random)
        if not call.slots or not _op_accepts(torch, call):
            continue
        try:
            with torch.no_grad():
                call(*call.inputs())
        except Exception as exc:  # the op itself refuses the sample (float indices): no formula of ours ran
            return replace(found, why=f"the op rejects the sample: {describe(exc, 300)}")
        before = counters.snapshot()
        try:
            torch.manual_seed(1000 + i)
            left, right, scale = adjoint_gap(torch, call)
        except Exception as exc:
            return replace(found, why=f"raised: {describe(exc, 300)}")
        hit = hit or entry.op in counters.entered(before)
        if abs(left - right) > _ATOL + _RTOL * scale:
            message = (
                f"adjoint mismatch: <J·u, v> = {left!r} (the forward formula) but <u, Jᵀ·v> = {right!r} "
                "(the backward formulas), for random u, v (no finite differences)"
            )
            positions = tuple(entry.position(n) for n in call.names)
            return replace(found, status=FAILED, sample=i, message=message, positions=positions,
                           ours_ran=entry.op in counters.entered(before), hit=(entry.op,))  # fmt: skip
        ran += 1
    if not ran:
        return replace(found, why="no usable sample")
    return replace(found, status=PASSED, samples=ran, ours_ran=hit, hit=(entry.op,) if hit else ())


def adjoint_rows(torch: Any, entry: OpSamples, at: Progress, counters: PyCounters) -> list[Check]:
    return [
        replace(_adjoint_check(torch, entry, getattr(torch, name), at, counters), test="adjoint")
        for name in entry.dtypes
    ]


def _order(entry: OpSamples, kinds: set[str]) -> list[tuple[str, str, str]]:
    """(kind, variant, dtype) in the order they run: the cheapest verdict first (float64 backward of the
    function, whose imports the others share), complex128 and the in-place variant after."""
    variants = ["function", *(["inplace"] if entry.inplace else [])]
    found = []
    for dtype in sorted(entry.dtypes, key=lambda d: d != "float64"):
        for variant in variants:
            found += [(k, variant, dtype) for k in ("backward", "gradgrad", ADJOINT, "forward") if k in kinds]
    return [c for c in found if c[0] != ADJOINT or c[1] == "function"]


def _one(torch: Any, item: TierEntry, check: tuple[str, str, str], counters: Any, at: Progress,
         batched: bool) -> Check:  # fmt: skip
    kind, variant, name = check
    entry, dtype, test = item.plan, getattr(torch, name), f"python_{kind}"
    if kind == ADJOINT:
        if not item.adjoint:
            why = "no explicit forward formula beside the backward ones"
            return Check(kind, variant, NOT_RUN, test=test, dtype=name, why=why)
        return replace(_adjoint_check(torch, entry, dtype, at, counters), test=test, variant=variant)
    if kind == "forward" and not entry.forward:
        return Check(kind, variant, NOT_RUN, test=test, dtype=name, why="no forward formula")
    return replace(schema_child._check(torch, entry, kind, variant, dtype, counters, at, batched), test=test)


def _mismatch(row: Check) -> bool:
    return row.status == FAILED and row.ours_ran and bool(_MISMATCH.search(row.message))


def run_entry(torch: Any, item: TierEntry, counters: PyCounters, at: Progress, request: TierRequest) -> Entry:
    """One op's checks in ``_order``; with ``first_failure``, none after the first gradient mismatch."""
    entry = item.plan
    checks: list[Check] = []
    for check in _order(entry, set(request.kinds)):
        before = counters.live_snapshot()
        row = _one(torch, item, check, counters, at, request.batched)
        want = entry.op if check[1] == "function" else entry.inplace
        others = sorted(counters.live_entered(before) - {want})  # their formulas ran too: the failure may be theirs
        checks.append(replace(row, others=tuple(others)) if row.status == FAILED and others else row)
        if request.first_failure and _mismatch(checks[-1]):
            break
    inplace = (entry.inplace,) if entry.inplace else ()
    direct = (("function", (entry.op,)), ("inplace", inplace))
    return Entry(f"{entry.op} (python tier)", tuple(checks), direct, aten=entry.op)


def _reference(torch: Any, rows: list[Entry], items: dict[str, TierEntry], request: TierRequest) -> list[Entry]:
    """Each failed check again with torch's own kernels (ours are removed by now): shared, it is not ours."""
    at = Progress(io.StringIO())

    def judged(item: TierEntry | None, c: Check) -> Check:
        if item is None or c.status != FAILED or c.kind in (ADJOINT, AGREE):
            return c
        theirs = _one(torch, item, (c.kind, c.variant, c.dtype), None, at, request.batched)
        if theirs.status != FAILED:
            return c
        return replace(c, status=NOT_RUN, why=f"torch's own kernels fail it too: {theirs.message[:200]}")

    return [row.with_checks(judged(items.get(row.aten), c) for c in row.checks) for row in rows]


# torch's own lazy imports on a first gradcheck (autograd.grad, then make_dual): paid while the parent plans,
# one at a time, none once the request is there.  Not dynamo (a complex forward-mode check imports it): it
# takes longer than the parent plans, and a wrong backward formula answers without it
_PREWARM = ("torch.fx.experimental.symbolic_shapes", "torch._decomp.decompositions_for_jvp")


def _prewarm(request: str) -> None:
    import importlib

    for module in _PREWARM:
        if os.path.exists(request):
            return
        try:
            importlib.import_module(module)
        except Exception:  # only a head start: the check imports it again if it needs it
            continue


def _say_torch(torch: Any, path: str) -> None:
    """Which torch this process imported, as the parent's torch probe describes one (written atomically)."""
    root = os.path.dirname(torch.__file__)
    include = os.path.join(root, "include")
    said = {"version": torch.__version__, "root": root, "lib_dir": os.path.join(root, "lib"),
            "include_dirs": [include, os.path.join(include, "torch", "csrc", "api", "include")],
            "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI)}  # fmt: skip
    with open(f"{path}.tmp", "w", encoding="utf-8") as f:
        f.write(json.dumps(said) + "\n")
    os.replace(f"{path}.tmp", path)


def main(argv: list[str]) -> int:
    import torch

    warnings.filterwarnings("ignore")
    if len(argv) > 3:
        _say_torch(torch, argv[3])
    _prewarm(argv[1])
    request = _wait_for(argv[1])
    counters = PyCounters()
    package = _library(request) if request.library else str(__package__)
    views = set(request.scoped)
    libs, failed = install(torch, [m for m in request.modules if m.op not in views], counters, package)
    scoped = Scoped(torch, [m for m in request.modules if m.op in views], counters, package)
    failed.update(_installable(torch, scoped, package))
    items = {i.plan.op: i for i in request.entries}
    with open(argv[2], "a", encoding="utf-8") as out:
        at = Progress(out)
        out.write(json.dumps(TierStart(tuple(sorted(set(counters.ops))), tuple(failed.items())).to_json()) + "\n")
        ours = {op: _values(torch, item, scoped) for op, item in items.items()} if AGREE in request.kinds else {}

        def checked(item: TierEntry) -> Run:
            return timed(scoped.around(_own_ops(item), lambda: [run_entry(torch, item, counters, at, request)]))

        held = _Held()
        chosen = ((f"{op} (python tier)", checked(item)) for op, item in items.items())
        run_entries(held, chosen, request.timeout, at)
        rows = held.rows()
        opinfo = _opinfo_rows(rows, request, counters, at, scoped)
        captured = _captured_rows(rows + opinfo, request, counters, at, scoped)
        for lib in libs:
            lib._destroy()  # torch's own kernels from here on
        if not request.library:  # an op library's own compiled autograd is no independent reference
            rows = _reference(torch, rows, items, request)
        rows += python_tier_opinfo.reference(opinfo, request) + python_tier_reach.reference(captured, request)
        rows = [
            r.with_checks([*r.checks, agreement(torch, ours[r.aten], items[r.aten])]) if r.aten in ours else r
            for r in rows
        ]
        out.write("".join(json.dumps(r.to_json()) + "\n" for r in rows))
    sys.stderr.flush()
    os._exit(0)  # the results are written: torch's teardown at exit (a second or two) is no one's wait


def _values(torch: Any, item: TierEntry, scoped: Scoped) -> list[Any]:
    """``vjp_values`` of an entry through our kernels (a view op's installed for it)."""
    found: list[Any] = scoped.around(_own_ops(item), lambda: vjp_values(torch, item.plan))()
    return found


def _own_ops(item: TierEntry) -> list[str]:
    """An entry's ops: the function and its in-place variant."""
    return [item.plan.op, *([item.plan.inplace] if item.plan.inplace else [])]


def _installable(torch: Any, scoped: Scoped, package: str) -> dict[str, str]:
    """The scoped modules that cannot be installed (installed once and removed: no kernel of theirs stays)."""
    libs, failed = install(torch, list(scoped.modules.values()), PyCounters(), package)
    for lib in libs:
        lib._destroy()
    return failed


def _family_ops(request: TierRequest, name: str) -> list[str]:
    """The installed ops an OpInfo entry named ``name`` (``transpose``, ``split.list_args``) is for."""
    return [op for op, family, _ in request.variants if name == family or name.startswith(family + ".")]


def _opinfo_rows(rows: list[Entry], request: TierRequest, counters: PyCounters, at: Progress, scoped: Scoped
                 ) -> list[Entry]:  # fmt: skip
    """The OpInfo checks (``python_tier_opinfo``) of the families whose schema samples did not already fail
    (``first_failure``: their verdict is in); none failed otherwise: PyTorch's test suite is not imported."""
    done = _failed_families(rows, request)
    families = {family for _, family, _ in request.variants}
    if not request.opinfo or families <= done:
        return []
    held = _Held()
    asked = replace(request, variants=tuple(v for v in request.variants if v[1] not in done))
    chosen = [(name, scoped.around(_family_ops(asked, name), run))
              for name, run in python_tier_opinfo.entries(asked, counters, at)]  # fmt: skip
    run_entries(held, chosen, request.timeout, at)
    return held.rows()


def _captured_rows(rows: list[Entry], request: TierRequest, counters: PyCounters, at: Progress, scoped: Scoped
                   ) -> list[Entry]:  # fmt: skip
    """The captured checks (``python_tier_reach``) of the targets no check so far judged, but for the families
    whose checks already failed (``first_failure``: their verdict is in, as for the OpInfo checks; a captured
    check of ``sin_`` after ``sin``'s failed would cost seconds to say it again)."""
    done = _failed_families(rows, request)
    family = {op: fam for op, fam, _ in request.variants}
    asked = replace(request, targets=tuple(t for t in request.targets if family.get(t.op) not in done))
    reaching = python_tier_reach.entries(asked, rows, counters, at)
    chosen = [(name, scoped.around(ops, run)) for name, ops, run in reaching]
    if not chosen:
        return []
    held = _Held()
    run_entries(held, chosen, request.timeout, at)
    return held.rows()


def _failed_families(rows: list[Entry], request: TierRequest) -> set[str]:
    """With ``first_failure``, the families of the ops a check of ``rows`` found a gradient mismatch in."""
    if not request.first_failure:
        return set()
    failed = {r.aten for r in rows if any(_mismatch(c) for c in r.checks)}
    return {family for op, family, _ in request.variants if op in failed}


class _Held(io.StringIO):
    """The entry loop's output, held: the rows are written after the reference reruns judged them."""

    def rows(self) -> list[Entry]:
        found = (json.loads(line) for line in self.getvalue().splitlines() if line)
        return [Entry.from_json(r) for r in found if isinstance(r, dict) and "entry" in r]


def vjp_values(torch: Any, entry: OpSamples) -> list[Any]:
    """The backward formulas' values (Jᵀ·v) and the forward ones' (J·u) on the entry's samples, float64,
    for random u, v of fixed seeds: the same call with torch's own kernels must give the same numbers
    (``agreement``) when the yaml is the installed torch's."""
    try:
        fn = schema_child._op(torch, entry.namespace, entry.op)
    except Exception as exc:  # no overload of that name on this torch: no values to compare
        return [describe(exc, 200)]
    found: list[Any] = []
    for i, sample in enumerate(entry.samples):
        try:
            call = schema_child.Call(
                torch, fn, schema_child.make(torch, sample, torch.float64, seed=i), [], entry.outputs
            )
            if not call.slots:
                continue
            torch.manual_seed(2000 + i)
            left, right, _ = adjoint_gap(torch, call) if entry.forward else (0.0, 0.0, 0.0)
            xs = call.inputs()
            outs = [o for o in _outputs(call(*xs)) if o.requires_grad]
            vs = [torch.randn_like(o) for o in outs]
            grads = torch.autograd.grad(outs, xs, vs, allow_unused=True) if outs else ()
            found.append([left, right, *(None if g is None else g.detach() for g in grads)])
        except Exception as exc:
            found.append(describe(exc, 200))
    return found


def agreement(torch: Any, ours: list[Any], item: TierEntry) -> Check:
    """Our values against torch's own on the same samples (``vjp_values``): a check of the translation."""
    theirs = vjp_values(torch, item.plan)
    row = Check(AGREE, "function", NOT_RUN, test="agree", dtype="float64")
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if isinstance(a, str) or isinstance(b, str):
            if isinstance(a, str) and not isinstance(b, str):
                return replace(row, why=f"raised: {a}")
            continue
        if not all(_close(torch, x, y) for x, y in zip(a, b, strict=True)):
            message = "the translated formulas' values differ from the installed torch's"
            return replace(row, status=FAILED, sample=i, message=message)
    return replace(row, status=PASSED, samples=len(ours), ours_ran=True, hit=(item.plan.op,))


def _close(torch: Any, x: Any, y: Any) -> bool:
    if x is None or y is None:
        return (x is None or not bool(x.any())) and (y is None or not bool(y.any()))
    if isinstance(x, float):
        return bool((x != x and y != y) or abs(x - y) <= 1e-9 + 1e-6 * abs(y))  # NaN on both sides: the same
    return bool(torch.allclose(x, y, rtol=1e-6, atol=1e-9, equal_nan=True))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
