"""Calls as PyTorch's C++ formulas spell them, for the Python tier's translated modules; standalone.

A formula is C++: ``at::clone(self_t, memory_format)`` passes a keyword-only argument by position,
``gelu_backward(grad, self, approximate)`` likewise, ``at::special_i0(self)`` names an op torch's
Python namespace does not export, and ``alpha.conj()`` conjugates a ``Scalar``.  The translator spells
these as ``torch.clone(self_t, memory_format)``, ``torch.ops.aten.gelu_backward(...)``,
``torch.special_i0(...)`` and ``alpha.conj()``; here they get the C++ meaning:

- ``CppTorch`` stands for the ``torch`` module inside a translated module: a function that is also an
  aten operator is called as that operator, the arguments bound by position to the first overload's
  schema that takes them, keyword-only ones included, as C++ binds them (``at::sum(self_t, dtype)``
  passes a dtype where ``torch.sum``'s second parameter is ``dim``); torch's own function when no
  overload takes the call; a name torch's namespace lacks is the aten operator of that name;
- ``scalar`` makes a ``Scalar`` argument a number that has ``conj()``, ``isComplex()`` and
  ``isFloatingPoint()`` (the kernels receive Python numbers for ``Scalar``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["CppTorch", "scalar"]

_NO_MATCH = (
    "schema", "invalid combination of arguments", "takes", "positional argument", "unexpected keyword",
    "Expected a value of type", "missing value for argument",
)  # fmt: skip


class _Float(float):
    def conj(self) -> _Float:
        return self

    def isComplex(self) -> bool:
        return False

    def isFloatingPoint(self) -> bool:
        return True


class _Int(int):
    def conj(self) -> _Int:
        return self

    def isComplex(self) -> bool:
        return False

    def isFloatingPoint(self) -> bool:
        return False


class _Complex(complex):
    def conj(self) -> _Complex:
        return _Complex(self.conjugate())

    def isComplex(self) -> bool:
        return True

    def isFloatingPoint(self) -> bool:
        return False


def scalar(value: Any) -> Any:
    """A ``Scalar`` as the formulas read it (``alpha.conj()``): the same number, with ``conj()``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
        return value
    if isinstance(value, complex):
        return _Complex(value)
    return _Float(value) if isinstance(value, float) else _Int(value)


def _rejected(exc: Exception) -> bool:
    return isinstance(exc, TypeError) or any(m in str(exc) for m in _NO_MATCH)


def _by_position(packet: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The first overload of ``packet`` whose schema, bound by position (as C++ does), takes the call; those
    leaving fewer of their parameters to defaults first.

    C++ picks the overload by the arguments' static types; a Python ``None`` fits any optional parameter, so
    ``at::sum(self_t, dtype)`` with no dtype would also bind ``sum.dim_IntList(self_t, dim=None)`` (registered
    first): the same sum, but not under gradcheck's vmap, which fails on that overload's 0-dim samples.  The
    overload the call fills (``sum(self, *, dtype)``) is the one C++ calls."""
    last: Exception | None = None
    overloads = [getattr(packet, name) for name in packet.overloads()]
    given = len(args) + len(kwargs)
    for overload in sorted(overloads, key=lambda o: abs(len(o._schema.arguments) - given)):
        params = overload._schema.arguments
        if not _takes(params, args, kwargs):
            continue
        bound = {p.name: a for p, a in zip(params, args, strict=False)}
        try:
            return overload(**bound, **kwargs)
        except Exception as exc:  # the next overload, as C++ overload resolution would have chosen it
            if not _rejected(exc):
                raise
            last = exc
    raise last or TypeError(f"no overload of aten::{packet.__name__} takes these arguments")


def _takes(params: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether a schema's ``params`` take the call as C++ would bind it: no more arguments than parameters,
    none given twice or by a name no parameter has, and every parameter without a default given
    (``zeros.out(size, *, out)`` does not take ``at::zeros(size, options)``, however close its count)."""
    if len(args) > len(params):
        return False
    filled = {p.name for p, _ in zip(params, args, strict=False)}
    if filled & set(kwargs) or not set(kwargs) <= {p.name for p in params}:
        return False
    filled |= set(kwargs)
    return all(p.name in filled or p.has_default_value() for p in params)


def _plain(value: Any) -> Any:
    """A ``scalar`` as the plain number torch's argument parser wants (it refuses a complex subclass)."""
    return complex(value) if isinstance(value, _Complex) else value


class _Plain:
    """An operator overload (``torch.ops.aten.addmm.default``) called with plain numbers."""

    def __init__(self, overload: Any) -> None:
        self.overload = overload

    def __getattr__(self, name: str) -> Any:
        return getattr(self.overload, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.overload(*map(_plain, args), **{k: _plain(v) for k, v in kwargs.items()})


class _CppCall:
    """A function called with C++'s argument binding when Python's rejects the call."""

    def __init__(self, fn: Any, packet: Any) -> None:
        self.fn, self.packet = fn, packet

    def __getattr__(self, name: str) -> Any:  # an overload (``.default``), the schema, ...
        value = getattr(self.packet, name)
        return _Plain(value) if hasattr(value, "_schema") else value

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """C++'s binding first (``at::sum(t, dtype)`` is not ``torch.sum(t, dim)``), torch's function when no
        overload takes the call (a Python-only spelling: ``torch.zeros_like(t, **options)``)."""
        args, kwargs = tuple(map(_plain, args)), {k: _plain(v) for k, v in kwargs.items()}
        if self.fn is None:
            return _by_position(self.packet, args, kwargs)
        try:
            return _by_position(self.packet, args, kwargs)
        except Exception as exc:
            if not _rejected(exc):
                raise
            return self.fn(*args, **kwargs)


class _Namespace:
    """``torch.ops.aten`` (and ``torch.ops``) whose operators bind as C++ does."""

    def __init__(self, inner: Any, depth: int) -> None:
        self.inner, self.depth = inner, depth

    def __getattr__(self, name: str) -> Any:
        if self.depth == 1 and name.endswith("_symint") and not hasattr(self.inner, name):
            name = name.removesuffix("_symint")  # C++'s SymInt spelling of the same operator
        value = getattr(self.inner, name)
        if self.depth == 0 and name == "aten":
            return _Namespace(value, 1)
        if self.depth == 1 and hasattr(value, "overloads"):
            return _CppCall(value, value)
        return value


def _sum_to(tensor: Any, shape: Any) -> Any:
    """``at::sum_to``: ``tensor`` summed down to ``shape`` (its leading dims, and those ``shape`` has as 1)."""
    shape = tuple(shape)
    if tuple(tensor.shape) == shape:
        return tensor
    lead = tensor.dim() - len(shape)
    dims = [*range(lead), *(lead + i for i, n in enumerate(shape) if n == 1 and tensor.shape[lead + i] != 1)]
    return (tensor.sum(dims, keepdim=True) if dims else tensor).reshape(shape)


_CPP_ONLY = {"sum_to": _sum_to, "sum_to_symint": _sum_to}  # at:: functions that are no operator


class CppTorch:
    """The ``torch`` module as a translated module's formulas use it (module docstring)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.seen: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name not in self.seen:
            self.seen[name] = self._resolve(name)
        return self.seen[name]

    def _resolve(self, name: str) -> Any:
        aten = getattr(self.torch.ops.aten, name, None) if not name.startswith("__") else None
        if name == "ops":
            return _Namespace(self.torch.ops, 0)
        if not hasattr(self.torch, name):
            if aten is None and name in _CPP_ONLY:
                return _CPP_ONLY[name]
            if aten is None:
                raise AttributeError(f"module 'torch' has no attribute '{name}' (nor aten an operator of that name)")
            return _CppCall(None, aten)
        value = getattr(self.torch, name)
        return _CppCall(value, aten) if aten is not None and callable(value) and not isinstance(value, type) else value
