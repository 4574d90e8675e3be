"""Autocast kernels: which operator gets one, at which Autocast keys, casting which arguments.

An op of the library with an ``autocast:`` policy (``model/autocast.py``) gets a kernel at the
Autocast key of every device its kernels serve in this build: the device keys of its ``dispatch:``
(a structured op's: its out= op's impls) among the registered ones (``--register-backends``), and
every registered device for a ``CompositeExplicitAutograd``/``CompositeImplicitAutograd`` kernel,
which serves them all.  ``CPU`` gives ``AutocastCPU``, ``CUDA`` ``AutocastCUDA``, and so on
(``AUTOCAST_KEYS``); ``Meta`` and the composite keys are no devices.  An op without a policy gets
no Autocast kernel: PyTorch's fallthrough passes the call on untouched, in the dtypes the caller
gave.

The kernel excludes its Autocast key, casts the planned arguments (``castable_arguments``: read
tensors, by schema position and name) and calls the operator again, below autocast.  Both modes
spell it from this plan: C++ boxed kernels in ``Register<Device>.cpp`` (classic,
``emit/autocast.py``), and Python kernels in the generated Python autograd module in the
stable-ABI mode, whose headers have no autocast API (``emit/python_autocast.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..base.errors import Location
from ..model.autocast import castable_arguments
from ..model.native import COMPOSITE_KEYS, NativeFunction

__all__ = [
    "AUTOCAST_KEYS",
    "AutocastDevice",
    "AutocastKernel",
    "AutocastPlan",
    "autocast_unregistered",
    "plan_autocast",
    "registered_keys",
]


@dataclass(frozen=True)
class AutocastDevice:
    """A device's backend key, its Autocast key, and its names in C++ and in Python."""

    backend: str  # CPU
    key: str  # AutocastCPU
    cpp_device: str  # c10::DeviceType::CPU
    python_device: str  # "cpu", as torch.autocast and torch.get_autocast_dtype name it


AUTOCAST_KEYS = {
    d.backend: d
    for d in (
        AutocastDevice("CPU", "AutocastCPU", "c10::DeviceType::CPU", "cpu"),
        AutocastDevice("CUDA", "AutocastCUDA", "c10::DeviceType::CUDA", "cuda"),
        AutocastDevice("XPU", "AutocastXPU", "c10::DeviceType::XPU", "xpu"),
        AutocastDevice("MPS", "AutocastMPS", "c10::DeviceType::MPS", "mps"),
        AutocastDevice("HPU", "AutocastHPU", "c10::DeviceType::HPU", "hpu"),
        AutocastDevice("PrivateUse1", "AutocastPrivateUse1", "c10::DeviceType::PrivateUse1", "privateuseone"),
    )
}


@dataclass(frozen=True)
class AutocastKernel:
    """One operator's Autocast kernel at one device's Autocast key."""

    namespace: str
    op: str  # as registered: ``scale_add``, ``scale_add.out``
    identifier: str  # ``scale_add_out``: unique among the library's operators, a C++/Python name piece
    policy: str  # fp32, promote or lower
    device: AutocastDevice
    casts: tuple[tuple[int, str], ...]  # (schema position, name) of each argument cast
    arguments: int  # how many arguments the schema has (the boxed kernel's stack holds them)
    location: Location  # the op's entry

    @property
    def key(self) -> str:
        return self.device.key


@dataclass(frozen=True)
class AutocastPlan:
    kernels: tuple[AutocastKernel, ...]  # yaml order, then device order

    def at(self, backend: str) -> tuple[AutocastKernel, ...]:
        """The kernels registered at ``backend``'s Autocast key (``CPU``: at ``AutocastCPU``)."""
        return tuple(k for k in self.kernels if k.device.backend == backend)


def _backends(f: NativeFunction, by_name: dict[str, NativeFunction]) -> set[str]:
    """The dispatch keys of ``f``'s kernels (a structured delegate's: its out= op's)."""
    source = by_name.get(str(f.structured_delegate)) if f.structured_delegate is not None else f
    return {d.key for d in source.dispatch} if source is not None else set()


def plan_autocast(functions: Iterable[NativeFunction], registered: tuple[str, ...]) -> AutocastPlan:
    """The Autocast kernels of a build registering the backend keys ``registered`` (resolved: no ``all``)."""
    fns = [f for f in functions if f.namespace != "aten" and not f.generated and not f.manual_kernel_registration]
    by_name = {str(f.name): f for f in fns}
    devices = [AUTOCAST_KEYS[k] for k in AUTOCAST_KEYS if k in registered]
    kernels = []
    for f in fns:
        if f.autocast is None:
            continue
        backends = _backends(f, by_name)
        everywhere = bool(backends & COMPOSITE_KEYS)
        casts = tuple((i, a.name) for i, a in castable_arguments(f.func))
        for device in devices:
            if everywhere or device.backend in backends:
                identifier = f.name.unambiguous_name()
                kernels.append(AutocastKernel(f.namespace, str(f.name), identifier, f.autocast, device, casts,
                                              len(f.func.arguments.all), f.location))  # fmt: skip
    return AutocastPlan(tuple(kernels))


def registered_keys(functions: Iterable[NativeFunction], keys: tuple[str, ...]) -> tuple[str, ...]:
    """``--register-backends`` resolved: ``all`` is every dispatch key the library's yaml names."""
    if keys != ("all",):
        return keys
    return tuple(sorted({d.key for f in functions if f.namespace != "aten" for d in f.dispatch}))


def autocast_unregistered(functions: Iterable[NativeFunction]) -> tuple[str, ...]:
    """``path:line: warning: ...`` per op with a policy in a stable-ABI build without the Python autograd
    module, where its Autocast kernels would be: the policy has no effect there, and says so."""
    return tuple(
        f"{f.location}: warning: autocast: {f.autocast} of {f.namespace}::{f.name} is not registered: a stable-ABI "
        "library's Autocast kernels are Python, in its generated autograd module (PYTHON_AUTOGRAD, --python-autograd)"
        for f in functions
        if f.autocast is not None and f.namespace != "aten" and not f.generated
    )
