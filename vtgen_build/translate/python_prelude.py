"""The helper functions at the top of a generated Python autograd module.

The module does not import vtgen_build (it ships in the op library's wheel), so what its
Functions share is spelled into it: packing a call's arguments for ``autograd.Function.apply``
(tensor lists flattened, so each element gets its own gradient), reading
``ctx.needs_input_grad`` per argument, the version bump of a written tensor, and the few
helpers of PyTorch's formulas (``PRELUDE_HELPERS`` in ``python_formula``) a formula may call.
Only the helpers the module's text uses are emitted, in a fixed order.
"""

from __future__ import annotations

import re

__all__ = ["HELPERS", "elementwise_batched_rule", "prelude"]

_ALWAYS = (
    '''def _differentiating(*values):
    """Does the call need the op's Function: an input requires grad, or carries a tangent?"""
    tensors = [t for v in values for t in (v if isinstance(v, (list, tuple)) else (v,)) if isinstance(t, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return True
    if torch.autograd.forward_ad._current_level >= 0:
        return any(torch.autograd.forward_ad.unpack_dual(t).tangent is not None for t in tensors)
    return False''',
    '''def _flatten(args, lists):
    """(layout, *flat): the arguments at ``lists`` (Tensor[]) spread out, each its own input."""
    layout, flat = [], []
    for i, a in enumerate(args):
        layout.append((len(flat), len(a) if i in lists else None))
        flat.extend(a) if i in lists else flat.append(a)
    return (tuple(layout), *flat)''',
    '''def _level_apply(cls):
    """``cls.apply`` at the calling level, as a C++ autograd kernel runs: the op's Autograd kernel is
    entered at the level of the innermost torch.func transform (grad, jvp), with that level's
    tensors, where ``Function.apply`` would start the transforms over through custom_function_call
    (and fail, the dispatcher being past their entry).  So a single-level twin of ``cls`` (what
    custom_function_call itself builds per level) is applied, with torch's flag allowing that set
    while a transform is active; its C ``apply`` also skips ``Function.apply``'s per-call binding of
    the forward's signature."""
    methods = {name: cls.__dict__[name] for name in ("forward", "setup_context", "backward", "jvp")}
    twin = type(cls.__name__, (torch.autograd.function._SingleLevelFunction,), methods)
    twin._backward_cls.__name__ = twin._backward_cls.__qualname__ = cls._backward_cls.__name__
    apply = twin.apply
    functorch = torch._C._functorch

    def run(*flat):
        if not torch._C._are_functorch_transforms_active():
            return apply(*flat)
        allowed = functorch.get_single_level_autograd_function_allowed()
        functorch.set_single_level_autograd_function_allowed(True)
        try:
            return apply(*flat)
        finally:
            functorch.set_single_level_autograd_function_allowed(allowed)

    return run''',
    '''def _below_autograd(inplace_or_view=False):
    """The op below autograd, from a Function's forward.  Inside torch.func transforms, with grad modes
    on again for the levels below (``apply`` turned them off for this one): there the op's result must
    get its history, as under a C++ autograd kernel.  Below ADInplaceOrView too unless the op is a view
    or writes an input (``inplace_or_view``: its own kernel there must run), as C++ kernels go: a view
    the op's kernel takes inside of an input carrying a tangent is no forward-AD view."""
    below = torch._C._AutoDispatchBelowAutograd() if inplace_or_view else torch._C._AutoDispatchBelowADInplaceOrView()
    if not torch._C._are_functorch_transforms_active():
        return below
    stack = contextlib.ExitStack()
    stack.enter_context(torch.enable_grad())
    stack.enter_context(torch.autograd.forward_ad._set_fwd_grad_enabled(True))
    stack.enter_context(below)
    return stack''',
    """def _unflatten(layout, flat):
    return tuple(flat[s] if n is None else list(flat[s : s + n]) for s, n in layout)""",
    '''def _need(ctx, i):
    """Is the gradient of argument ``i`` needed (any element's, for a tensor list)?"""
    start, count = ctx.layout[i]
    needs = ctx.needs_input_grad[1:]
    return needs[start] if count is None else any(needs[start : start + count])''',
    """def _flat_grads(ctx, grads):
    flat = [None]
    for (_, count), g in zip(ctx.layout, grads):
        flat.extend(([None] * count if g is None else g) if count is not None else (g,))
    return tuple(flat)""",
)

_WHEN_USED = {
    "_forward_ad_on": """def _forward_ad_on():
    return torch.autograd.forward_ad._current_level >= 0""",
    "_save_both": '''def _save_both(ctx, saved, flat, outputs):
    """Forward AD on: what backward reads, then the inputs (tensors; the others on ``ctx``) and the
    outputs, saved for backward and for the jvp alike: under vmap one set of batch dims maps both."""
    ctx.fw_constants = tuple(None if isinstance(v, torch.Tensor) else v for v in flat)
    values = (*saved, *(v if isinstance(v, torch.Tensor) else None for v in flat), *outputs)
    ctx.save_for_backward(*values)
    ctx.save_for_forward(*values)''',
    "_saved_both": '''def _saved_both(ctx, start):
    """The jvp's (arguments, outputs) from ``_save_both`` (``start``: what backward reads)."""
    values = ctx.saved_tensors[start:]
    count = len(ctx.fw_constants)
    flat = tuple(c if v is None else v for c, v in zip(ctx.fw_constants, values[:count]))
    return _unflatten(ctx.layout, flat), values[count:]''',
    "_elementwise_batched": '''def _elementwise_batched(op):
    """The batching rule of an element-wise op (the op's FuncTorchBatched kernel, where
    torch.library.register_vmap registers too, without its per-call tree walks): the tensors batched
    at the current vmap level with their batch dimension moved to the front, the others expanded to
    the batch size (no copy), one call of the op below that level, its outputs batched at 0."""
    functorch = torch._C._functorch
    keys = torch._C.DispatchKeySet
    below = keys(torch._C.DispatchKey.FuncTorchBatched)
    # and past functorch restoring the state outside vmap, where nothing there would see the call (_outside)
    straight = below | keys(torch._C.DispatchKey.FuncTorchDynamicLayerBackMode)
    raw = op._op  # the overload's C++ callable (OpOverload.__call__ adds a Python frame)
    unwrap, batch, exclude = functorch._unwrap_batched, functorch._add_batch_dim, torch._C._ExcludeDispatchKeyGuard
    functional, forward_ad = torch._is_functional_tensor, torch.autograd.forward_ad

    def _outside(level):
        """Would nothing outside this vmap see the op's call?  Under the outermost transform (level 1), forward
        AD off, and (``_plain``) on tensors none of which requires grad, is a subclass or has a conjugate,
        negative or zero bit, functorch would restore the state outside vmap only for the op's Autograd kernel
        to go below autograd: the kernel runs straight from the rule.  (Autocast and dispatch modes still see
        it: vmap leaves their keys on.)"""
        return level == 1 and forward_ad._current_level < 0

    def _plain(t):
        return type(t) is torch.Tensor and not (t.requires_grad or t.is_conj() or t.is_neg() or t._is_zerotensor()
                                                or functional(t))

    def _batch_aligned(a, batched, size, rank):
        """``a`` (batched: its batch dimension first) as ``(size, 1..., *sample dims)`` of rank ``1 + rank``: a
        sample's broadcasting against the others kept (an unbatched tensor expanded, no copy)."""
        pad = rank - (a.dim() - batched)
        if batched:
            return a[(slice(None),) + (None,) * pad]
        return a[(None,) * (pad + 1)].expand(size, *((-1,) * (a.dim() + pad)))

    def _batched(out, level):
        if isinstance(out, torch.Tensor):
            return batch(out, 0, level)
        return tuple(batch(o, 0, level) for o in out)

    def rule(*args, **kwargs):
        level = functorch.maybe_current_level()
        if len(args) == 1 and not kwargs and isinstance(args[0], torch.Tensor):  # one tensor, batched: nothing to align
            a, dim = unwrap(args[0], level)
            if dim:
                a = a.movedim(dim, 0)
            with exclude(straight if _outside(level) and _plain(a) else below):
                out = raw(a)
            return out if dim is None else _batched(out, level)
        keys = list(kwargs)
        values, size, rank, aligned = [], None, None, True
        for a in (*args, *kwargs.values()):
            dim = None
            if isinstance(a, torch.Tensor):
                a, dim = unwrap(a, level)
                if dim is not None:
                    a = a.movedim(dim, 0) if dim else a
                    size = a.shape[0]
                sample = a.dim() - (dim is not None)
                aligned = aligned and dim is not None and (rank is None or rank == sample)
                rank = sample if rank is None else max(rank, sample)
            values.append((a, dim is not None))
        if size is not None and not aligned:  # every tensor as (batch, <its dims padded to the widest sample's rank>)
            values = [(_batch_aligned(a, batched, size, rank), True) if isinstance(a, torch.Tensor) else (a, False)
                      for a, batched in values]
        tensors = [a for a, _ in values if isinstance(a, torch.Tensor)]
        args, kwargs = [a for a, _ in values[: len(args)]], dict(zip(keys, (a for a, _ in values[len(args):])))
        with exclude(straight if _outside(level) and all(map(_plain, tensors)) else below):
            out = raw(*args, **kwargs)
        return out if size is None else _batched(out, level)

    return rule''',
    "_cpp_slice": '''def _cpp_slice(value, *args):
    """C++'s ``slice`` member: aten's slice of a tensor; of a size list (``ArrayRef::slice(n[, m])``), its
    elements from ``n`` on (``m`` of them)."""
    if isinstance(value, torch.Tensor):
        return torch.ops.aten.slice.Tensor(value, *args)
    start = args[0]
    return tuple(value)[start:] if len(args) == 1 else tuple(value)[start : start + args[1]]''',
    "_cpp_div": '''def _cpp_div(a, b):
    """C++'s ``/`` of two integers: the quotient rounded toward zero (Python's ``/`` gives a float, ``//``
    rounds down); a float or tensor operand at run time divides as Python does."""
    if isinstance(a, int) and isinstance(b, int):
        quotient = abs(a) // abs(b)
        return quotient if (a < 0) == (b < 0) else -quotient
    return a / b''',
    "_on_device": '''def _on_device(value, kind):
    """C++'s ``is_cpu()`` / ``is_xpu()``: of a device, or of a tensor."""
    return (value if isinstance(value, torch.device) else value.device).type == kind''',
    "_suggest_memory_format": '''def _suggest_memory_format(t):
    """C++'s ``suggest_memory_format()``: channels-last when ``t`` is laid out so (and not plainly contiguous)."""
    last = {4: torch.channels_last, 5: torch.channels_last_3d}.get(t.dim())
    if last is not None and not t.is_contiguous() and t.is_contiguous(memory_format=last):
        return last
    return torch.contiguous_format''',
    "_cpp_index": '''def _cpp_index(value, indices):
    """C++'s ``Tensor::index(indices)``: aten's index with a list of optional index tensors."""
    return torch.ops.aten.index.Tensor(value, list(indices))''',
    "_view_tangent": '''def _view_tangent(tangent, tangents):
    """A view op's tangent that is an input's tangent itself (``result: self_t``), as a view of it: torch's
    custom Function wants a view output's tangent to be a view of the input's (a C++ view kernel makes it one)."""
    if any(tangent is t for t in tangents if isinstance(t, torch.Tensor)):
        return tangent.view_as(tangent)
    return tangent''',
    "_list_tangents": '''def _list_tangents(tangents, outputs):
    """The jvp's tangents of a ``-> Tensor[]`` op's outputs, one per element (None: the formula gave none)."""
    return tuple(None for _ in outputs) if tangents is None else tuple(tangents)''',
    "_tangents": '''def _tangents(ctx, tangents, primals):
    """Each argument's tangent (a list for a tensor list), zeros for a tensor input that has none."""
    flat = tangents[1:]
    found = []
    for (start, count), p in zip(ctx.layout, primals):
        t = flat[start] if count is None else list(flat[start : start + count])
        if count is None:
            found.append(torch.zeros_like(p) if t is None and isinstance(p, torch.Tensor) else t)
        else:
            found.append([torch.zeros_like(q) if u is None else u for u, q in zip(t, p)])
    return tuple(found)''',
    "_versions_of": """def _versions_of(tensors):
    return tuple(t._version for t in tensors)""",
    "_bump": '''def _bump(tensors, versions):
    """A kernel writing through a data pointer leaves the version alone: bump it as in-place ops do."""
    for t, v in zip(tensors, versions):
        if t._version == v:
            torch.autograd.graph.increment_version(t)''',
    "_tangent_version": """def _tangent_version(t):
    return None if t is None else t._version""",
    "_bump_tangent": '''def _bump_tangent(t, version, result):
    """A tangent written by copy_ under vmap keeps its version (the batched wrapper's own), and the
    jvp of a Function that marks an input dirty is checked by it: bump it as the write would have.
    Only when the formula did return that same tensor, so a new tensor still fails the check."""
    if t is not None and result is t and t._version == version:
        torch.autograd.graph.increment_version(t)''',
    "_no_grad_formula": """def _no_grad_formula(value, message):
    if isinstance(value, torch.Tensor) and value.requires_grad:
        raise RuntimeError(message)""",
    "_options": """def _options(t):
    return {"dtype": t.dtype, "device": t.device, "layout": t.layout}""",
    "_type_and_size": """def _type_and_size(t):
    return (t.shape, t.dtype, t.device)""",
    "_zeros_info": """def _zeros_info(info):
    return torch.zeros(info[0], dtype=info[1], device=info[2])""",
    "_handle_r_to_c": '''def _handle_r_to_c(self_st, gradient_result):
    """The real part of a complex gradient of a real input."""
    dtype = self_st if isinstance(self_st, torch.dtype) else self_st.dtype
    if gradient_result is not None and not dtype.is_complex and gradient_result.is_complex():
        return torch.real(gradient_result)
    return gradient_result''',
    "_maybe_multiply": """def _maybe_multiply(t, s):
    return t if not isinstance(s, torch.Tensor) and s == 1 else t * s""",
    "_sum_to": '''def _sum_to(t, shape):
    """Sum ``t`` down to ``shape`` (the inverse of broadcasting)."""
    shape = tuple(shape)
    if t is None or tuple(t.shape) == shape:
        return t
    lead = t.dim() - len(shape)
    dims = [*range(lead), *(lead + i for i, n in enumerate(shape) if n == 1 and t.shape[lead + i] != 1)]
    return (t.sum(dims, keepdim=True) if dims else t).reshape(shape)''',
    "_isComplexType": """def _isComplexType(dtype):
    return dtype.is_complex""",
    "_not_implemented": """def _not_implemented(name, reason=""):
    raise NotImplementedError(f"the derivative for '{name}' is not implemented" + (f": {reason}" if reason else ""))""",
    "_mul_tensor_backward": """def _mul_tensor_backward(grad, other, self_st):
    return _handle_r_to_c(self_st, grad * other.conj())""",
    "_div_tensor_self_backward": """def _div_tensor_self_backward(grad, other, self_st, rounding_mode=None):
    if rounding_mode is not None:
        return torch.zeros_like(grad, dtype=self_st)
    return _handle_r_to_c(self_st, grad / other.conj())""",
    "_div_tensor_other_backward": """def _div_tensor_other_backward(grad, self, other, rounding_mode=None):
    if rounding_mode is not None:
        return torch.zeros_like(grad, dtype=other.dtype)
    return _handle_r_to_c(other.dtype, -grad * ((self / other) / other).conj())""",
    "_value_selecting_backward": """def _value_selecting_backward(grad, dim, indices, sizes):
    return grad.new_zeros(sizes).scatter(dim, indices, grad)""",
    "_any_grad_defined": """def _any_grad_defined(grads):
    return any(g is not None for g in grads)""",
    "_strides_or_error": """def _strides_or_error(t, name):
    return t.stride()""",
}
# the names the prelude may define (python_names reserves them)
HELPERS = (*(text[len("def ") : text.index("(")] for text in _ALWAYS), *_WHEN_USED)
# helpers another helper calls
_NEEDS = {
    "_mul_tensor_backward": ("_handle_r_to_c",),
    "_div_tensor_self_backward": ("_handle_r_to_c",),
    "_div_tensor_other_backward": ("_handle_r_to_c",),
}


def elementwise_batched_rule() -> str:
    """The text of ``_elementwise_batched`` (untyped: a module checked by mypy defines it where mypy does not
    look); the classic mode's typed API module registers it too (``emit/python_api.py``)."""
    return _WHEN_USED["_elementwise_batched"]


def prelude(body: str) -> str:
    """The helper definitions ``body`` (the module's sections) calls, always-needed ones first."""
    used = {name for name in _WHEN_USED if re.search(rf"(?<![\w.]){name}\(", body)}
    for name in list(used):
        used.update(_NEEDS.get(name, ()))
    chosen = [text for name, text in _WHEN_USED.items() if name in used]
    return "\n\n\n".join((*_ALWAYS, *chosen))
