"""vtstable: a sample op library on the LibTorch stable ABI, one wheel for every PyTorch from 2.10 on.

Importing it loads the op library into the running PyTorch (any release >= 2.10), then the Python
modules that complete it; the ops are ``torch.ops.vtstable.*``::

    import torch, vtstable
    torch.ops.vtstable.softsign(torch.randn(3))

Load order, for modules generated later (the Python autograd of derivatives.yaml): the library
(schemas, kernels), then ``_fake`` (fake kernels), then every generated module in ``_GENERATED``
that exists, then ``ops`` (the typed API), whose ``install_aoti_c_shims`` makes AOTInductor call the
ops' C shims.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import torch

__all__ = ["library_path", "ops"]

_HERE = Path(__file__).resolve().parent
# Python modules generated from the yaml besides the typed API (e.g. "_autograd": register_autograd
# per op from derivatives.yaml); imported after the library and the fakes when they are installed.
_GENERATED = ("_autograd",)


def library_path() -> str:
    """The shared library holding the ops' schemas and kernels."""
    # Found as if it were a submodule, never imported: in an editable install (editable.rebuild, see
    # pyproject.toml) this first lookup reruns the build, which regenerates _autograd.py after a
    # formula edit (no C++ compiles), then names the library in the install tree.
    spec = importlib.util.find_spec(f"{__name__}._vtstable_ops")
    if spec is None or spec.origin is None:
        raise ImportError(f"vtstable: no op library in {_HERE}")
    return spec.origin


def _say_if_regenerated(started: float) -> None:
    """On stderr, when the lookup above just rewrote a generated module: only in an editable install
    (scikit-build-core's loaders there can rebuild), never for a wheel installed a moment ago.
    CMake's install step copies a file's time in whole seconds: a second of slack."""
    for name in _GENERATED:
        spec = importlib.util.find_spec(f"{__name__}.{name}")
        if spec is None or spec.origin is None or not hasattr(spec.loader, "rebuild"):
            continue
        if os.path.getmtime(spec.origin) >= int(started):
            print(f"vtstable: regenerated {spec.origin}", file=sys.stderr)


_started = time.time()
_LIBRARY = library_path()
torch.ops.load_library(_LIBRARY)
_say_if_regenerated(_started)

from . import _fake  # noqa: E402,F401

for _name in _GENERATED:
    if importlib.util.find_spec(f"{__name__}.{_name}") is not None:
        importlib.import_module(f"{__name__}.{_name}")

from . import ops  # noqa: E402

# AOTInductor packages call the ops' generated C shims (in the library's Register<Key>.cpp) directly,
# not through their proxy executor: Inductor is given the shims' declarations.
ops.install_aoti_c_shims(_LIBRARY)
