"""A PyTorch source checkout's helper definitions, built into the gradcheck library.

Formulas call helpers of ``torch::autograd::generated::details`` that the torch
wheel keeps to itself.  When ``--pytorch-root`` is a source checkout holding
``torch/csrc/autograd/FunctionsManual.cpp``, that file is compiled and linked into
the library, so kernels calling its helpers link.  It is compiled with the code
flags of every other unit against the installed torch's own headers only: it is
libtorch's file, written against libtorch's generated/Functions.h (which the
check build shadows with ours for the kernel units; PyTorch's file relies on what
the real one declares, ``using c10::fmap`` for one).  Its helpers' declarations
come from the same FunctionsManual.h either way.  The unit's text only includes
the file by its absolute path: the content cache then tracks the file and whatever
it includes through the compiler's depfile.

A checkout whose file does not compile against the installed torch is reported at
its first error; the run goes on without it (its kernels are left out, as before).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from ..compile import first_error
from ..inputs.paths import find_pytorch_layout
from ..torchlib.build import BuildSettings, CompiledUnit

__all__ = ["MANUAL_SOURCE", "ManualSource", "find_manual_source"]

MANUAL_SOURCE = "torch/csrc/autograd/FunctionsManual.cpp"  # in a PyTorch source checkout
_UNIT = "vtgen_functions_manual"


@dataclass(frozen=True)
class ManualSource:
    """The FunctionsManual.cpp of a source checkout."""

    path: Path  # absolute

    def unit(self) -> tuple[str, str]:
        """``(name, text)`` of the translation unit compiling the file."""
        head = "// vtgen-build check --gradcheck: the helpers of a PyTorch checkout\n"
        return _UNIT, f"{head}#include {json.dumps(str(self.path))}\n"

    def settings(self, base: BuildSettings) -> BuildSettings:
        """``base`` without the check build's include directories: the installed torch's headers only."""
        return replace(base, extra_flags=())

    def compiled(self, units: tuple[CompiledUnit, ...]) -> CompiledUnit | None:
        """The result of compiling this file among ``units`` (None: it was not compiled)."""
        return next((u for u in units if u.name == _UNIT), None)

    def summary(self, units: tuple[CompiledUnit, ...], torch_version: str) -> str:
        """One report line: where the helpers came from, or why the file was left out."""
        unit = self.compiled(units)
        if unit is None:
            return f"helpers: {self.path} was not compiled"
        if unit.object is None:
            return (
                f"{first_error(unit.diagnostics)}\n"
                f"  (compiling {self.path} against torch {torch_version}: the checkout's helpers are left out, "
                "and the kernels needing helpers libtorch does not export are not run)"
            )
        how = f"compiled now in {unit.seconds:.1f}s" if unit.compiled else "cached"
        return f"helpers libtorch does not export: from the checkout's {self.path} ({how})"


def find_manual_source(pytorch_root: str | None) -> ManualSource | None:
    """The checkout's FunctionsManual.cpp when ``pytorch_root`` is a source checkout that has one."""
    if not pytorch_root:
        return None
    layout = find_pytorch_layout(pytorch_root)
    path = Path(pytorch_root) / MANUAL_SOURCE
    if not layout.checkout or not path.is_file():
        return None
    return ManualSource(path.resolve())
