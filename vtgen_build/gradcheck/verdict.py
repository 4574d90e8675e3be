"""The honest verdict: which selected ops no passing check verified, and why (a fixed list of reasons).

An op needs verifying when it has a formula of its own: an Autograd kernel, not an out=
overload, with a backward formula that is not ``not_implemented(...)`` or a forward formula.
It is verified when a passing check entered our kernel of it.  Otherwise the run says
``not verified`` with one reason and exits with ``UNVERIFIED`` unless the user accepts it
(``--allow-unverified``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .formulas import FormulaPlaces
from .units import Registration

__all__ = ["REASONS", "UNVERIFIED", "Unverified", "needs_verifying", "unverified"]

UNVERIFIED = 3  # the exit status of a run that left a selected formula unchecked

# Why an op is not verified: the reasons the classification below gives (child.uncheckable's first three).
REASONS = (
    "needs a backend this machine lacks (no CPU kernel)",
    "needs sparse / quantized / nested inputs",
    "random",
    "not differentiable on CPU",
    "no sample yet",
    "our kernel could not be built into the library",
)


@dataclass(frozen=True)
class Unverified:
    op: str
    reason: str  # one of REASONS, then details
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.op}: {self.reason}" + (f" ({self.detail})" if self.detail else "")


def needs_verifying(reg: Registration, place: FormulaPlaces | None) -> bool:
    if place is None or place.out:
        return False
    return bool(place.differentiable or place.forward_ad)


def _reason(op: str, key: str, excluded: Mapping[str, str], uncheckable: Mapping[str, str]) -> Unverified:
    if key != "Autograd":
        return Unverified(op, REASONS[1], f"its kernel is registered for {key} only")
    why = uncheckable.get(op, "")
    if why:
        return Unverified(op, why)
    if op in excluded:
        return Unverified(op, REASONS[5], excluded[op])
    return Unverified(
        op, REASONS[4], "no OpInfo, ModuleInfo or other sample call reached our kernel in a passing check"
    )


def unverified(
    regs: Iterable[Registration],
    places: Mapping[str, FormulaPlaces],
    verified: Iterable[str],
    failed: Iterable[str],
    excluded: Mapping[str, str],
    uncheckable: Mapping[str, str],
) -> list[Unverified]:
    """The selected ops with a formula that no passing check entered (failed ops are failures, not here)."""
    done = set(verified) | set(failed)
    keys: dict[str, str] = {}
    for r in regs:
        if needs_verifying(r, places.get(r.op)) and r.op not in done:
            keys[r.op] = "Autograd" if r.key == "Autograd" or keys.get(r.op) == "Autograd" else r.key
    return [_reason(op, key, excluded, uncheckable) for op, key in sorted(keys.items())]
