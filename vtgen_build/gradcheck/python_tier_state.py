"""``check --gradcheck --changed`` through the Python tier: which ops to check again.

The record is ``check``'s (``check.state``: one data-only, hash-checked file of ``{"settings": key, "ops":
{op: digest}}``), kept at ``.vtgen-gradcheck/python-tier/state.json`` and read and written while the run
holds the check lock of ``--out``.  Its settings key holds what every op's verdict depends on besides the
op's own formulas: the translator's source (the C++-expression parser and the Python emitters) and the
checking child's, the release, the content of the op library whose forward kernels run (``--library``) and
the options that shape the checks; any change there checks every op again.  Each op's digest is the Python
its formulas became (or why they did not become any), mixed with the content of each helper file naming a
function that Python calls (``check.with_helper_calls``, the compiled tier's rule): the Python helpers module
and the C++ helper headers it mirrors.  An edit of a helper checks again the ops calling it, and no other.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base import store
from ..check import changed_ops, files_text, read_state, with_helper_calls, write_state
from ..compile import artifact_key
from ..model.schema import op_name
from .python_tier import TierPlan
from .python_tier_helpers import formula_calls

__all__ = ["TierState", "translator_digest"]

KIND = "python_tier_state"
_PACKAGE = Path(__file__).resolve().parent.parent
# the translation of a formula to Python (the translator's room and these): a change of any of
# them changes what every op runs
_TRANSLATOR = (
    "emit/python_autograd.py",
    "engine/python_autograd.py",
    "gradcheck/python_tier.py",
)


def translator_digest() -> str:
    """The translator's source and the checking child's (every file of the child package), by content."""
    room = sorted((_PACKAGE / "translate").glob("*.py"))
    files = room + [_PACKAGE / name for name in _TRANSLATOR] + sorted(child_package.HERE.glob("*.py"))
    return store.sha256_hex(files_text(files).encode("utf-8", "surrogateescape"))


def _op_digests(plan: TierPlan, helpers: Sequence[Path]) -> dict[str, str]:
    """Each planned op's digest: its module text (or why it has none), with the helper files its text calls."""
    texts = dict(plan.modules)
    whys = {n.op: f"not carried: {n.why}" for n in plan.not_carried}
    own = {op: store.sha256_hex((texts.get(op) or whys.get(op, "planned")).encode()) for op in plan.places}
    return with_helper_calls(lambda op: formula_calls(texts.get(op, "")), own, helpers)


@dataclass(frozen=True)
class TierState:
    """The ops to check again (changed, failed, or new since the last run with the same settings)."""

    path: Path
    key: str
    before: dict[str, str]
    digests: dict[str, str]

    @classmethod
    def read(cls, work: Path, plan: TierPlan, helpers: Sequence[Path], settings: Sequence[str]) -> TierState:
        """``settings``: the run's words besides the translator (release, the library's digest, options)."""
        key = artifact_key("python-tier-state", "", tuple(settings), "", "", [translator_digest()])
        path = work / "state.json"
        return cls(path, key, read_state(path, KIND, key), _op_digests(plan, helpers))

    def chosen(self, plan: TierPlan) -> TierPlan:
        """``plan`` cut to the changed ops' families (an op brings its in-place variant, and back)."""
        families = {op_name(op).family for op in changed_ops(self.before, self.digests)}

        def keep(op: str) -> bool:
            return op_name(op).family in families

        return replace(
            plan,
            modules=tuple(m for m in plan.modules if keep(m[0])),
            samples=tuple(s for s in plan.samples if keep(s.op)),
            not_carried=tuple(n for n in plan.not_carried if keep(n.op)),
            outs=tuple(o for o in plan.outs if keep(o)),
        )

    def write(self, checked: Collection[str], failed: Collection[str]) -> None:
        """What the next ``--changed`` compares with: each checked op's digest, a failed op left out."""
        new = {op: d for op, d in self.before.items() if op in self.digests}
        new.update({op: d for op, d in self.digests.items() if op in checked or op not in new})
        write_state(self.path, KIND, self.key, {op: d for op, d in sorted(new.items()) if op not in failed})
