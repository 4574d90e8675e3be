"""Spelling the stable-ABI mode's Autocast kernels in Python, at the end of the generated autograd module.

The stable headers have no autocast API, and ``torch.library.register_autocast`` casts to one dtype
and refuses keyword arguments (an out= op, a keyword-only ``alpha``).  So, from ``plan/autocast.py``,
each kernel is a Python function registered with ``torch.library.Library(ns, "IMPL").impl(op, fn,
"Autocast<Device>")``: it takes the call as the dispatcher hands it over (positional arguments, and
keyword-only ones by name, a defaulted one possibly absent), casts the planned arguments the call
holds, and calls the operator again with its Autocast key excluded (``torch._C._ExcludeDispatchKeyGuard``,
as PyTorch's C++ autocast kernels do), so it dispatches below autocast, to the Python autograd and
the C++ kernels.  Unlike PyTorch's C++ cast, a cast weight is not cached for the autocast region.
"""

from __future__ import annotations

from ..plan.autocast import AutocastKernel, AutocastPlan
from ..translate import attribute, comment, string

__all__ = ["python_autocast"]

_HELPERS = '''

# -- autocast: the `autocast:` policies of native_functions.yaml (vtgen_build.plan.autocast) -----------
import torch  # noqa: E402

_AUTOCAST_LIBRARY = torch.library.Library({namespace!r}, "IMPL")


def _autocast_cast(value, to, device):
    """A floating tensor of ``device`` (not float64) as ``to``; lists element-wise; anything else as it is."""
    if isinstance(value, torch.Tensor):
        eligible = value.device.type == device and value.is_floating_point() and value.dtype != torch.float64
        return value.to(to) if eligible and value.dtype != to else value
    if isinstance(value, (list, tuple)):
        return [_autocast_cast(v, to, device) for v in value]
    return value


def _autocast_widest(value, to, device):
    if isinstance(value, torch.Tensor):
        eligible = value.device.type == device and value.is_floating_point() and value.dtype != torch.float64
        return torch.promote_types(to, value.dtype) if eligible else to
    if isinstance(value, (list, tuple)):
        for v in value:
            to = _autocast_widest(v, to, device)
    return to


def _autocast_call(op, excluded, device, policy, casts, args, kwargs):
    """Cast the arguments at ``casts`` ((position, name): positional, else by name) and call ``op`` below autocast."""
    args, kwargs = list(args), dict(kwargs)
    held = [(args, i) if i < len(args) else (kwargs, name) for i, name in casts if i < len(args) or name in kwargs]
    to = torch.float32 if policy == "fp32" else torch.get_autocast_dtype(device)
    if policy == "promote":
        for where, at in held:
            to = _autocast_widest(where[at], to, device)
    for where, at in held:
        where[at] = _autocast_cast(where[at], to, device)
    with torch._C._ExcludeDispatchKeyGuard(excluded):
        return op(*args, **kwargs)
'''


def _function(k: AutocastKernel) -> str:
    return f"_autocast_{k.identifier}_{k.key}"


def _kernel(k: AutocastKernel) -> str:
    name, _, overload = k.op.partition(".")
    op = attribute(attribute(attribute("torch.ops", k.namespace), name), overload or "default")
    casts = "(" + "".join(f"({i}, {string(n)}), " for i, n in k.casts) + ")"
    excluded = f"torch._C.DispatchKeySet(torch._C.DispatchKey.{k.key})"
    return (
        f"\n\n# {comment(str(k.location))}: autocast: {k.policy} of {comment(k.namespace + '::' + k.op)}\n"
        f"def {_function(k)}(*args, **kwargs):\n"
        f"    return _autocast_call({op}, {excluded}, {k.device.python_device!r}, {k.policy!r}, {casts}, args,"
        f" kwargs)\n"
        f"\n\n_AUTOCAST_LIBRARY.impl({string(k.op)}, {_function(k)}, {k.key!r})\n"
    )


def python_autocast(plan: AutocastPlan) -> str:
    """The module's autocast part: empty when no op has a policy (one namespace: the library's)."""
    if not plan.kernels:
        return ""
    namespace = plan.kernels[0].namespace
    return _HELPERS.format(namespace=namespace) + "".join(_kernel(k) for k in plan.kernels)
