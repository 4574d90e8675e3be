"""vtstable: a sample op library on the LibTorch stable ABI, one wheel for every PyTorch from 2.10 on.

Importing it loads the op library into the running PyTorch (any release >= 2.10), then the Python
modules that complete it; the ops are ``torch.ops.vtstable.*``::

    import torch, vtstable
    torch.ops.vtstable.softsign(torch.randn(3))

Load order, for modules generated later (the Python autograd of derivatives.yaml): the library
(schemas, kernels), then ``_fake`` (fake kernels), then every generated module in ``_GENERATED``
that exists, then ``ops`` (the typed API).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import torch

__all__ = ["library_path", "ops"]

_HERE = Path(__file__).resolve().parent
# Python modules generated from the yaml besides the typed API (e.g. "_autograd": register_autograd
# per op from derivatives.yaml); imported after the library and the fakes when they are installed.
_GENERATED = ("_autograd",)


def library_path() -> str:
    """The shared library holding the ops' schemas and kernels."""
    spec = importlib.util.find_spec(f"{__name__}._vtstable_ops")
    if spec is None or spec.origin is None:
        raise ImportError(f"vtstable: no op library in {_HERE}")
    return spec.origin


torch.ops.load_library(library_path())

from . import _fake  # noqa: E402,F401

for _name in _GENERATED:
    if importlib.util.find_spec(f"{__name__}.{_name}") is not None:
        importlib.import_module(f"{__name__}.{_name}")

from . import ops  # noqa: E402
