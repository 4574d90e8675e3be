"""Run by the Python whose torch is asked about (``locate.py``); standalone: stdlib and torch only.

    python probe.py

Prints one JSON object, its last line: torch's version, where it lies, its headers and libraries,
its C++ ABI, and the modules PyTorch's OpInfo database imports that this Python lacks.
"""

from __future__ import annotations

import importlib
import json
import os
import sys

__all__ = ["probe"]


def probe() -> dict[str, object]:
    here = os.path.dirname(os.path.abspath(__file__))  # run as a script, its directory comes first:
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # no sibling shadows a module
    import torch

    missing = []
    for name in ("numpy", "expecttest"):  # what PyTorch's OpInfo database imports (--gradcheck)
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    root = os.path.dirname(torch.__file__)
    inc = os.path.join(root, "include")
    return {
        "version": torch.__version__,
        "root": root,
        "include_dirs": [inc, os.path.join(inc, "torch", "csrc", "api", "include")],
        "lib_dir": os.path.join(root, "lib"),
        "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
        "missing": missing,
    }


if __name__ == "__main__":
    print(json.dumps(probe()), flush=True)
