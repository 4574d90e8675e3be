"""Which code in our objects needs symbols the torch libraries keep to themselves.

The torch wheel hides most of libtorch's internals (``nm -D`` lists what it
exports).  An object's sections reference one another and outside symbols through
relocations (``readelf``); from each root (a function registering one kernel) we
follow those references across our objects and collect the undefined torch
symbols it reaches that no torch library exports.  A root reaching one cannot be
linked into a loadable library; every other root can, because the linker
(``--gc-sections``) keeps only what the kept roots reach.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Excluded", "demangle", "exported_symbols", "unlinkable_roots"]

# A torch, ATen, c10 or caffe2 entity (function, vtable, typeinfo) by its mangled name.
_TORCH_SYMBOL = re.compile(r"_Z(?:T[VIS]|GV)?N[KVrRO]*(?:5torch|2at|3c10|6caffe2)\d")
_SECTION = re.compile(r"^\s*\[\s*(\d+)\]\s+(\S+)")
_SYMBOL = re.compile(r"^\s*\d+:\s+[0-9a-f]+\s+\d+\s+(\w+)\s+(\w+)\s+\w+\s+(\w+)\s+(\S+)")
_RELA = re.compile(r"^Relocation section '\.rela?([^']+)'")


@dataclass(frozen=True)
class Excluded:
    root: str
    missing: tuple[str, ...]  # demangled names of the symbols it needs that torch does not export


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


def _readelf(obj: Path) -> str:
    command = ["readelf", "-W", "-S", "-s", "-r", str(obj)]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


def _add_object(graph: _Graph, o: int, text: str) -> None:
    sections: dict[str, int] = {}
    local: dict[str, Node] = {}
    undefined: set[str] = set()
    relocations: list[tuple[str, str]] = []  # (section, symbol)
    target: str | None = None
    part = ""
    for line in text.splitlines():
        if line.startswith("Section Headers:"):
            part = "sections"
        elif line.startswith("Symbol table"):
            part = "symbols"
        elif (m := _RELA.match(line)) is not None:
            part, target = "relocations", m.group(1)
        elif part == "sections" and (m := _SECTION.match(line)):
            sections[m.group(2)] = int(m.group(1))
        elif part == "symbols" and (m := _SYMBOL.match(line)):
            kind, bind, ndx, name = m.groups()
            if ndx == "UND":
                undefined.add(name)
            elif ndx.isdigit() and kind != "SECTION" and kind != "FILE":
                (graph.defined if bind != "LOCAL" else local).setdefault(name, (o, int(ndx)))
        elif part == "relocations" and target is not None:
            cols = line.split()
            if len(cols) >= 5 and cols[0][:1].isdigit() and cols[2].startswith("R_"):
                relocations.append((target, cols[4]))
    for name, index in sections.items():
        local.setdefault(name, (o, index))  # a relocation against a section symbol shows its name
    for section, name in relocations:
        src = (o, sections.get(section, -1))
        dst: Node | str | None = local.get(name) or (name if name in undefined else None)
        if dst is None:
            dst = name  # a global of this object: resolved with the others below
        graph.edges.setdefault(src, set()).add(dst)


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
        _add_object(graph, o, _readelf(obj))
    found: dict[str, Excluded] = {}
    for symbol, label in roots.items():
        node = graph.defined.get(symbol)
        if node is None:
            found[label] = Excluded(label, ())
            continue
        missing = sorted(_reach(graph, node, exported))
        if missing:
            found[label] = Excluded(label, tuple(demangle(missing)))
    return found
