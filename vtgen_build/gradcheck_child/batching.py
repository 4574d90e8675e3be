"""Batched-gradient checks (vmap) in the gradcheck children; standalone (stdlib and torch only).

``gradcheck(..., check_batched_grad=True)`` (and ``check_batched_forward_grad``) also computes the
gradients of several cotangents (tangents) at once under ``vmap``.  A formula that is right value
for value can still break there: one that writes the batched ``grad`` in place into a tensor made
without it (``at::zeros_like(self).add_(grad * ...)``, ``result.clone().mul_(grad)``) raises
"vmap: aten::add_(self, *extra_args) is not possible ...".  PyTorch runs these checks wherever an
OpInfo enables them (``check_batched_grad``, ``check_batched_gradgrad``,
``check_batched_forward_grad``); the children do the same, and for samples of their own (captured
arguments, schema samples) by default.

torch runs the batched part after the value checks, so when it fails the values were right: the
check is run again without it (which must pass), and the failure is reported as a *batching*
failure (``BatchingFailure``), at the formula of the input it names, never as a value mismatch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from .rows import Check, Entry

__all__ = [
    "BatchingFailure",
    "failed_by",
    "gradcheck_kind",
    "inplace_tangent_note",
    "inplace_tangent_refused",
    "input_of",
    "is_batching",
    "run_batched",
    "short",
    "timed",
]

# torch's own words for its batched-gradient checks (autograd/gradcheck.py)
_MARK = re.compile(r"batched grad|batched gradient", re.IGNORECASE)
_NAMED = re.compile(r"For output \d+ and input (\d+)")
# vmap cannot run the op at all (an op library's view or out= op has no batching rule and no fallback):
# the batched part does not apply, as an OpInfo turns it off for such ops; the values are still checked
_NO_RULE = re.compile(r"Batching rule not implemented for \S+; the fallback path doesn't work")
# torch's custom Function refuses a jvp whose tangent is not a view of the input's when its forward returns a
# view (the Python tier's view ops): under vmap the tangent is a new batched wrapper, never such a view, so the
# batched forward part cannot run for them (a C++ view kernel sets its tangent itself); the values still are
_VIEW_TANGENT = re.compile(r"A custom Function's forward is returning a view \(or an input as-is\) but the jvp")


class BatchingFailure(Exception):
    """The check's values were right, its batched (vmap) part failed; ``input``: the differentiated
    input whose formula breaks (its index among them), None when neither torch nor a rerun tells."""

    def __init__(self, message: str, input_index: int | None) -> None:
        super().__init__(message)
        self.input = input_index


# vmap's refusal to copy a batched tangent into the unbatched tangent of a written input: the jvp of
# an in-place Function must write that tangent in place (PyTorch checks it), so under vmap it cannot
# when only another input's tangent is batched; PyTorch's own in-place ops are alike (their OpInfos
# turn ``check_inplace_batched_forward_grad`` off).  Not a formula's failure: the check passes on its
# values, and its row carries a note saying its batched part could not run (``inplace_tangent_note``),
# which the report prints and the coverage JSON keeps on the formulas it proves.
_INPLACE_TANGENT = re.compile(r"vmap: aten::copy_\(self, \*extra_args\) is not possible because there exists a Tensor")


def inplace_tangent_refused(exc: BaseException) -> bool:
    """Is ``exc`` a batched forward check failing only on vmap's refusal above (its values right)?"""
    return isinstance(exc, BatchingFailure) and bool(_INPLACE_TANGENT.search(str(exc)))


def inplace_tangent_note(exc: BaseException) -> str:
    """The note of a check whose batched forward part vmap refused (``inplace_tangent_refused``), with torch's words."""
    return (
        "its batched (vmap) part could not run: vmap cannot write the batched tangent of another input into the "
        f"unbatched tangent of the input the op writes (as for PyTorch's in-place ops): {str(exc)[:200]}"
    )


def is_batching(text: str) -> bool:
    return bool(_MARK.search(text))


def short(text: str) -> str:
    """torch's message without its advice to the test writer: the vmap error, or the mismatch's header."""
    text = " ".join(text.split())
    cut = text.find(" gradcheck or gradgradcheck failed while testing batched")
    return text[:cut] if cut > 0 else text


def gradcheck_kind(
    torch: Any, call: Any, args: tuple[Any, ...], kind: str, common: dict[str, Any], batched: bool
) -> None:
    """One check of ``call`` at ``args``: ``backward``, ``gradgrad`` (reverse over reverse),
    ``fwd_over_rev`` or ``forward`` (forward AD), with its batched (vmap) part when ``batched``."""
    if kind == "backward":
        torch.autograd.gradcheck(
            call, args, check_grad_dtypes=True, check_undefined_grad=True, check_batched_grad=batched, **common
        )
    elif kind == "gradgrad":
        torch.autograd.gradgradcheck(
            call, args, check_fwd_over_rev=False, check_rev_over_rev=True, check_batched_grad=batched, **common
        )
    elif kind == "fwd_over_rev":
        torch.autograd.gradgradcheck(
            call, args, check_fwd_over_rev=True, check_rev_over_rev=False, check_undefined_grad=False,
            check_batched_grad=False, **common,
        )  # fmt: skip
    else:
        torch.autograd.gradcheck(
            call, args, check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
            check_batched_grad=False, check_batched_forward_grad=batched, **common,
        )  # fmt: skip


def run_batched(run: Callable[[bool], None], batched: bool, locate: Callable[[], int | None] | None = None) -> str:
    """``run(batched)``; a failure of its batched part becomes ``BatchingFailure`` once ``run(False)`` passed.

    ``locate``: which input breaks, asked when torch's message does not say (a vmap error).  Returns a note
    when the batched part could not run on a view Function's tangent (``_VIEW_TANGENT``; empty otherwise).
    """
    try:
        run(batched)
    except Exception as exc:
        text = str(exc)
        if not (batched and is_batching(text)):
            raise
        if _NO_RULE.search(text):
            run(False)  # the values alone (a failure there is the one to report)
            return ""
        if _VIEW_TANGENT.search(text):
            run(False)
            return f"its batched (vmap) forward part could not run: the op returns a view: {short(text)[:160]}"
        run(False)  # the values: must pass (else that failure is the one to report)
        named = _NAMED.search(text) if locate else None  # a forward check's index is an output's
        index = int(named.group(1)) if named else (locate() if locate else None)
        raise BatchingFailure(short(text), index) from exc
    return ""


def input_of(fn: Callable[..., Any], inputs: tuple[Any, ...]) -> int | None:
    """The first differentiated input whose batched backward check fails alone (the others held fixed),
    None: none (a forward formula has one place: no input to find).

    Its index counts only the inputs gradcheck differentiates, as torch's messages do.
    """
    import torch

    wanted = [i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor) and t.requires_grad]
    if len(wanted) < 2:
        return 0 if wanted else None
    fixed = [t.detach() if isinstance(t, torch.Tensor) else t for t in inputs]
    for n, at in enumerate(wanted):

        def alone(x: Any, at: int = at) -> Any:
            args = list(fixed)
            args[at] = x
            return fn(*args)

        try:
            torch.autograd.gradcheck(alone, (inputs[at],), fast_mode=True, check_batched_grad=True)
        except Exception as exc:
            if is_batching(str(exc)):
                return n
    return None


def failed_by(check: Check, exc: BaseException) -> Check:
    """A failed check as its exception says: a batching failure (``BatchingFailure``) only in its batched
    part, at the input whose formula breaks when known; another failure as it is."""
    if not isinstance(exc, BatchingFailure):
        return check
    return replace(check, batched=True, input=exc.input)


def timed(run: Callable[[], Sequence[Entry]]) -> Callable[[], list[Entry]]:
    """``run`` whose rows say how long it took, shared among them (``seconds``: what ``--shard`` balances)."""
    import time

    def measured() -> list[Entry]:
        start = time.perf_counter()
        rows = run()
        share = round((time.perf_counter() - start) / max(len(rows), 1), 3)
        return [replace(row, seconds=share) for row in rows]

    return measured
