"""Which code in our objects needs symbols the torch libraries keep to themselves.

The torch wheel hides most of libtorch's internals (``nm -D`` lists what it
exports).  An object's sections reference one another and outside symbols through
relocations (read from the ELF file itself); from each root (a function registering one kernel) we
follow those references across our objects and collect the undefined torch
symbols it reaches that no torch library exports.  A root reaching one cannot be
linked into a loadable library; every other root can, because the linker
(``--gc-sections``) keeps only what the kept roots reach.
"""

from __future__ import annotations

import mmap
import re
import struct
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Excluded", "demangle", "exported_symbols", "reached_undefined", "section_headers", "unlinkable_roots"]

# A torch, ATen, c10 or caffe2 entity (function, vtable, typeinfo) by its mangled name.
_TORCH_SYMBOL = re.compile(r"_Z(?:T[VIS]|GV)?N[KVrRO]*(?:5torch|2at|3c10|6caffe2)\d")


@dataclass(frozen=True)
class Excluded:
    root: str
    missing: tuple[str, ...]  # demangled names of the symbols it needs that torch does not export
    symbols: tuple[str, ...] = ()  # the same, mangled


def exported_symbols(libraries: Iterable[Path]) -> frozenset[str]:
    """Mangled names of the symbols the dynamic tables of ``libraries`` define."""
    names: set[str] = set()
    for lib in libraries:
        out = subprocess.run(["nm", "-D", "--defined-only", "-P", str(lib)], capture_output=True, text=True, check=True)
        names.update(line.split(" ", 1)[0] for line in out.stdout.splitlines() if line)
    return frozenset(names)


def demangle(names: Sequence[str]) -> list[str]:
    if not names:
        return []
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True, text=True, check=False)
    shown = out.stdout.splitlines()
    return shown if len(shown) == len(names) else list(names)


Node = tuple[int, int]  # (object, section)


@dataclass
class _Graph:
    edges: dict[Node, set[Node | str]] = field(default_factory=dict)  # str: an undefined symbol
    defined: dict[str, Node] = field(default_factory=dict)  # global symbols of every object


_SHN_UNDEF, _SHN_LORESERVE, _SHN_XINDEX = 0, 0xFF00, 0xFFFF
_SHT_SYMTAB, _SHT_RELA, _SHT_SYMTAB_SHNDX = 2, 4, 18
_STT_SECTION = 3
_STB_LOCAL = 0


def section_headers(data: bytes | mmap.mmap) -> list[tuple[int, int, int, int, int, int]]:
    """(name, type, offset, size, link, info) of every section of a little-endian ELF64 object."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a little-endian ELF64 object")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    first = struct.unpack_from("<IIQQQQIIQQ", data, shoff)
    shnum = shnum or first[5]  # more than 0xff00 sections: the count is in section 0
    if shstrndx == _SHN_XINDEX:
        shstrndx = first[6]
    rows = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    return [(r[0], r[1], r[4], r[5], r[6], r[7]) for r in rows] + [(shstrndx, -1, 0, 0, 0, 0)]


def _string(data: bytes, table: int, at: int) -> str:
    end = data.index(b"\0", table + at)
    return data[table + at : end].decode("utf-8", "replace")


def _add_object(graph: _Graph, o: int, path: Path) -> None:
    """The object's sections as graph nodes, its relocations as edges (read from the ELF directly)."""
    data = path.read_bytes()
    *sections, _names = section_headers(data)
    symtab = next(i for i, s in enumerate(sections) if s[1] == _SHT_SYMTAB)
    _, _, sym_off, sym_size, strtab, _ = sections[symtab]
    str_off = sections[strtab][2]
    xindex = next((s for s in sections if s[1] == _SHT_SYMTAB_SHNDX and s[4] == symtab), None)
    extended = struct.unpack_from(f"<{xindex[3] // 4}I", data, xindex[2]) if xindex else ()
    targets: list[Node | str] = []
    for i, (name, info, _other, shndx, _value, _size) in enumerate(
        struct.iter_unpack("<IBBHQQ", data[sym_off : sym_off + sym_size])
    ):
        if shndx == _SHN_XINDEX:
            shndx = extended[i]
        elif shndx >= _SHN_LORESERVE:
            targets.append("")  # absolute or common: nothing to follow
            continue
        if shndx == _SHN_UNDEF:
            targets.append(_string(data, str_off, name))
        else:
            node = (o, shndx)
            targets.append(node)
            if info >> 4 != _STB_LOCAL and info & 0xF != _STT_SECTION:
                graph.defined.setdefault(_string(data, str_off, name), node)
    for _name, kind, offset, size, link, target in sections:
        if kind != _SHT_RELA or link != symtab:
            continue
        edges = graph.edges.setdefault((o, target), set())
        for _where, rel_info, _addend in struct.iter_unpack("<QQq", data[offset : offset + size]):
            dst = targets[rel_info >> 32]
            if dst != "":
                edges.add(dst)


def _reach(graph: _Graph, root: Node, exported: frozenset[str]) -> set[str]:
    seen: set[Node] = set()
    stack = [root]
    missing: set[str] = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for dst in graph.edges.get(node, ()):
            if isinstance(dst, str):
                owner = graph.defined.get(dst)
                if owner is not None:
                    stack.append(owner)
                elif dst not in exported and _TORCH_SYMBOL.match(dst):
                    missing.add(dst)
            else:
                stack.append(dst)
    return missing


def unlinkable_roots(
    objects: Sequence[Path], roots: Mapping[str, str], exported: frozenset[str]
) -> dict[str, Excluded]:
    """For each root symbol (mangled name → label) that reaches a hidden torch symbol: why.

    Roots whose symbol is defined in no object are reported with an empty ``missing``.
    """
    graph = _Graph()
    for o, obj in enumerate(objects):
        _add_object(graph, o, obj)
    found: dict[str, Excluded] = {}
    for symbol, label in roots.items():
        node = graph.defined.get(symbol)
        if node is None:
            found[label] = Excluded(label, ())
            continue
        missing = sorted(_reach(graph, node, exported))
        if missing:
            found[label] = Excluded(label, tuple(demangle(missing)), tuple(missing))
    return found


def reached_undefined(objects: Sequence[Path], roots: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each root symbol (mangled) defined in ``objects``: every symbol it reaches that no object defines."""
    graph = _Graph()
    for o, obj in enumerate(objects):
        _add_object(graph, o, obj)
    found: dict[str, frozenset[str]] = {}
    for symbol in roots:
        node = graph.defined.get(symbol)
        if node is None:
            continue
        seen: set[Node] = set()
        stack, undefined = [node], set()
        while stack:
            here = stack.pop()
            if here in seen:
                continue
            seen.add(here)
            for dst in graph.edges.get(here, ()):
                if isinstance(dst, str):
                    owner = graph.defined.get(dst)
                    if owner is None:
                        undefined.add(dst)
                    else:
                        stack.append(owner)
                else:
                    stack.append(dst)
        found[symbol] = frozenset(undefined)
    return found
