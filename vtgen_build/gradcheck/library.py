"""Build the gradcheck library of some ops: compile, leave out what cannot link, link."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import store
from ..check_index import OutputIndex
from ..errors import VtgenError
from ..torchlib import BuildSettings, compile_objects, exported_symbols, link_library, unlinkable_roots
from ..torchlib.build import CompiledUnit
from .units import Registration, kernel_units, register_symbol, registration_unit

__all__ = ["LibraryBuild", "build_library"]

EXPORTED = ("vtgen_gradcheck_count", "vtgen_gradcheck_op", "vtgen_gradcheck_hits")


@dataclass(frozen=True)
class LibraryBuild:
    path: Path
    registered: tuple[Registration, ...]  # in counter order
    excluded: tuple[tuple[str, str], ...]  # (op, why it is not in the library)
    compiled: int  # units compiled now (the rest came from the cache)
    units: int
    linked: bool
    seconds: float
    extra: tuple[CompiledUnit, ...] = ()  # the compiled extra_units (a failed one is left out of the link)


def _first_error(diagnostics: str) -> str:
    lines = [line for line in diagnostics.splitlines() if "error:" in line]
    return (lines or diagnostics.splitlines()[:1] or ["(no output)"])[0].strip()


def _unlinkable(settings: BuildSettings, objects: Sequence[CompiledUnit], kernels: Sequence[str]) -> dict[str, str]:
    """Kernel → the hidden torch symbols it needs, cached by the objects' digests."""
    libs = settings.torch.libraries
    key = hashlib.sha256(
        json.dumps(
            [[str(p), p.stat().st_size, p.stat().st_mtime_ns] for p in libs] + [u.digest for u in objects]
        ).encode()
    ).hexdigest()[:24]
    record = settings.cache_dir / "analysis" / f"{key}.json"
    cached = store.read(record, "unlinkable")
    if isinstance(cached, dict) and all(isinstance(v, str) for v in cached.values()):
        known = {str(k): str(v) for k, v in cached.items()}
        if all(k in known or k not in kernels for k in known):
            return {k: v for k, v in known.items() if k in set(kernels)}
    exported = exported_symbols(libs)
    roots = {register_symbol(k): k for k in kernels}
    found = unlinkable_roots([u.object for u in objects if u.object is not None], roots, exported)
    result = {k: ", ".join(e.missing) if e.missing else "its code was not compiled" for k, e in found.items()}
    record.parent.mkdir(parents=True, exist_ok=True)
    store.write(record, "unlinkable", dict(result))
    return result


def build_library(
    index: OutputIndex,
    registrations: Sequence[Registration],
    settings: BuildSettings,
    extra_units: Sequence[tuple[str, str]] = (),
    extra_settings: BuildSettings | None = None,
) -> LibraryBuild:
    """One shared library registering every op of ``registrations`` that compiles and links.

    ``extra_units`` (``(name, text)``, e.g. a checkout's FunctionsManual.cpp) are compiled with
    ``extra_settings`` (default: ``settings``) and linked in when they compile.
    """
    start = time.perf_counter()
    if not registrations:
        raise VtgenError("no op with an Autograd kernel selected")
    kernels = list(dict.fromkeys(r.kernel for r in registrations))
    own = {name: extra_settings or settings for name, _ in extra_units}
    every = compile_objects(settings, [*kernel_units(index, kernels), *extra_units], own)
    units, extra = every[: len(every) - len(extra_units)], tuple(every[len(every) - len(extra_units) :])
    excluded: dict[str, str] = {}
    bad_kernels: dict[str, str] = {}
    for u in units:
        if u.object is None:
            why = f"does not compile against torch {settings.torch.version}: {_first_error(u.diagnostics)}"
            bad_kernels.update((k, why) for k in kernels if index.kernels[k].unit.removesuffix(".cpp") == u.name)
    ok_units = [u for u in (*units, *extra) if u.object is not None]
    linkable = [k for k in kernels if k not in bad_kernels]
    hidden = _unlinkable(settings, ok_units, linkable)
    bad_kernels.update((k, f"needs symbols libtorch does not export: {why}") for k, why in hidden.items())
    for r in registrations:
        if r.kernel in bad_kernels:
            excluded.setdefault(r.op, bad_kernels[r.kernel])
    bad_ops = {op for op, _ in excluded.items()}
    kept = tuple(r for r in registrations if r.op not in bad_ops)
    reg = compile_objects(settings, [("vtgen_registrations", registration_unit(kept))])
    if reg[0].object is None:
        raise VtgenError(f"the registration unit does not compile:\n{reg[0].diagnostics[:4000]}")
    path, linked = link_library(settings, [*ok_units, *reg], EXPORTED, "vtgen_gradcheck")
    compiled = sum(u.compiled for u in (*units, *extra, *reg))
    return LibraryBuild(
        path,
        kept,
        tuple(sorted(excluded.items())),
        compiled,
        len(units) + len(extra) + 1,
        linked,
        time.perf_counter() - start,
        extra,
    )
