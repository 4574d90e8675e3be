"""Reading a generated output directory back: which kernel and Node sits at which lines.

``vtgen-build check`` needs, without re-planning: the kernel of each op and the
Nodes it creates (to compile a few ops alone and to hash each op's code), and
the op behind a compiler error's file and line.  The generated translation units
are regular: every kernel and every Node definition (``Node::apply``, ...) is a top-level definition
starting at column 0 and ending at the next line that is exactly ``}``;
registrations are ``m.impl("<op>", TORCH_FN(VariableType::<kernel>))``; formulas
of check builds sit between ``#line N "<yaml>"`` and a ``#line`` back.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Block",
    "OutputIndex",
    "Registration",
    "TranslationUnit",
    "is_node_header",
    "node_header_name",
    "read_index",
]

_KERNEL = re.compile(r"^\S.*?\b(\w+)\(c10::DispatchKeySet ks\b")
# a Node's member functions, and its functional forms (<Node>_apply_functional, ..._ivalue)
_NODE_MEMBER = re.compile(r"^\S.*?\b(\w+)(?:::\w+|_apply_functional(?:_ivalue)?)\(")
_REGISTRATION = re.compile(r'm\.impl\("([^"]+)", (?:TORCH_FN\(VariableType::(\w+)\)|.*Fallback)')
_MAKE_NODE = re.compile(r"make_intrusive<(\w+)>")
_IMPL_BLOCK = re.compile(r"^TORCH_LIBRARY_IMPL\((\w+), (\w+), m\) \{$")
_YAML_LINE = re.compile(r'^\s*#line (\d+) "(.*)"\s*$')
_LINE_DIRECTIVE = re.compile(r"^[ \t]*#line .*(?:\n|$)", re.M)
_NODE_HEADER = re.compile(r"Functions_\d+\.h")


def node_header_name(shard: int) -> str:
    """The header declaring the Nodes of ``shard``: the emitter writes it under this name, and a
    shard's own include of it ends the prefix the shards share."""
    return f"Functions_{shard}.h"


def is_node_header(name: str) -> bool:
    """Is ``name`` (a file name, as a unit includes it) one of the generated Node headers?"""
    return _NODE_HEADER.fullmatch(name) is not None


@dataclass(frozen=True)
class Block:
    """One top-level definition of a translation unit (lines ``first``..``last``, 1-based)."""

    name: str  # kernel function name, or the Node it belongs to
    unit: str  # file name of the translation unit
    first: int
    last: int
    text: str

    def code_digest(self) -> str:
        """A digest of the code without ``#line`` lines (they move when unrelated lines move)."""
        return hashlib.sha256(_LINE_DIRECTIVE.sub("", self.text).encode()).hexdigest()


@dataclass(frozen=True)
class Registration:
    """One kernel registration of a generated shard (fallback registrations are not ours to check)."""

    namespace: str
    key: str  # Autograd, AutogradNestedTensor, ...
    op: str  # sin, add.Tensor
    kernel: str  # the kernel function: sin, add_Tensor


@dataclass(frozen=True)
class TranslationUnit:
    name: str  # VariableType_3.cpp
    kind: str  # "kernels" or "nodes"
    prelude: str  # text before the first definition (includes of the shard's Node headers)
    epilogue: str  # closing namespaces after the last definition, without registrations
    blocks: tuple[Block, ...]


@dataclass
class OutputIndex:
    out_dir: Path
    units: dict[str, TranslationUnit] = field(default_factory=dict)
    kernels_of_op: dict[str, tuple[str, ...]] = field(default_factory=dict)  # one per dispatch key; () fallback
    kernels: dict[str, Block] = field(default_factory=dict)
    nodes_of_kernel: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Functions_<k>.h: where each Node is declared, and the lines its struct spans there
    header_of_node: dict[str, str] = field(default_factory=dict)
    node_spans: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    node_blocks: dict[str, list[Block]] = field(default_factory=dict)
    formula_lines: dict[tuple[str, int], set[str]] = field(default_factory=dict)  # (yaml, line) → Nodes
    registrations: list[Registration] = field(default_factory=list)  # in file and line order

    def ops_of_node(self, node: str) -> set[str]:
        return {op for op, ks in self.kernels_of_op.items() if any(node in self.nodes_of_kernel.get(k, ()) for k in ks)}

    def ops_of_kernel(self, kernel: str) -> set[str]:
        return {op for op, ks in self.kernels_of_op.items() if kernel in ks}

    def nodes_of_op(self, op: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for k in self.kernels_of_op.get(op, ()) for n in self.nodes_of_kernel.get(k, ())))

    def op_digest(self, op: str, node_headers: dict[str, str]) -> str:
        """What the compiler sees of ``op``: its kernel, its Nodes' headers and ``apply``."""
        h = hashlib.sha256(op.encode())
        for kernel in self.kernels_of_op.get(op, ()):
            if kernel in self.kernels:
                h.update(self.kernels[kernel].code_digest().encode())
        for node in self.nodes_of_op(op):
            h.update(node.encode() + node_headers.get(node, "").encode())
            for b in self.node_blocks.get(node, []):
                h.update(b.code_digest().encode())
        return h.hexdigest()

    def owner(self, path: str, line: int) -> tuple[str, str] | None:
        """``("kernel"|"node", name)`` of the code at ``path:line`` (a unit, a Node header or a yaml)."""
        name = Path(path).name
        unit = self.units.get(name)
        if unit is not None and Path(path).parent.resolve() == self.out_dir.resolve():
            for b in unit.blocks:
                if b.first <= line <= b.last:
                    return ("kernel" if unit.kind == "kernels" else "node", b.name)
            return None
        if name in self.node_spans and Path(path).parent.resolve() == self.out_dir.resolve():
            for first, last, node in self.node_spans[name]:
                if first <= line <= last:
                    return ("node", node)
            return None
        nodes = self.formula_lines.get((str(Path(path).resolve()), line))
        if nodes:
            return ("node", sorted(nodes)[0])
        return None

    def formula_after(self, path: str, line: int) -> tuple[str, int] | None:
        """The yaml place of the formula starting on the line after ``path:line`` (its wrapper's line)."""
        unit = self.units.get(Path(path).name)
        if unit is None or Path(path).parent.resolve() != self.out_dir.resolve():
            return None
        for b in unit.blocks:
            if b.first <= line < b.last:
                m = _YAML_LINE.match(b.text.split("\n")[line - b.first + 1])
                if m and not m.group(2).endswith(".cpp"):
                    return m.group(2), int(m.group(1))
        return None

    def ops_at(self, path: str, line: int) -> set[str]:
        found = self.owner(path, line)
        if found is None:
            return set()
        kind, name = found
        if kind == "kernel":
            return self.ops_of_kernel(name)
        nodes = self.formula_lines.get((str(Path(path).resolve()), line)) or {name}
        return set().union(*(self.ops_of_node(n) for n in nodes))


_STRUCT = re.compile(r"^struct TORCH_API (\w+) : ")


def _struct_spans(text: str) -> list[tuple[int, int, str]]:
    """(first line, last line, Node) of each Node struct declared in a ``Functions_<k>.h``."""
    spans: list[tuple[int, int, str]] = []
    lines = text.split("\n")
    for i, line in enumerate(lines):
        match = _STRUCT.match(line)
        if match:
            end = next((j for j in range(i, len(lines)) if lines[j] == "};"), len(lines) - 1)
            spans.append((i + 1, end + 1, match.group(1)))
    return spans


def _split(name: str, text: str, kind: str, nodes: set[str] | None) -> TranslationUnit:
    lines = text.split("\n")
    blocks: list[Block] = []
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        match = _KERNEL.match(line) if kind == "kernels" else _NODE_MEMBER.match(line)
        if match and line.endswith("{") and (nodes is None or match.group(1) in nodes):
            j = i
            while j < len(lines) and lines[j] != "}":
                j += 1
            blocks.append(Block(match.group(1), name, i + 1, j + 1, "\n".join(lines[i : j + 1])))
            spans.append((i, j))
            i = j
        i += 1
    if not spans:
        return TranslationUnit(name, kind, text, "", ())
    prelude = "\n".join(lines[: spans[0][0]])
    tail = lines[spans[-1][1] + 1 :]
    epilogue: list[str] = []
    skipping = False
    for line in tail:  # registrations are left out: a partial unit only needs to compile
        if line.startswith("TORCH_LIBRARY_IMPL("):
            skipping = True
        if not skipping:
            epilogue.append(line)
        if skipping and line == "}":
            skipping = False
    return TranslationUnit(name, kind, prelude, "\n".join(epilogue), tuple(blocks))


def _read_registrations(index: OutputIndex, text: str) -> None:
    """The ``m.impl`` lines of a shard: each op's kernels, and each registration with its block's
    namespace and dispatch key (the one reader of them: ``check --gradcheck`` takes its list from here)."""
    for op, kernel in _REGISTRATION.findall(text):
        known = index.kernels_of_op.setdefault(op, ())
        if kernel and kernel not in known:
            index.kernels_of_op[op] = (*known, kernel)
    start = text.find("\nTORCH_LIBRARY_IMPL(")  # the blocks follow the last kernel
    block: tuple[str, str] | None = None
    for line in text[start + 1 :].split("\n") if start >= 0 else ():
        if (head := _IMPL_BLOCK.match(line)) is not None:
            block = (head.group(1), head.group(2))
        elif line == "}":
            block = None
        elif block is not None and (m := _REGISTRATION.search(line)) is not None and m.group(2):
            index.registrations.append(Registration(block[0], block[1], m.group(1), m.group(2)))


def read_index(out_dir: Path) -> OutputIndex:
    """Index the translation units ``VariableType_<k>.cpp`` and ``Functions_<k>.cpp`` of ``out_dir``."""
    index = OutputIndex(out_dir)
    for header in sorted(h for h in out_dir.glob("Functions_*.h") if is_node_header(h.name)):
        spans = _struct_spans(header.read_text(encoding="utf-8"))
        index.node_spans[header.name] = spans
        index.header_of_node.update((node, header.name) for _, _, node in spans)
    node_names = set(index.header_of_node)
    for path in sorted(out_dir.glob("VariableType_*.cpp")):
        text = path.read_text(encoding="utf-8")
        unit = _split(path.name, text, "kernels", None)
        index.units[path.name] = unit
        for b in unit.blocks:
            index.kernels[b.name] = b
            index.nodes_of_kernel[b.name] = tuple(
                dict.fromkeys(n for n in _MAKE_NODE.findall(b.text) if n in node_names)
            )
        _read_registrations(index, text)
    for path in sorted(out_dir.glob("Functions_*.cpp")):
        unit = _split(path.name, path.read_text(encoding="utf-8"), "nodes", node_names)
        index.units[path.name] = unit
        for b in unit.blocks:
            index.node_blocks.setdefault(b.name, []).append(b)
            for line in b.text.split("\n"):
                m = _YAML_LINE.match(line)
                if m and not m.group(2).endswith(".cpp"):
                    key = (str(Path(m.group(2)).resolve()), int(m.group(1)))
                    index.formula_lines.setdefault(key, set()).add(b.name)
    return index
