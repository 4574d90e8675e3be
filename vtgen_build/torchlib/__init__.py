"""Building and loading shared libraries against an installed PyTorch.

Shared by ``check --gradcheck``, the tests and the CMake path:

* ``locate``: where a Python's torch keeps its headers and libraries, asked of that
  Python in a child process (vtgen_build itself never imports torch);
* ``build``: compile translation units to objects and link them into one shared
  library, both cached by content;
* ``symbols``: which code in our objects needs symbols the torch libraries do not
  export, so that those roots can be left out of the link;
* ``abi_audit``: a stable-ABI library's undefined symbols against libtorch's stable C shim, each
  outsider traced to the kernel (and yaml line) that reaches it.

May import: ``base``, ``inputs``, ``model``, ``plan``, ``emit``, ``stubs``, ``engine``, ``revisions``,
``compile``.
"""

from __future__ import annotations

from .build import BuildSettings, compile_objects, link_library
from .locate import TorchInstall, locate_torch, torch_of_answer
from .symbols import Excluded, exported_symbols, unlinkable_roots

__all__ = [
    "BuildSettings",
    "Excluded",
    "TorchInstall",
    "compile_objects",
    "exported_symbols",
    "link_library",
    "locate_torch",
    "torch_of_answer",
    "unlinkable_roots",
]
