"""vtsample: a sample op library whose autograd kernels vtgen_build generates at build time.

Importing it loads the op library into PyTorch; the ops are then ``torch.ops.vtsample.*``::

    import torch, vtsample
    x = torch.randn(3, requires_grad=True)
    torch.ops.vtsample.softsign(x).sum().backward()
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

import torch

__all__ = ["get_include", "library_path", "ops"]

_HERE = Path(__file__).resolve().parent


def library_path() -> str:
    """The shared library holding the ops' CPU kernels, schemas and autograd kernels."""
    # Found as if it were a submodule (`.so` is an importable suffix), never imported: in an
    # editable install (scikit-build-core's editable.rebuild, see README.md) this lookup first
    # rebuilds what changed, then names the library in the install tree.
    started = time.time()
    spec = importlib.util.find_spec(f"{__name__}._vtsample_ops")
    if spec is None or spec.origin is None:
        raise ImportError(f"vtsample: no op library in {_HERE} (a stub-mode build, VTSAMPLE_USE_TORCH=OFF, has none)")
    if os.path.getmtime(spec.origin) >= started:  # the editable install's lookup rebuilt it just now
        print(f"vtsample: rebuilt the op library ({time.time() - started:.1f} s): {spec.origin}", file=sys.stderr)
    return spec.origin


def get_include() -> str:
    """The directory holding the generated headers (``Functions.h``, ``Functions_<k>.h``) and ``vtsample/helpers.h``."""
    return str(_HERE / "include")


_LIBRARY = library_path()
torch.ops.load_library(_LIBRARY)

# After the ops exist: the Python fake kernels (_fake) and the typed functions calling them
# (ops: vtsample.ops.softsign(x)).
from . import _fake, ops  # noqa: E402,F401

# Under torch.vmap the element-wise ops (`pointwise` in native_functions.yaml) run once on the whole
# batch through their generated batching rules, not through PyTorch's fallback loop.
ops.install_batching_rules()

# AOTInductor packages call the ops' generated C shims (AOTIShims.cpp in the library) directly,
# not through their proxy executor: Inductor is given the shims' declarations.
ops.install_aoti_c_shims(_LIBRARY)
