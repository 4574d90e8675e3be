"""The ABI audit of a stable-ABI library: it may need from libtorch nothing but the stable C shim.

A library built with ``--stable-abi`` loads into every PyTorch from its target on only if each
symbol it leaves undefined is one of these, after linking (``nm -D --undefined-only``):

* a function of libtorch's stable C shim: declared ``AOTI_TORCH_EXPORT`` in a header of
  ``torch/csrc/inductor/aoti_torch/c/`` or ``torch/csrc/stable/c/`` of the torch the library is
  compiled against (``shim_deprecated.h`` excepted: deprecated functions are on their way out);
  the allowed set is read from those headers, not guessed from a ``aoti_torch_``/``torch_`` prefix;
* the C or C++ runtime and the compiler's runtimes: a symbol bound to a version of glibc (libc,
  libm: ``GLIBC_``), libstdc++ (``GLIBCXX_``, ``CXXABI_``), libgcc_s (``GCC_``), GNU OpenMP
  (libgomp, which the torch wheel itself ships: ``GOMP_``, ``OMP_``, ``GOMP_PLUGIN_``), libatomic
  (``LIBATOMIC_``) or libquadmath (``QUADMATH_``); LLVM's or Intel's OpenMP (``__kmpc_*``, ``omp_*``,
  ``kmp_*`` at ``VERSION``); or a weak reference (``__gmon_start__``, ``_ITM_*``);
* what the author allows (``Allowed``): a symbol matching a glob (``--allow``), or one a given
  library of the author's own dependencies exports (``--allow-library``; never libtorch's or c10's).

Anything else is a finding naming the symbol, the object files that reference it, and the kernels
(by their ``NativeKernels.h`` comment: the yaml line and the op) whose code reaches it through the
objects' relocations; a finding says whether the symbol is libtorch's (``at::``, ``c10::``,
``torch::``, an ``aoti_torch_``/``torch_`` function outside the stable shim: the unstable ABI, or a
kernel declared in ``NativeKernels.h`` that no source defines) or of another library.

What the audit cannot see: a library that looks a libtorch symbol up at run time
(``dlsym(RTLD_DEFAULT, "_ZN2at4_ops...")``) leaves no undefined symbol; the audit is static.
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..base.errors import Location, VtgenError
from .symbols import demangle, reached_undefined

__all__ = ["Allowed", "Finding", "allowed_shim_functions", "audit_library", "is_runtime", "kernel_declarations"]

SHIM_DIRS = ("torch/csrc/inductor/aoti_torch/c", "torch/csrc/stable/c")
_EXCLUDED_HEADERS = ("shim_deprecated.h",)
_EXPORT = re.compile(r"\bAOTI_TORCH_EXPORT\b[^;{()]*?\b([A-Za-z_]\w*)\s*\(", re.S)
_RUNTIME_VERSIONS = re.compile(r"@+(GLIBC|GLIBCXX|CXXABI|GCC|GOMP|GOMP_PLUGIN|OMP|LIBATOMIC|QUADMATH)_[\d.]+$")
_LLVM_OPENMP = re.compile(r"^(__kmpc_|omp_|kmp_|ompt_)\w*@+VERSION$")  # libomp, libiomp5
_TORCH_CPP = re.compile(r"^(\(anonymous namespace\)::)?(at|c10|torch|caffe2)::")
_TORCH_C = ("aoti_torch_", "torch_")
_TORCH_LIBRARIES = re.compile(r"^lib(torch|c10|shm)\w*\.(so|dylib)")
_DECLARED = re.compile(r"^// (.+):(\d+): (.+)\n(?:[^\n;]*?)\b([A-Za-z_]\w*)\(", re.M)
_NAMESPACE = re.compile(r"^namespace (\w+) \{$", re.M)


@dataclass(frozen=True)
class Finding:
    symbol: str  # demangled
    objects: tuple[str, ...]  # the object files referencing it
    kernels: tuple[tuple[Location, str], ...]  # (yaml place, role) of each kernel reaching it
    # "torch": libtorch's (its C++ API, or a C function outside the stable shim); "kernel": declared in
    # NativeKernels.h, defined by no linked source; "other": another library's
    kind: str = "torch"

    def message(self) -> str:
        where = f" (referenced in {', '.join(self.objects)})" if self.objects else ""
        if self.kind == "torch":
            return f"'{self.symbol}' is not in libtorch's stable C shim{where}"
        if self.kind == "kernel":
            return f"'{self.symbol}' is a kernel NativeKernels.h declares and no linked source defines{where}"
        return (
            f"'{self.symbol}' is neither libtorch's stable C shim nor the C/C++ or compiler runtime{where}: "
            "a library the op library depends on? allow it (--allow GLOB, --allow-library LIB; CMake: "
            "ABI_AUDIT_ALLOW, ABI_AUDIT_ALLOW_LIBRARIES)"
        )


@dataclass(frozen=True)
class Allowed:
    """What the author allows besides the stable shim and the runtimes: symbols matching ``globs`` (the
    mangled or the demangled name), and every dynamic symbol ``libraries`` define (their own dependencies)."""

    globs: tuple[str, ...] = ()
    libraries: tuple[Path, ...] = ()
    names: frozenset[str] = field(default=frozenset(), compare=False)  # read from ``libraries`` (``read``)

    def read(self) -> Allowed:
        """With the names the libraries export; a missing file or one of libtorch's is an error."""
        names: set[str] = set()
        for library in self.libraries:
            if _TORCH_LIBRARIES.match(library.name):
                raise VtgenError(
                    f"abi-audit: --allow-library {library}: libtorch's own libraries are what the audit checks "
                    "against: their stable C shim is allowed already, the rest is not"
                )
            if not library.is_file():
                raise VtgenError(f"abi-audit: --allow-library {library}: no such file")
            names.update(row[-1].split("@")[0] for row in _nm(["-D", "--defined-only", str(library)]) if row)
        return Allowed(self.globs, self.libraries, frozenset(names))

    def allows(self, symbol: str, shown: str) -> bool:
        return symbol in self.names or any(fnmatch.fnmatchcase(n, g) for g in self.globs for n in (symbol, shown))


def is_runtime(symbol: str) -> bool:
    """Is ``symbol`` (``name@version`` as ``nm --with-symbol-versions`` prints it) the C/C++ or a compiler runtime's?"""
    return bool(_RUNTIME_VERSIONS.search(symbol) or _LLVM_OPENMP.match(symbol))


def _is_torch(symbol: str, shown: str) -> bool:
    return bool(_TORCH_CPP.match(shown)) or symbol.startswith(_TORCH_C)


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
    library: Path, objects: Sequence[Path], kernels_header: Path, torch_include: Path, allow: Allowed = Allowed()
) -> tuple[int, list[Finding]]:
    """(number of undefined symbols checked, findings); no finding: the library is stable-ABI clean."""
    shim = allowed_shim_functions(torch_include)
    allow = allow.read()
    undefined = _undefined(library)
    left = [s.split("@")[0] for s in undefined if not is_runtime(s) and s.split("@")[0] not in shim]
    bad = [s for s, shown in zip(left, demangle(left), strict=True) if not allow.allows(s, shown)]
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
        kind = "kernel" if shown.split("(")[0] in declared else "torch" if _is_torch(symbol, shown) else "other"
        findings.append(Finding(shown, objs, kernels, kind))
    return len(undefined), findings
