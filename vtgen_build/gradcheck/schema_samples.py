"""Schema-driven samples, planned without torch: which arguments each sample of an op gets.

For an op no OpInfo reaches (every op of an op library), the samples are built from its
schema: float64 / complex128 tensors of small shapes, Scalars, ints, bools, optional
arguments absent (sample 0) and present (sample 1), ``SymInt[]`` sizes equal to the first
tensor's shape, and whatever the op's hints (``hints.py``) fix.  The plan is data (``ArgSample``,
``OpSamples``: records of the child protocol, ``gradcheck_child.protocol``): the child
(``schema_child.py``) turns it into tensors.  An op whose arguments cannot be made gets no
samples and the reason (``not verified: no sample yet``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..gradcheck_child.protocol import ArgSample, OpSamples
from ..model.schema import Argument, BaseType, ListType, OptionalType, SchemaKind, Type
from ..plan.kernel import KernelPlan
from .hints import ArgHint, Hints, Literal, OpHints, TensorHint
from .verdict import REASONS

__all__ = ["DEFAULT_SHAPE", "NOTHING", "ArgSample", "OpSamples", "plan_samples"]

DEFAULT_SHAPE = (2, 3)
NOTHING = "nothing to verify: no input has a gradient formula"
_SIZES = ("size", "sizes", "shape", "output_size")
_ABSENT_OK = ("ScalarType", "Layout", "Device", "MemoryFormat", "Generator", "str", "bool", "Scalar", "float")


def _default(text: str) -> Literal:
    """A schema default as a value (None: not a plain number or list of numbers)."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        items = [_default(t) for t in text[1:-1].split(",") if t.strip()]
        return None if any(i is None for i in items) else tuple(items)
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return None


def _is(ty: Type, *names: str) -> bool:
    return isinstance(ty, BaseType) and ty.name in names


def _int_value(arg: Argument, shape: tuple[int, ...]) -> Literal:
    return 0 if "dim" in arg.name else 1


def _list_value(arg: Argument, elem: Type, size: int | None, shape: tuple[int, ...]) -> Literal | str:
    if _is(elem, "bool") and size:
        return (True,) * size  # output_mask: every gradient
    if _is(elem, "Scalar"):
        return (0.5, 1.5)  # one per tensor of a Tensor[] (two of them)
    if (
        _is(elem, "int", "SymInt")
        and size
        and ("padding" in arg.name or "stride" in arg.name or "dilation" in arg.name)
    ):
        return (0 if "padding" in arg.name else 1,) * size
    if _is(elem, "int", "SymInt"):
        if arg.name in _SIZES or arg.name.endswith("size"):
            return tuple(shape)
        if "dim" in arg.name:
            return (0,)
    return f"argument '{arg.name}' of type {arg.type}"


def _value(arg: Argument, ty: Type, shape: tuple[int, ...]) -> Literal | str:
    """A plain value for a required argument, or why none can be chosen (a str starting 'argument')."""
    if _is(ty, "int", "SymInt"):
        return _int_value(arg, shape)
    if _is(ty, "float", "Scalar"):
        return 0.5
    if _is(ty, "bool"):
        return False
    if isinstance(ty, ListType):
        return _list_value(arg, ty.elem, ty.size, shape)
    return f"argument '{arg.name}' of type {arg.type}"


def _tensor(arg: Argument, hint: TensorHint | None, grad: bool, listed: bool) -> ArgSample:
    h = hint or TensorHint()
    shape = h.shape if h.shape is not None else DEFAULT_SHAPE
    if listed:
        shapes = h.shapes or (shape, shape)
        return ArgSample(
            arg.name, "tensors", shapes=shapes, values=h.values, high=h.high, grad=grad and h.grad, dtype=h.dtype
        )
    return ArgSample(
        arg.name,
        "tensor",
        shape,
        values=h.values,
        high=h.high,
        grad=grad and h.grad,
        dtype=h.dtype,
        through=h.through,
        data=h.data,
    )


def _one(
    arg: Argument, hint: ArgHint | None, grad: bool, present: bool, shape: tuple[int, ...]
) -> ArgSample | str | None:
    """The argument in one sample (None: left to its default), or why it cannot be made."""
    if hint is not None and hint.tensor is None:
        return ArgSample(arg.name, "value", value=hint.value)
    ty = arg.type
    optional = isinstance(ty, OptionalType)
    inner = ty.elem if isinstance(ty, OptionalType) else ty
    if inner.is_tensor_like():
        if (optional or arg.default is not None) and not present:
            return None if arg.default is not None else ArgSample(arg.name, "value")  # None, given
        return _tensor(arg, hint.tensor if hint else None, grad, isinstance(inner, ListType))
    if arg.default is not None and not present:
        return None
    if optional and (not present or (isinstance(inner, BaseType) and inner.name in _ABSENT_OK)):
        return None if arg.default is not None else ArgSample(arg.name, "value")
    if _is(inner, "bool") and arg.default is not None:
        return ArgSample(arg.name, "value", value=arg.default != "True")
    if arg.default is not None and not optional and _is(inner, "Scalar", "float"):
        # another value than the default: a formula that drops a factor of it must show
        return ArgSample(arg.name, "value", value=0.5 if _default(arg.default) == 1.5 else 1.5)
    if arg.default is not None and not optional:
        given = _default(arg.default)
        return None if given is None else ArgSample(arg.name, "value", value=given)
    chosen = _value(arg, inner, shape)
    if isinstance(chosen, str) and chosen.startswith("argument"):
        return None if arg.default is not None else chosen
    return ArgSample(arg.name, "value", value=chosen)


def _first_shape(args: Sequence[Argument], hints: OpHints | None) -> tuple[int, ...]:
    for a in args:
        if a.type.is_tensor_like():
            hint = hints.arg(a.name) if hints else None
            if hint is not None and hint.tensor is not None and hint.tensor.shape is not None:
                return hint.tensor.shape
            return DEFAULT_SHAPE
    return DEFAULT_SHAPE


def _sample(
    args: Sequence[Argument], hints: OpHints | None, grads: set[str], present: bool
) -> tuple[ArgSample, ...] | str:
    shape = _first_shape(args, hints)
    made: list[ArgSample] = []
    for a in args:
        one = _one(a, hints.arg(a.name) if hints else None, a.name in grads, present, shape)
        if isinstance(one, str):
            return one
        if one is not None:
            made.append(one)
    return tuple(made)


def _has_optional(args: Sequence[Argument]) -> bool:
    return any(a.default is not None or isinstance(a.type, OptionalType) for a in args)


def _grad_names(kernel: KernelPlan) -> set[str]:
    """Inputs whose gradient the yaml defines (not ``not_implemented``): the ones gradcheck differentiates."""
    info = kernel.info
    if info is None:
        return set()
    wanted = {v.name for v in kernel.differentiable_inputs}
    return {
        n for b in info.backward if not b.original.lstrip().startswith("not_implemented") for n in b.var_names
    } & wanted


def _dtypes(kernel: KernelPlan, hints: OpHints | None) -> tuple[str, ...]:
    if hints is not None and hints.dtypes is not None:
        return hints.dtypes
    return ("float64",) if kernel.complex_checked else ("float64", "complex128")


def _variant(variants: Sequence[KernelPlan], kind: SchemaKind) -> KernelPlan | None:
    return next((v for v in variants if v.function.kind is kind), None)


def _outputs(kernel: KernelPlan, forward: bool) -> tuple[int, ...]:
    """Indices of the returns gradients flow through (``forward``: those a forward formula computes)."""
    returns, info = kernel.function.func.returns, kernel.info
    names = [r.name or ("result" if len(returns) == 1 else f"result{i}") for i, r in enumerate(returns)]
    wanted = info.output_differentiability if info is not None else None
    found = [i for i in range(len(returns)) if wanted is None or (i < len(wanted) and wanted[i])]
    if forward and info is not None:
        computed = {n for f in info.forward for n in f.var_names}
        found = [i for i in found if names[i] in computed]
    return tuple(found)


def _written(kernel: KernelPlan | None) -> tuple[str, ...]:
    return tuple(a.name for a in kernel.function.func.arguments.non_out if a.is_write) if kernel else ()


def _plan_one(kernel: KernelPlan, variants: Sequence[KernelPlan], hints: OpHints | None) -> OpSamples:
    f = kernel.function
    inplace, out = _variant(variants, SchemaKind.inplace), _variant(variants, SchemaKind.out)
    inplace = None if inplace is kernel else inplace  # an in-place op with no functional variant is ``op``
    forward = bool(kernel.info and kernel.info.forward)
    base = OpSamples(
        kernel.op,
        f.namespace,
        kernel.node,
        inplace.op if inplace else None,
        inplace.node if inplace else None,
        out.op if out else None,
        (),
        _dtypes(kernel, hints),
        forward,
        out_args=tuple(a.name for a in out.function.func.arguments.out) if out else (),
        positions=tuple((a.name, i) for i, a in enumerate(f.func.arguments.positional)),
        outputs=_outputs(kernel, False),
        forward_outputs=_outputs(kernel, True),
        writes=_written(kernel) if kernel.function.kind is SchemaKind.inplace else (),
        inplace_writes=_written(inplace),
        random="nondeterministic_seeded" in f.tags,
    )
    if hints is not None and hints.outputs is not None:  # the returns a hint keeps (others: PyTorch's own fail)
        kept = hints.outputs
        base = _with(base, outputs=tuple(i for i in base.outputs if i in kept),
                     forward_outputs=tuple(i for i in base.forward_outputs if i in kept))  # fmt: skip
    if hints is not None and hints.skip is not None:
        return _with(base, why_not=_skipped(hints.skip))
    grads = _grad_names(kernel)
    if not grads:
        return _with(base, why_not=NOTHING)
    args = f.func.arguments.non_out
    first = _sample(args, hints, grads, present=hints is not None and hints.optional == "present")
    if isinstance(first, str):
        return _with(base, why_not=f"no sample yet: {first} (add a sample hint)")
    samples = [first]
    if _has_optional(args):
        second = _sample(args, hints, grads, present=True)
        if not isinstance(second, str) and second != first:
            samples.append(second)
    return _with(base, samples=tuple(samples))


def _skipped(skip: str) -> str:
    """A hint's ``skip`` as a verdict: one of the reasons no dense CPU sample can have, when it starts with
    one (``needs sparse / quantized / nested inputs: ...``), else no sample yet."""
    told = next((r for r in REASONS[:4] if skip.startswith(r)), None)
    return f"{skip} (sample hints)" if told else f"no sample yet: {skip} (sample hints)"


def _with(base: OpSamples, **changes: object) -> OpSamples:
    from dataclasses import replace

    return replace(base, **changes)  # type: ignore[arg-type]


def _sampled(variants: Sequence[KernelPlan]) -> KernelPlan | None:
    """The variant whose samples run: the functional one, else the in-place one; the in-place one too when
    only it has a formula (``eq_.Scalar``: its functional op's output is not differentiable)."""
    functional, inplace = _variant(variants, SchemaKind.functional), _variant(variants, SchemaKind.inplace)
    if functional is None or (inplace is not None and not _has_formula(functional) and _has_formula(inplace)):
        return inplace
    return functional


def _has_formula(kernel: KernelPlan) -> bool:
    return bool(_grad_names(kernel) or (kernel.info and kernel.info.forward))


def plan_samples(kernels: Iterable[KernelPlan], hints: Hints, ops: Iterable[str] | None = None) -> list[OpSamples]:
    """The samples of every functional Autograd kernel of ``kernels`` (or of those among ``ops``).

    An in-place or out= op selected alone brings its functional op, whose samples run it.
    """
    autograd = [k for k in kernels if k.dispatch_key == "Autograd" and k.kind == "kernel"]
    groups: dict[object, list[KernelPlan]] = {}
    for k in autograd:
        groups.setdefault((k.function.namespace, k.function.func.signature()), []).append(k)
    wanted = set(ops) if ops is not None else None
    found: list[OpSamples] = []
    for variants in groups.values():
        functional = _sampled(variants)
        if functional is None or functional.node is None:
            continue
        if wanted is not None and not wanted & {v.op for v in variants}:
            continue
        found.append(_plan_one(functional, variants, hints.for_op(functional.op)))
    return sorted(found, key=lambda s: s.op)
