"""Where the gradcheck child gets calls from: the sample-source interface (child side).

Standalone like ``child.py`` (stdlib and torch only; the child loads it by path).

A *source* is a module (a file beside this one) with ``entries() -> Iterable[Entry]``.
An *entry* is anything with a unique ``name`` and ``calls(dtype, limit)`` giving
``Call`` objects: a function and the inputs gradcheck differentiates (the tensors with
``requires_grad``).  That is all the child needs to

* find which aten ops an entry's call reaches below autograd, forward and backward
  (``reach``: the parent caches this per installed torch and selects entries by it), and
* capture the arguments one of those ops received and gradcheck our kernel of that op
  directly on them (``child.captured_checks``).

Sources, in the order they are asked: PyTorch's OpInfo database (``op_db``, function and
in-place variants), its ModuleInfo database (``module_db``: a module's forward with its
parameters as inputs), then the files named in ``PLUGINS`` (e.g. schema-driven samples).
Entry names are unique across sources: OpInfo ``name[.variant]`` (``"<name> (inplace)"``
for the in-place variant), ``module:<ModuleInfo name>``, a plugin its own prefix.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol

# Further source files beside this one (module names without .py), asked after op_db and module_db.
PLUGINS: tuple[str, ...] = ()


@dataclass(frozen=True)
class Call:
    """One call of an entry: ``fn(*inputs)`` returns a tensor or a tuple of tensors."""

    fn: Callable[..., Any]
    inputs: tuple[Any, ...]  # what gradcheck differentiates: the tensors with requires_grad
    nondet_tol: float = 0.0


class Entry(Protocol):
    @property
    def name(self) -> str:
        """Unique across sources; what the reach map and the results call the entry."""
        ...

    def calls(self, dtype: Any, limit: int) -> Iterator[Call]:
        """Up to ``limit`` calls (0: all) with inputs of ``dtype``; none when it does not support it."""
        ...


def flatten_args(args: tuple[Any, ...]) -> tuple[list[Any], list[int]]:
    """Tensor lists spread into their tensors (gradcheck differentiates top-level tensors only); per
    argument its list length, or -1 (child.py uses these too)."""
    import torch

    flat: list[Any] = []
    lengths: list[int] = []
    for a in args:
        is_list = isinstance(a, (list, tuple)) and bool(a) and all(isinstance(t, torch.Tensor) for t in a)
        lengths.append(len(a) if is_list else -1)
        flat += list(a) if is_list else [a]
    return flat, lengths


def unflatten_args(flat: tuple[Any, ...], lengths: list[int]) -> list[Any]:
    out: list[Any] = []
    at = 0
    for n in lengths:
        out.append(list(flat[at : at + n]) if n >= 0 else flat[at])
        at += n if n >= 0 else 1
    return out


@dataclass(frozen=True)
class OpInfoEntry:
    """An OpInfo's function (or in-place) variant over its CPU samples."""

    name: str
    opinfo: Any
    inplace: bool

    def calls(self, dtype: Any, limit: int) -> Iterator[Call]:
        info = self.opinfo
        op = info.inplace_variant if self.inplace else info.get_op()
        if op is None or dtype not in info.supported_backward_dtypes("cpu"):
            return
        made = 0
        for sample in info.sample_inputs("cpu", dtype, requires_grad=True):
            if self.inplace and getattr(sample, "broadcasts_input", False):
                continue
            yield _opinfo_call(info, op, sample, self.inplace)
            made += 1
            if limit and made >= limit:
                return


def _opinfo_call(info: Any, op: Any, sample: Any, inplace: bool) -> Call:
    flat, lengths = flatten_args((sample.input, *sample.args))

    def fn(*inputs: Any) -> Any:
        args = unflatten_args(inputs, lengths)
        if inplace:
            args[0] = [t.clone() for t in args[0]] if isinstance(args[0], list) else args[0].clone()
        return sample.output_process_fn_grad(info.gradcheck_wrapper(op, *args, **sample.kwargs))

    return Call(fn, tuple(flat), info.gradcheck_nondet_tol)


_FOREACH = ("foreach_unary_op_db", "foreach_binary_op_db", "foreach_pointwise_op_db", "foreach_reduce_op_db")


def opinfo_entries() -> Iterator[Entry]:
    """``op_db``, then the ``_foreach_*`` OpInfos, which PyTorch keeps in lists of their own."""
    from torch.testing._internal import common_methods_invocations as methods

    infos = list(methods.op_db)
    infos += [info for name in _FOREACH for info in getattr(methods, name, [])]
    for info in infos:
        name = str(info.name) + (f".{info.variant_test_name}" if info.variant_test_name else "")
        yield OpInfoEntry(name, info, False)
        if info.inplace_variant is not None:
            yield OpInfoEntry(f"{name} (inplace)", info, True)


@dataclass(frozen=True)
class ModuleEntry:
    """A ModuleInfo's module: its forward over the inputs and parameters gradcheck differentiates."""

    name: str
    info: Any

    def calls(self, dtype: Any, limit: int) -> Iterator[Call]:
        info = self.info
        if info.is_lazy or dtype not in info.dtypes:
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            inputs = info.module_inputs_func(info, device="cpu", dtype=dtype, requires_grad=True, training=True)
        made = 0
        for module_input in inputs:
            call = _module_call(info, module_input, dtype)
            if call is None:
                continue
            yield call
            made += 1
            if limit and made >= limit:
                return


def _module_call(info: Any, module_input: Any, dtype: Any) -> Call | None:
    import torch

    forward = module_input.forward_input
    if forward is None:
        return None
    ctor = module_input.constructor_input
    module = info.module_cls(*ctor.args, **ctor.kwargs).to(dtype=dtype)
    module.train()
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    params = [p.detach().clone().requires_grad_(True) for n, p in module.named_parameters() if p.requires_grad]
    flat, lengths = flatten_args(tuple(forward.args))
    kwargs = forward.kwargs

    def fn(*inputs: Any) -> Any:
        args = unflatten_args(inputs[: len(flat)], lengths)
        values = dict(zip(names, inputs[len(flat) :], strict=True))
        result = torch.func.functional_call(module, values, tuple(args), kwargs)
        return _tensors(result)

    return Call(fn, (*flat, *params), info.gradcheck_nondet_tol)


def _tensors(result: Any) -> Any:
    """A module's result as gradcheck takes it: a tensor, or a flat tuple of tensors."""
    import torch

    if isinstance(result, torch.Tensor):
        return result
    found: list[Any] = []
    for item in result if isinstance(result, (list, tuple)) else []:
        inner = _tensors(item)
        found += list(inner) if isinstance(inner, tuple) else [inner]
    return tuple(found)


def module_entries() -> Iterator[Entry]:
    from torch.testing._internal.common_modules import module_db

    for info in module_db:
        yield ModuleEntry(f"module:{info.name}", info)


def _plugin(name: str) -> ModuleType:
    """A sample source module of this package named in ``PLUGINS``."""
    return importlib.import_module(f"{__package__}.{name}")


def all_entries(wanted: set[str] | None = None) -> Iterator[Entry]:
    """Every source's entries in order (``wanted``: only these names)."""
    sources: list[Callable[[], Iterable[Entry]]] = [opinfo_entries, module_entries]
    sources += [_plugin(name).entries for name in PLUGINS]
    for source in sources:
        for entry in source():
            if wanted is None or entry.name in wanted:
                yield entry
