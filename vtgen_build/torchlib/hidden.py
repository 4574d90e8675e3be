"""Call the helpers libtorch keeps to itself, at the addresses its own symbol table gives.

The torch wheel exports few of the ``generated::details`` helpers that derivative
formulas call (``handle_r_to_c``, ``maybe_multiply``, ...): they are hidden in
``libtorch_cpu.so``.  Hidden is not absent: the wheel keeps its full symbol table
(``.symtab``), where each such function has its address relative to the library's
load base.  A gradcheck library can therefore call the installed torch's very own
helpers, with no copy of their code:

* ``find_hidden`` reads each library's ``.symtab`` and, for every wanted mangled name,
  finds the one hidden function of that name (or says why it cannot be bound: no
  such function, only data, several candidates, not x86-64);
* ``binding_unit`` writes a translation unit that defines each bound name as a
  two-instruction trampoline jumping through a slot, and a load-time constructor that
  fills the slots with ``load base + address`` (the base of the library already
loaded under that name) once the first bytes there equal the
  bytes the file held at build time.  A slot that cannot be filled keeps a function
  that throws, so a kernel never jumps into the wrong code; the library exports
  ``vtgen_gradcheck_hidden_status()`` saying what happened.
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.store import JSON
from .symbols import section_headers

__all__ = ["STATUS_SYMBOL", "HiddenFunction", "HiddenLookup", "binding_unit", "find_hidden"]

STATUS_SYMBOL = "vtgen_gradcheck_hidden_status"

_EM_X86_64 = 62
_SHT_SYMTAB = 2
_PT_LOAD = 1
_STT_FUNC = 2
_STV_HIDDEN = 2
_HEAD = 32  # bytes of each function compared at load time


@dataclass(frozen=True)
class HiddenFunction:
    mangled: str
    library: str  # file name of the library holding it: libtorch_cpu.so
    address: int  # relative to the library's load base
    head: bytes  # its first bytes in the file


@dataclass(frozen=True)
class HiddenLookup:
    bound: tuple[HiddenFunction, ...]
    unbound: tuple[tuple[str, str], ...]  # (mangled name, why it cannot be bound)

    def names(self) -> frozenset[str]:
        return frozenset(f.mangled for f in self.bound)

    def why(self, mangled: str) -> str | None:
        return next((w for m, w in self.unbound if m == mangled), None)

    def to_json(self) -> list[JSON]:
        rows: list[JSON] = [[f.mangled, f.library, f.address, f.head.hex()] for f in self.bound]
        return rows + [[m, w] for m, w in self.unbound]

    @classmethod
    def from_json(cls, rows: object) -> HiddenLookup | None:
        """The lookup a cache record holds (None when it is not one)."""
        if not isinstance(rows, list):
            return None
        bound: list[HiddenFunction] = []
        unbound: list[tuple[str, str]] = []
        for row in rows:
            if isinstance(row, list) and len(row) == 2 and all(isinstance(x, str) for x in row):
                unbound.append((row[0], row[1]))
            elif isinstance(row, list) and len(row) == 4 and isinstance(row[2], int) and isinstance(row[3], str):
                try:
                    bound.append(HiddenFunction(str(row[0]), str(row[1]), row[2], bytes.fromhex(row[3])))
                except ValueError:
                    return None
            else:
                return None
        return cls(tuple(bound), tuple(unbound))


@dataclass(frozen=True)
class _Candidate:
    library: str
    address: int
    size: int
    hidden: bool
    function: bool
    head: bytes


def _segments(data: mmap.mmap) -> list[tuple[int, int, int]]:
    """(virtual address, file offset, file size) of each loadable segment."""
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    rows = [struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    return [(r[3], r[2], r[5]) for r in rows if r[0] == _PT_LOAD]


def _file_bytes(data: mmap.mmap, segments: list[tuple[int, int, int]], address: int, size: int) -> bytes:
    for vaddr, offset, filesz in segments:
        if vaddr <= address < vaddr + filesz:
            start = offset + address - vaddr
            return bytes(data[start : start + min(size, _HEAD, vaddr + filesz - address)])
    return b""


def _symtab(data: mmap.mmap) -> tuple[int, int, int] | None:
    """(offset, size, string table offset) of the full symbol table, None when stripped."""
    *sections, _names = section_headers(data)
    for _name, kind, offset, size, link, _info in sections:
        if kind == _SHT_SYMTAB:
            return offset, size, sections[link][2]
    return None


def _candidates(path: Path, wanted: frozenset[bytes]) -> dict[str, list[_Candidate]]:
    """Every definition in ``path``'s symbol table of a wanted name."""
    found: dict[str, list[_Candidate]] = {}
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
            return found
        table = _symtab(data)
        if table is None:
            return found
        segments = _segments(data)
        offset, size, strings = table
        for name, info, other, shndx, value, length in struct.iter_unpack("<IBBHQQ", data[offset : offset + size]):
            if shndx == 0 or value == 0:
                continue
            start = strings + name
            text = data[start : data.find(b"\0", start)]
            if text not in wanted:
                continue
            function = info & 0xF == _STT_FUNC and length > 0
            head = _file_bytes(data, segments, value, length) if function else b""
            candidate = _Candidate(path.name, value, length, other & 3 == _STV_HIDDEN, function, head)
            found.setdefault(text.decode(), []).append(candidate)
    return found


def _machine(path: Path) -> int:
    with open(path, "rb") as f:
        head = f.read(20)
    return struct.unpack_from("<H", head, 18)[0] if len(head) == 20 else -1


def _choose(name: str, candidates: list[_Candidate]) -> HiddenFunction | str:
    functions = [c for c in candidates if c.function and c.head]
    hidden = [c for c in functions if c.hidden] or functions
    if len(hidden) == 1:
        c = hidden[0]
        return HiddenFunction(name, c.library, c.address, c.head)
    if not candidates:
        return "not in libtorch's symbol table (inlined or not built)"
    if not functions:
        return "libtorch holds it as data, which cannot be bound"
    return f"{len(hidden)} functions of that name in libtorch's symbol table"


def find_hidden(libraries: Sequence[Path], wanted: Iterable[str]) -> HiddenLookup:
    """Where each of ``wanted`` (mangled names) lives in ``libraries``, or why it cannot be called."""
    names = sorted(set(wanted))
    if not names:
        return HiddenLookup((), ())
    if any(_machine(lib) != _EM_X86_64 for lib in libraries):
        return HiddenLookup((), tuple((n, "binding hidden helpers is implemented for x86-64 only") for n in names))
    wanted_bytes = frozenset(n.encode() for n in names)
    everywhere: dict[str, list[_Candidate]] = {}
    for lib in libraries:
        for name, found in _candidates(lib, wanted_bytes).items():
            everywhere.setdefault(name, []).extend(found)
    bound: list[HiddenFunction] = []
    unbound: list[tuple[str, str]] = []
    for name in names:
        choice = _choose(name, everywhere.get(name, []))
        if isinstance(choice, str):
            unbound.append((name, choice))
        else:
            bound.append(choice)
    return HiddenLookup(tuple(bound), tuple(unbound))


_PRELUDE = """\
// Generated by vtgen-build check --gradcheck: libtorch's own hidden helpers, called
// at the addresses its symbol table gives (checked against their first bytes at load).
#include <dlfcn.h>
#include <link.h>
#include <cstdint>
#include <cstring>
#include <stdexcept>

extern "C" [[noreturn]] void vtgen_hidden_unbound() {
  throw std::runtime_error("vtgen-build: this kernel calls a libtorch helper that could not be bound; see "
                           "vtgen_gradcheck_hidden_status()");
}

namespace {
struct VtgenLib { const char* name; std::uintptr_t base; };
struct VtgenFn { int lib; std::uintptr_t address; unsigned size; const char* head; };
}  // namespace
"""

_BINDER = """
namespace {
const char* vtgen_status = "no helper bound yet";

// The load base of a library already loaded (as a dependency of this one, or earlier).
bool vtgen_find_base(VtgenLib& lib) {
  void* handle = dlopen(lib.name, RTLD_LAZY | RTLD_NOLOAD);
  link_map* map = nullptr;
  if (handle == nullptr) return false;
  bool found = dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr;
  if (found) lib.base = map->l_addr;
  dlclose(handle);
  return found;
}

__attribute__((constructor)) void vtgen_bind_hidden() {
  for (auto& lib : vtgen_libs) {
    if (!vtgen_find_base(lib)) { vtgen_status = "a torch library is not loaded"; return; }
  }
  for (unsigned i = 0; i < sizeof(vtgen_fns) / sizeof(vtgen_fns[0]); ++i) {
    const VtgenFn& fn = vtgen_fns[i];
    const void* at = reinterpret_cast<const void*>(vtgen_libs[fn.lib].base + fn.address);
    if (std::memcmp(at, fn.head, fn.size) != 0) {
      vtgen_status = "the loaded torch library differs from the one the library was built against";
      return;
    }
  }
  for (unsigned i = 0; i < sizeof(vtgen_fns) / sizeof(vtgen_fns[0]); ++i) {
    vtgen_hidden_slot[i] = reinterpret_cast<void*>(vtgen_libs[vtgen_fns[i].lib].base + vtgen_fns[i].address);
  }
  vtgen_status = "ok";
}
}  // namespace

extern "C" __attribute__((visibility("default"))) const char* %(status)s() { return vtgen_status; }
"""


def _c_bytes(data: bytes) -> str:
    return '"' + "".join(f"\\x{b:02x}" for b in data) + '"'


def _trampoline(i: int, name: str) -> str:
    return (
        f'asm(".pushsection .text.vtgen_hidden_{i},\\"ax\\",@progbits\\n"\n'
        f'    ".globl {name}\\n.hidden {name}\\n.type {name},@function\\n.p2align 4\\n"\n'
        f'    "{name}:\\nendbr64\\njmp *vtgen_hidden_slot+{8 * i}(%rip)\\n"\n'
        f'    ".size {name},.-{name}\\n.popsection\\n");\n'
    )


def binding_unit(functions: Sequence[HiddenFunction]) -> str:
    """A translation unit defining each of ``functions`` as a jump into the loaded libtorch."""
    if not functions:
        raise ValueError("no function to bind")
    libs = list(dict.fromkeys(f.library for f in functions))
    parts = [_PRELUDE, f'extern "C" {{\nvoid* vtgen_hidden_slot[{len(functions)}] = {{']
    parts += [f"    reinterpret_cast<void*>(&vtgen_hidden_unbound),  // {f.mangled}" for f in functions]
    parts.append("};\n}\n")
    parts += [_trampoline(i, f.mangled) for i, f in enumerate(functions)]
    parts.append("namespace {")
    parts.append("VtgenLib vtgen_libs[] = {" + ", ".join(f"{{{json.dumps(lib)}, 0}}" for lib in libs) + "};")
    rows = [f"  {{{libs.index(f.library)}, {f.address:#x}u, {len(f.head)}, {_c_bytes(f.head)}}}," for f in functions]
    parts.append("const VtgenFn vtgen_fns[] = {\n" + "\n".join(rows) + "\n};")
    parts.append("}  // namespace")
    parts.append(_BINDER % {"status": STATUS_SYMBOL})
    return "\n".join(parts)
