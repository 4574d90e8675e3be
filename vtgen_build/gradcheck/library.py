"""Build the gradcheck library of some ops: compile, leave out what cannot link, link."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base import store
from ..base.errors import VtgenError
from ..compile import first_error
from ..emit.output_index import OutputIndex
from ..torchlib import BuildSettings, compile_objects, exported_symbols, link_library, unlinkable_roots
from ..torchlib.build import CompiledUnit, Session
from ..torchlib.hidden import STATUS_SYMBOL, HiddenLookup, binding_unit, find_hidden
from ..torchlib.symbols import demangle
from .analyses import recall, remember
from .units import PROVIDED, REGISTRAR, CutUnit, Registration, kernel_units, register_symbol, registration_unit

__all__ = ["LibraryBuild", "build_library"]

EXPORTED = ("vtgen_gradcheck_count", "vtgen_gradcheck_op", "vtgen_gradcheck_hits", STATUS_SYMBOL)


@dataclass(frozen=True)
class LibraryBuild:
    path: Path
    registered: tuple[Registration, ...]  # in counter order
    excluded: tuple[tuple[str, str], ...]  # (op, why it is not in the library)
    compiled: int  # units compiled now (the rest came from the cache)
    units: int
    linked: bool
    seconds: float
    bound: tuple[str, ...] = ()  # libtorch's hidden helpers the kept kernels call (mangled)
    extra: tuple[CompiledUnit, ...] = ()  # the compiled extra_units (a failed one is left out of the link)


def _recall(settings: BuildSettings, session: Session, kind: str, parts: Sequence[str]) -> tuple[str, store.JSON]:
    """(key, the recorded answer or None) of an analysis of torch's libraries: an artifact-cache entry
    (``artifact_key``) whose inputs are the libraries, verified by their content before use."""
    key = settings.key(kind, (), json.dumps(list(parts)))
    return key, recall(session, key, kind)


def _remember(settings: BuildSettings, session: Session, key: str, kind: str, data: store.JSON) -> None:
    remember(session, key, kind, data, settings.torch.libraries)


def _hidden_needs(
    settings: BuildSettings, session: Session, objects: Sequence[CompiledUnit], kernels: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Kernel → the mangled torch symbols it needs that no torch library exports (cached by content).

    An empty tuple: the kernel's code is in no object.
    """
    key, cached = _recall(settings, session, "hidden_needs", [*sorted(PROVIDED), *(u.digest for u in objects)])
    if isinstance(cached, dict) and all(isinstance(v, list) for v in cached.values()):
        known = {str(k): tuple(map(str, v)) for k, v in cached.items() if isinstance(v, list)}
        return {k: v for k, v in known.items() if k in set(kernels)}
    exported = exported_symbols(settings.torch.libraries)
    roots = {register_symbol(k): k for k in kernels}
    found = unlinkable_roots([u.object for u in objects if u.object is not None], roots, exported)
    needed = {k: (e.symbols, tuple(s for s in e.symbols if s not in PROVIDED)) for k, e in found.items()}
    result = {k: rest for k, (symbols, rest) in needed.items() if rest or not symbols}
    _remember(settings, session, key, "hidden_needs", {k: list(v) for k, v in result.items()})
    return result


def _lookup(settings: BuildSettings, session: Session, wanted: Sequence[str], bind: bool) -> HiddenLookup:
    """Which hidden symbols can be called in the installed libtorch (cached by the libraries' content)."""
    if not bind:
        return HiddenLookup((), tuple((s, "binding hidden helpers is off (--no-bind-hidden)") for s in wanted))
    key, data = _recall(settings, session, "hidden_lookup", wanted)
    cached = HiddenLookup.from_json(data)
    if cached is not None:
        return cached
    found = find_hidden(settings.torch.libraries, wanted)
    _remember(settings, session, key, "hidden_lookup", found.to_json())
    return found


def _unbound_reasons(needs: dict[str, tuple[str, ...]], lookup: HiddenLookup) -> dict[str, str]:
    """Kernel → why it cannot be linked: the hidden symbols it needs that cannot be bound."""
    bound = lookup.names()
    unbound = sorted({s for symbols in needs.values() for s in symbols if s not in bound})
    shown = dict(zip(unbound, demangle(unbound), strict=True))  # one c++filt for every kernel
    reasons: dict[str, str] = {}
    for kernel, symbols in needs.items():
        if not symbols:
            reasons[kernel] = "its code was not compiled"
            continue
        why = [f"{shown[s]} ({lookup.why(s) or 'not bound'})" for s in symbols if s not in bound]
        if why:
            reasons[kernel] = "needs symbols libtorch does not export: " + ", ".join(why)
    return reasons


def _compile_failures(cut: Sequence[CutUnit], units: Sequence[CompiledUnit], version: str) -> dict[str, str]:
    """Kernel → why it is left out: a unit its code needs did not compile."""
    bad: dict[str, str] = {}
    for c, u in zip(cut, units, strict=True):
        if u.object is None:
            why = f"does not compile against torch {version}: {first_error(u.diagnostics)}"
            for k in c.kernels:
                bad.setdefault(k, why)
    return bad


def _binding(settings: BuildSettings, lookup: HiddenLookup, needed: set[str], session: Session) -> list[CompiledUnit]:
    """The compiled trampolines of the hidden helpers ``needed`` (none: no unit)."""
    functions = [f for f in lookup.bound if f.mangled in needed]
    if not functions:
        return []
    unit = compile_objects(settings, [("vtgen_hidden", binding_unit(functions))], session=session)
    if unit[0].object is None:
        raise VtgenError(f"the unit binding libtorch's hidden helpers does not compile:\n{unit[0].diagnostics[:4000]}")
    return unit


def _compile_all(
    cut: Sequence[CutUnit],
    settings: BuildSettings,
    extra_units: Sequence[tuple[str, str]],
    extra_settings: BuildSettings | None,
    session: Session,
) -> tuple[list[CompiledUnit], tuple[CompiledUnit, ...]]:
    """The kernel units (cut from the generated shards: their includes precompiled) and the extra units,
    compiled (extra ones with their own settings)."""
    own = {name: extra_settings or settings for name, _ in extra_units}
    units = [(c.name, c.text) for c in cut]
    every = compile_objects(settings, [*units, *extra_units], own, session, precompile={c.name for c in cut})
    return every[: len(every) - len(extra_units)], tuple(every[len(every) - len(extra_units) :])


def build_library(
    index: OutputIndex,
    registrations: Sequence[Registration],
    settings: BuildSettings,
    bind_hidden: bool = True,
    extra_units: Sequence[tuple[str, str]] = (),
    extra_settings: BuildSettings | None = None,
    session: Session | None = None,
) -> LibraryBuild:
    """One shared library registering every op of ``registrations`` that compiles and links.

    ``extra_units`` (``(name, text)``, e.g. a checkout's FunctionsManual.cpp) are compiled with
    ``extra_settings`` (default: ``settings``) and linked in when they compile.  A kernel calling
    helpers libtorch hides that they do not define is linked to libtorch's own copies when its
    symbol table has them (``bind_hidden``); otherwise it is left out, with the reason.  ``session``:
    the run's (its file digests shared with the other analyses of torch), else one of its own.
    """
    start = time.perf_counter()
    if not registrations:
        raise VtgenError("no op with an Autograd kernel selected")
    kernels = list(dict.fromkeys(r.kernel for r in registrations))
    session = session or Session.open(settings)
    cut = kernel_units(index, kernels)
    units, extra = _compile_all(cut, settings, extra_units, extra_settings, session)
    bad_kernels = _compile_failures(cut, units, settings.torch.version)
    ok_units = [u for u in (*units, *extra) if u.object is not None]
    needs = _hidden_needs(settings, session, ok_units, [k for k in kernels if k not in bad_kernels])
    lookup = _lookup(settings, session, sorted({s for symbols in needs.values() for s in symbols}), bind_hidden)
    bad_kernels.update(_unbound_reasons(needs, lookup))
    excluded: dict[str, str] = {}
    for r in registrations:
        if r.kernel in bad_kernels:
            excluded.setdefault(r.op, bad_kernels[r.kernel])
    kept = tuple(r for r in registrations if r.op not in excluded)
    needed = {s for r in kept for s in needs.get(r.kernel, ())}
    binding = _binding(settings, lookup, needed, session)
    table = ("vtgen_registrations", registration_unit(kept))
    reg = compile_objects(settings, [("vtgen_registrar", REGISTRAR), table], session=session)
    for unit in reg:
        if unit.object is None:
            raise VtgenError(f"the registration unit {unit.name} does not compile:\n{unit.diagnostics[:4000]}")
    path, linked = link_library(settings, [*ok_units, *binding, *reg], EXPORTED, "vtgen_gradcheck", session)
    compiled = sum(u.compiled for u in (*units, *extra, *binding, *reg))
    bound = tuple(sorted(needed))
    count = len(units) + len(extra) + len(binding) + len(reg)
    seconds = time.perf_counter() - start
    return LibraryBuild(path, kept, tuple(sorted(excluded.items())), compiled, count, linked, seconds, bound, extra)
