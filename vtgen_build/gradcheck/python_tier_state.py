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

PyTorch's yaml (``TierState.of_families``): translating every formula of the yaml costs tens of seconds, so
its record is kept per op family (``families.json``), each digest the text of the family's entries in
derivatives.yaml and native_functions.yaml (lines left out: an edit above shifts no other family), mixed
with the child's Python helpers module where the family's formulas call a function it defines; the
changed families alone are then planned and translated.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .. import gradcheck_child as child_package
from ..base import store
from ..check import changed_ops, files_text, free_calls, read_state, with_helper_calls, write_state
from ..compile import artifact_key
from ..inputs.files import Inputs
from ..inputs.load import load_entries
from ..model.schema import op_name
from .python_tier import HELPERS, TierPlan, family_texts
from .python_tier_helpers import formula_calls

__all__ = ["TierState", "family_digests", "translator_digest"]

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
    """The translator's source (its room and the modules above) and the checking child's (every file of the
    child package but its Python helpers, which are mixed into the digests of the ops calling them), by content."""
    room = sorted((_PACKAGE / "translate").glob("*.py"))
    child = [p for p in sorted(child_package.HERE.glob("*.py")) if p.name != f"{HELPERS}.py"]
    files = room + [_PACKAGE / name for name in _TRANSLATOR] + child
    return store.sha256_hex(files_text(files).encode("utf-8", "surrogateescape"))


def _op_digests(plan: TierPlan, helpers: Sequence[Path]) -> dict[str, str]:
    """Each planned op's digest: its module text (or why it has none), with the helper files its text calls."""
    texts = dict(plan.modules)
    whys = {n.op: f"not carried: {n.why}" for n in plan.not_carried}
    own = {op: store.sha256_hex((texts.get(op) or whys.get(op, "planned")).encode()) for op in plan.places}
    return with_helper_calls(lambda op: formula_calls(texts.get(op, "")), own, helpers)


def family_digests(inputs: Inputs, helpers: Sequence[Path]) -> dict[str, str]:
    """PyTorch's yaml: each op family with a derivatives.yaml entry -> the digest of its entries' text, with
    the helper files naming a function its formulas call (``with_helper_calls``)."""
    texts = family_texts(load_entries(inputs.derivatives), inputs.native_functions)
    own = {family: store.sha256_hex(text.encode("utf-8")) for family, text in texts.items()}
    return with_helper_calls(lambda family: free_calls(texts[family]), own, helpers)


@dataclass(frozen=True)
class TierState:
    """The ops to check again (changed, failed, or new since the last run with the same settings)."""

    path: Path
    key: str
    before: dict[str, str]
    digests: dict[str, str]
    families: bool = False  # keyed by op family (PyTorch's yaml), not by op

    @classmethod
    def read(cls, work: Path, plan: TierPlan, helpers: Sequence[Path], settings: Sequence[str]) -> TierState:
        """``settings``: the run's words besides the translator (release, the library's digest, options)."""
        key = artifact_key("python-tier-state", "", tuple(settings), "", "", [translator_digest()])
        path = work / "state.json"
        return cls(path, key, read_state(path, KIND, key), _op_digests(plan, helpers))

    @classmethod
    def of_families(cls, work: Path, inputs: Inputs, helpers: Sequence[Path], settings: Sequence[str]) -> TierState:
        """PyTorch's yaml: the record per op family (the module's account), read before anything is planned."""
        key = artifact_key("python-tier-families", "", tuple(settings), "", "", [translator_digest()])
        path = work / "families.json"
        return cls(path, key, read_state(path, KIND, key), family_digests(inputs, helpers), families=True)

    def changed(self) -> list[str]:
        """The keys (ops, or families) whose digest is not the one last recorded (new ones too)."""
        return changed_ops(self.before, self.digests)

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
        """What the next ``--changed`` compares with: each checked op's digest, a failed op left out (by family:
        every changed family is recorded, but those of the failed ops)."""
        if self.families:
            checked = {*self.changed(), *(op_name(op).family for op in checked)}
            failed = {op_name(op).family for op in failed}
        new = {op: d for op, d in self.before.items() if op in self.digests}
        new.update({op: d for op, d in self.digests.items() if op in checked or op not in new})
        write_state(self.path, KIND, self.key, {op: d for op, d in sorted(new.items()) if op not in failed})
