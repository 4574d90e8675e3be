"""The Python tier of ``check --gradcheck``: PyTorch's own formulas checked with nothing compiled.

For the selected entries of PyTorch's yaml, each Autograd kernel is translated to Python with the
op library's translator (``emit.python_autograd``: one module text per aten overload) and installed
in a child (``gradcheck_child.python_tier``) as the ``AutogradCPU`` kernel of that overload on the
installed torch; the schema-sample checks (backward, double backward, forward AD) and the adjoint
test run against it.  What it cannot carry is *not verified by the Python tier*, per entry, with
the reason, and left to the compiled tier (never passed):

- a formula the translator cannot spell, or one calling a helper of FunctionsManual that has no
  Python equivalent in ``gradcheck_child/formula_helpers.py`` (helpers are Python, held equal to
  the installed torch's on samples: the ``agree`` check);
- an out= overload, a ``_foreach_`` op (its formulas are per list element), a written Tensor[] argument;
- with ``--pytorch-root`` a checkout holding its own FunctionsManual.cpp, every entry calling one of
  those helpers or one the translator's prelude spells (``handle_r_to_c``, ``mul_tensor_backward``: the
  checkout's may differ from the installed torch's, which they mirror).

A view op's Function returns the view its op made below autograd (torch's own ADInplaceOrView kernel
made it, and torch marks a custom Function's view output as a view of its input).  torch refuses an
in-place write to such a view (a C++ view kernel lets autograd rebase it), which other ops' formulas and
samples make (``grad.select(...).zero_()``): so a view op's kernel is installed only while its own checks
run (``scoped`` in the request), and other ops' checks use torch's own.  A ``-> Tensor[]``
op's Function returns the list's tensors one by one; the checks exercise their values and gradients (the
batched forward part of a view's check cannot run: ``batching._VIEW_TANGENT``, a note on the check).

Only the selected ops' entries are read into the model (the rest of native_functions.yaml is
blanked, lines kept), so planning costs milliseconds, not the whole yaml's second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from .. import gradcheck_child as child_package
from ..base.errors import Location, VtgenError
from ..emit.python_autograd import AutogradModule, python_autograd_module, supported_kernels
from ..engine.python_autograd import autograd_module, formulas_functions
from ..gradcheck_child.protocol import TierEntry, TierModule, TierRequest
from ..inputs.files import Inputs
from ..inputs.load import Entry, load_entries, load_text, read_text
from ..model import build_model, load_model
from ..model.schema import OpSelector, SchemaError, SchemaKind, op_name, resolve_ops
from ..plan.kernel import KernelPlan, build_plan
from ..plan.policy import policy_for
from ..translate import MANUAL_PRELUDE_HELPERS
from .formulas import FormulaPlaces
from .hints import BUILTIN, Hints, load_hints
from .schema_samples import NOTHING, OpSamples, plan_samples
from .verdict import REASONS

__all__ = [
    "HELPERS",
    "TierPlan",
    "autograd_kernels",
    "entry_ops",
    "family_texts",
    "helper_names",
    "plan_library_tier",
    "plan_tier",
]

_DENSE_CPU = frozenset({"CPU", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional"})
_LAYOUTS = frozenset({"SparseCPU", "SparseCsrCPU", "QuantizedCPU", "NestedTensorCPU", "MkldnnCPU"})
HELPERS = "formula_helpers"  # the child package's module of Python helpers: the translated modules' _formulas
_FUNC = re.compile(r"^- func: ([\w.]+)\(", re.MULTILINE)
# a translated module's use of a FunctionsManual helper its prelude spells (``_handle_r_to_c(``)
_MANUAL_PRELUDE = re.compile(rf"(?<![\w.])_({'|'.join(sorted(MANUAL_PRELUDE_HELPERS))})\(")


@dataclass(frozen=True)
class NotCarried:
    """An op the Python tier cannot verify, and why (its compiled tier's business)."""

    op: str
    why: str
    location: Location | None


@dataclass(frozen=True)
class TierPlan:
    """What the child gets: the module texts, the samples, the ops the adjoint test applies to."""

    modules: tuple[tuple[str, str], ...]  # (op, module text)
    samples: tuple[OpSamples, ...]
    adjoint: frozenset[str]  # functional ops with backward formulas and an explicit forward formula
    not_carried: tuple[NotCarried, ...]
    places: dict[str, FormulaPlaces]  # every planned op's formula places
    outs: tuple[str, ...] = ()  # out= overloads: autograd refuses their calls, no formula of theirs runs
    views: frozenset[str] = frozenset()  # view ops: their kernels are installed only for their own checks
    unsampled: tuple[NotCarried, ...] = ()  # carried ops with no schema sample (why): other checks may enter them

    @property
    def carried(self) -> frozenset[str]:
        return frozenset(op for op, _ in self.modules)


def helper_names() -> frozenset[str]:
    """The helpers the child provides (read with ``ast``, never imported here)."""
    return formulas_functions(str(child_package.HERE / f"{HELPERS}.py"))


def _family(name: str) -> str | None:
    try:
        return op_name(name).family
    except SchemaError:
        return None


def _entry_name(entry: Entry, key: str) -> str:
    field = next((f for f in entry.fields if f.key == key), None)
    return str(field.value).split("(", 1)[0] if field is not None and isinstance(field.value, str) else ""


def _native_entries(text: str, path: str, families: set[str]) -> tuple[Entry, ...]:
    """The entries of native_functions.yaml (``text``, read from ``path``) whose op is of ``families``; the
    others blanked, lines kept."""
    starts = [m.start() for m in _FUNC.finditer(text)] + [len(text)]
    kept = [text[: starts[0]]]
    for begin, end in pairwise(starts):
        chunk = text[begin:end]
        match = _FUNC.match(chunk)
        name = match.group(1) if match else ""
        kept.append(chunk if _family(name) in families else "\n" * chunk.count("\n"))
    return load_text("".join(kept), path)


def aten_names(text: str) -> frozenset[str]:
    """Every op name of native_functions.yaml's ``text`` (without overload), in-place names included, and each
    with C++'s ``_symint`` suffix (``convolution_backward_symint``: the child calls the op itself)."""
    names = {m.group(1).split(".")[0] for m in _FUNC.finditer(text)}
    return frozenset(names | {f"{n}_symint" for n in names})


def family_texts(derivatives: Sequence[Entry], native_functions: str) -> dict[str, str]:
    """Each op family with a derivatives.yaml entry -> the text of its entries there, then of its ops' entries
    in native_functions.yaml (read from that path): what the family's translation is made of."""
    texts: dict[str, list[str]] = {}
    for entry in derivatives:
        family = _family(_entry_name(entry, "name"))
        if family is not None:
            texts.setdefault(family, []).append(entry.text)
    native = read_text(native_functions)
    starts = [m.start() for m in _FUNC.finditer(native)] + [len(native)]
    for begin, end in pairwise(starts):
        match = _FUNC.match(native, begin)
        family = _family(match.group(1)) if match else None
        if family in texts:
            texts[family].append(native[begin:end])
    return {family: "\n".join(parts) for family, parts in texts.items()}


def entry_ops(inputs: Inputs) -> tuple[str, ...]:
    """Every op derivatives.yaml has an entry for (the whole yaml's selection: their families come along)."""
    return tuple(dict.fromkeys(n for e in load_entries(inputs.derivatives) if (n := _entry_name(e, "name"))))


def selected_families(selected: Sequence[OpSelector], entries: Sequence[Entry], native_functions: str) -> set[str]:
    """The families of the ops ``selected`` selects (``resolve_ops``: the rule of every ``--op``) among the ops
    whose family has a ``derivatives.yaml`` entry (``entries``): those ``native_functions`` (its text) declares,
    those the entries name (``rrelu_with_noise_functional``: derived, declared nowhere) and the families
    themselves (``uniform``: the family of an in-place entry, ``uniform_``, whose functional op is derived)."""
    if not selected:
        raise VtgenError("the Python tier checks the ops --op names: name at least one")
    named = [n for e in entries if (n := _entry_name(e, "name"))]
    with_entry = {f: None for n in named if (f := _family(n))}
    declared = [m.group(1) for m in _FUNC.finditer(native_functions) if _family(m.group(1)) in with_entry]
    known = list(dict.fromkeys([*declared, *named, *with_entry]))
    return {op_name(op).family for op in resolve_ops(selected, known, "no such op has a derivatives.yaml entry")}


def _places(k: KernelPlan) -> FormulaPlaces:
    info, args = k.info, k.function.func.arguments
    if info is None:  # the tier plans only kernels with a derivatives entry
        raise VtgenError(f"'{k.function.name}': no derivatives entry to place its formulas; please report this")
    returns = k.function.func.returns
    names = [r.name or "result" for r in returns] if len(returns) == 1 else [r.name or f"result{i}" for i, r in
                                                                             enumerate(returns)]  # fmt: skip
    return FormulaPlaces(
        tuple(a.name for a in args.positional),
        k.function.kind is SchemaKind.out,
        tuple(a.name for a in (*args.kwarg_only, *args.out)),
        tuple((b.var_names, b.location) for b in info.backward),
        tuple(f.location for f in info.forward),
        info.location,
        tuple(n for b in info.backward if "not_implemented(" not in b.formula for n in b.var_names),
        any("not_implemented(" not in f.formula for f in info.forward),
        info.output_differentiability,
        tuple(f.var_names for f in info.forward),
        tuple(names),
    )


def _why_not(k: KernelPlan, module: AutogradModule, own_manual: bool) -> tuple[str | None, str, Location | None]:
    """(the module text, "", None) or (None, why the Python tier cannot carry the kernel, where)."""
    where = k.info.location if k.info is not None else None
    try:
        text = python_autograd_module((k,), module)
    except VtgenError as exc:
        return None, f"its formulas cannot be translated: {exc.message}", exc.location or where
    if own_manual and ("_formulas." in text or _MANUAL_PRELUDE.search(text)):
        why = (
            "it calls helpers of FunctionsManual, and --pytorch-root holds its own FunctionsManual.cpp "
            "(the Python helpers mirror the installed torch's)"
        )
        return None, why, where
    return text, "", None


def _no_dense_cpu(k: KernelPlan) -> str | None:
    """Why a dense CPU tensor never reaches the op's Autograd kernel (None: it does).  torch registers that
    kernel for the ``Autograd`` alias, which a ``CompositeImplicitAutograd`` kernel precedes for every backend
    without a kernel of its own (``matmul``, ``linear``: their formulas are the nested tensors'); the tier
    installs for ``AutogradCPU`` itself, which precedes everything, so such an op is not carried (the
    compiled tier's reasons, ``verdict.REASONS``)."""
    f = k.function
    if f.structured_delegate is not None or f.dispatch_keys & _DENSE_CPU or not f.dispatch_keys:
        return None  # no dispatch section (an op library's op): the Autograd kernel is its only one
    if f.dispatch_keys & _LAYOUTS:
        return f"{REASONS[1]}: its only CPU kernels take them (a dense one decomposes before autograd)"
    return f"{REASONS[0]}: a dense CPU tensor takes its CompositeImplicitAutograd kernel, or none"


def _kernels(
    inputs: Inputs, policy_root: str | None, release: str, ops: Sequence[OpSelector]
) -> tuple[list[KernelPlan], AutogradModule]:
    """The selected families' Autograd kernels with formulas, planned from their entries alone; the translator's
    module description (aten's operator names, the child's helpers)."""
    entries = load_entries(inputs.derivatives)
    native = read_text(inputs.native_functions)  # once: the selection, the selected entries and every op name
    families = selected_families(ops, entries, native)
    derivatives = tuple(e for e in entries if _family(_entry_name(e, "name")) in families)
    tags = load_entries(inputs.tags) if inputs.tags else ()
    model = build_model(_native_entries(native, inputs.native_functions, families), derivatives, tags,
                        inputs.namespace)  # fmt: skip
    kernels = build_plan(model, policy_for(policy_root, release)).kernels
    module = AutogradModule("aten", aten_names(native), model.derivatives, HELPERS, helper_names(), list_returns=True)
    return [k for k in kernels if k.kind == "kernel" and k.dispatch_key == "Autograd" and k.info is not None], module


def autograd_kernels(
    inputs: Inputs, policy_root: str | None, release: str, ops: Sequence[OpSelector]
) -> list[KernelPlan]:
    """The Autograd kernels with formulas of the families of the ops ``ops`` selects, planned as the tier plans
    them (carried or not): what a tool counting the tier's coverage decides over."""
    return _kernels(inputs, policy_root, release, ops)[0]


def _translated(
    chosen: list[KernelPlan], module: AutogradModule, own_manual: bool
) -> tuple[list[tuple[str, str]], list[NotCarried], list[str]]:
    """(op, module text) of each kernel the tier carries; those it cannot (why); the out= overloads."""
    supported = set(supported_kernels(tuple(chosen)))
    modules: list[tuple[str, str]] = []
    missing: list[NotCarried] = []
    outs: list[str] = []
    for k in chosen:
        if k.function.kind is SchemaKind.out:
            outs.append(k.op)  # autograd refuses out= calls: no formula runs through them
            continue
        if k not in supported:
            why = "not a functional or in-place op (the Python tier carries those)"
            missing.append(NotCarried(k.op, why, k.info.location if k.info is not None else None))
            continue
        dense = _no_dense_cpu(k)
        if dense is not None:  # its formulas never run on a dense CPU tensor: installing them would change torch
            missing.append(NotCarried(k.op, dense, k.info.location if k.info is not None else None))
            continue
        text, why, at = _why_not(k, module, own_manual)
        if text is None:
            missing.append(NotCarried(k.op, why, at))
        else:
            modules.append((k.op, text))
    return modules, missing, outs


def _adjoint(k: KernelPlan) -> bool:
    """Backward formulas beside an explicit forward one (or auto_linear): not auto_element_wise's derived one."""
    info = k.info
    return (
        k.function.kind is SchemaKind.functional and info is not None and bool(info.backward) and bool(info.forward)
        and all(f.derived is None for f in info.forward)
    )  # fmt: skip


def plan_tier(
    inputs: Inputs, policy_root: str | None, release: str, ops: Sequence[OpSelector], hint_files: Sequence[str],
    own_manual: bool,
) -> TierPlan:  # fmt: skip
    """Translate the selected ops' Autograd kernels (their families: in-place variants come along)."""
    chosen, module = _kernels(inputs, policy_root, release, ops)
    return _tier_of(chosen, module, own_manual, load_hints([str(BUILTIN), *hint_files]))


def plan_library_tier(
    inputs: Inputs, policy_root: str | None, release: str, ops: Sequence[OpSelector], hint_files: Sequence[str],
    formulas: str | None,
) -> TierPlan:  # fmt: skip
    """The same for an op library's own yaml (``--library``): every Autograd kernel with formulas of the
    families of the ops ``ops`` selects (``resolve_ops``; none: all), translated as the library's generated
    Python autograd is (``engine.python_autograd.autograd_module``: its ops, the author's ``formulas`` module)."""
    model = load_model(inputs)
    kernels = build_plan(model, policy_for(policy_root, release)).kernels
    chosen = [k for k in kernels if k.kind == "kernel" and k.dispatch_key == "Autograd" and k.info is not None]
    if ops:
        missing = "the library has no differentiable op of that name"  # as its compiled tier says
        families = {op_name(op).family for op in resolve_ops(ops, [k.op for k in chosen], missing)}
        chosen = [k for k in chosen if op_name(k.op).family in families]
    return _tier_of(chosen, autograd_module(model, formulas), False, load_hints(hint_files))


def _tier_of(chosen: list[KernelPlan], module: AutogradModule, own_manual: bool, hints: Hints) -> TierPlan:
    modules, missing, outs = _translated(chosen, module, own_manual)
    carried = {op for op, _ in modules}
    samples = [s for s in plan_samples(chosen, hints, sorted(carried)) if s.op in carried]
    # installed all the same: an OpInfo, ModuleInfo or captured check may enter it (as in the compiled tier)
    unsampled = tuple(NotCarried(s.op, f"no schema sample: {s.why_not}", None) for s in samples
                      if s.why_not not in (None, NOTHING))  # fmt: skip
    adjoint = frozenset(k.op for k in chosen if k.op in carried and _adjoint(k))
    places = {k.op: _places(k) for k in chosen}
    ready = tuple(s for s in samples if s.why_not is None)
    views = frozenset(k.op for k in chosen if k.op in carried and k.view_of is not None)
    return TierPlan(tuple(modules), ready, adjoint, tuple(missing), places, tuple(outs), views, unsampled)


def request_of(
    plan: TierPlan, kinds: Sequence[str], timeout: int, batched: bool, first: bool, opinfo: bool, max_samples: int
) -> TierRequest:
    """The child's request (``gradcheck_child.python_tier``): data only; ``first``: an op's checks end at its
    first gradient mismatch; ``opinfo``: the ops' OpInfo entries run after the schema samples."""
    variants = tuple((op, (n := op_name(op)).family, "inplace" if n.inplace else "function") for op, _ in plan.modules)
    return TierRequest(
        first_failure=first,
        opinfo=opinfo,
        variants=variants,
        dtypes=("float64", "complex128"),
        max_samples=max_samples,
        modules=tuple(TierModule(op, text) for op, text in plan.modules),
        scoped=tuple(sorted(plan.views)),
        entries=tuple(TierEntry(s, s.op in plan.adjoint) for s in plan.samples),
        kinds=tuple(kinds),
        timeout=timeout,
        batched=batched,
    )
