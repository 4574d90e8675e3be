"""The ABI audit of a stable-ABI library: it may need from libtorch nothing but the stable C shim.

A library built with ``--stable-abi`` loads into every PyTorch from its target on only if each
symbol it leaves undefined is one of these, after linking (``nm -D --undefined-only``):

* a function of libtorch's stable C shim: declared ``AOTI_TORCH_EXPORT`` in a header of
  ``torch/csrc/inductor/aoti_torch/c/`` or ``torch/csrc/stable/c/`` of the torch the library is
  compiled against (``shim_deprecated.h`` excepted: deprecated functions are on their way out);
  the allowed set is read from those headers, not guessed from a ``aoti_torch_``/``torch_`` prefix;
* the C or C++ runtime: a symbol bound to a ``GLIBC_``, ``GLIBCXX_``, ``CXXABI_`` or ``GCC_``
  version, or a weak reference (``__gmon_start__``, ``_ITM_*``).

Anything else (``at::``, ``c10::``, ``torch::`` C++ symbols: libtorch's unstable C++ ABI, or a
kernel declared in ``NativeKernels.h`` that no source defines) is a finding naming the symbol, the
object files that reference it, and the kernels (by their ``NativeKernels.h`` comment: the yaml
line and the op) whose code reaches it through the objects' relocations.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import Location, VtgenError
from .symbols import demangle, reached_undefined

__all__ = ["Finding", "allowed_shim_functions", "audit_library", "kernel_declarations"]

SHIM_DIRS = ("torch/csrc/inductor/aoti_torch/c", "torch/csrc/stable/c")
_EXCLUDED_HEADERS = ("shim_deprecated.h",)
_EXPORT = re.compile(r"\bAOTI_TORCH_EXPORT\b[^;{()]*?\b([A-Za-z_]\w*)\s*\(", re.S)
_RUNTIME_VERSIONS = re.compile(r"@+(GLIBC|GLIBCXX|CXXABI|GCC)_[\d.]+$")
_DECLARED = re.compile(r"^// (.+):(\d+): (.+)\n(?:[^\n;]*?)\b([A-Za-z_]\w*)\(", re.M)
_NAMESPACE = re.compile(r"^namespace (\w+) \{$", re.M)


@dataclass(frozen=True)
class Finding:
    symbol: str  # demangled
    objects: tuple[str, ...]  # the object files referencing it
    kernels: tuple[tuple[Location, str], ...]  # (yaml place, role) of each kernel reaching it

    def message(self) -> str:
        where = f" (referenced in {', '.join(self.objects)})" if self.objects else ""
        return f"'{self.symbol}' is not in libtorch's stable C shim{where}"


def allowed_shim_functions(torch_include: Path) -> frozenset[str]:
    """The functions the stable C-shim headers under ``torch_include`` declare exported."""
    names: set[str] = set()
    for rel in SHIM_DIRS:
        for header in sorted((torch_include / rel).glob("*.h")):
            if header.name not in _EXCLUDED_HEADERS:
                names.update(_EXPORT.findall(header.read_text(encoding="utf-8", errors="replace")))
    if not names:
        raise VtgenError(f"--torch-include {torch_include}: no stable C-shim header there ({', '.join(SHIM_DIRS)})")
    return frozenset(names)


def kernel_declarations(header: Path) -> dict[str, tuple[Location, str]]:
    """``ns::name`` → (yaml place, role) of every function ``NativeKernels.h`` declares."""
    text = header.read_text(encoding="utf-8")
    spans = [(m.start(), m.group(1)) for m in _NAMESPACE.finditer(text)]
    found: dict[str, tuple[Location, str]] = {}
    for m in _DECLARED.finditer(text):
        ns = next((name for start, name in reversed(spans) if start < m.start()), "")
        found.setdefault(f"{ns}::{m.group(4)}", (Location(m.group(1), int(m.group(2))), m.group(3)))
    return found


def _nm(args: Sequence[str]) -> list[list[str]]:
    try:
        out = subprocess.run(["nm", *args], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise VtgenError(f"abi-audit: `nm {' '.join(args)}` failed ({exc})") from None
    return [line.split() for line in out.splitlines() if line.strip()]


def _undefined(library: Path) -> list[str]:
    """The library's undefined dynamic symbols that must be strong and unversioned-runtime (name@version)."""
    rows = _nm(["-D", "--undefined-only", "--with-symbol-versions", str(library)])
    return [row[-1] for row in rows if row[-2] == "U"]  # 'w': weak, resolved or not


def _defined(objects: Sequence[Path]) -> dict[str, str]:
    """Mangled → demangled name of every global function the objects define."""
    names = [row[-1] for obj in objects for row in _nm(["--defined-only", "--extern-only", str(obj)]) if len(row) == 3]
    return dict(zip(names, demangle(names), strict=True))


def audit_library(
    library: Path, objects: Sequence[Path], kernels_header: Path, torch_include: Path
) -> tuple[int, list[Finding]]:
    """(number of undefined symbols checked, findings); no finding: the library is stable-ABI clean."""
    allowed = allowed_shim_functions(torch_include)
    undefined = _undefined(library)
    bad = [s.split("@")[0] for s in undefined if not _RUNTIME_VERSIONS.search(s) and s.split("@")[0] not in allowed]
    if not bad:
        return len(undefined), []
    declared = kernel_declarations(kernels_header)
    defined = _defined(objects)
    roots = {m: declared[d.split("(")[0]] for m, d in defined.items() if d.split("(")[0] in declared}
    reach = reached_undefined(objects, roots)
    users = {str(o): {row[-1] for row in _nm(["--undefined-only", str(o)])} for o in objects}
    findings = []
    for symbol, shown in zip(bad, demangle(bad), strict=True):
        kernels = tuple(sorted({roots[r] for r, reached in reach.items() if symbol in reached}, key=str))
        if not kernels and shown.split("(")[0] in declared:  # a declared kernel no source defines
            kernels = (declared[shown.split("(")[0]],)
        objs = tuple(sorted(Path(o).name for o, names in users.items() if symbol in names))
        findings.append(Finding(shown, objs, kernels))
    return len(undefined), findings
