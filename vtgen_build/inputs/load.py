"""Load layer: YAML text → located records.

Only safe YAML is read (libyaml's C parser when pyyaml has it, the pure-Python
safe loader otherwise), within bounds far above PyTorch's own files: input size,
nesting depth and values after alias expansion (so an alias bomb is an error in
milliseconds, not a machine out of memory).  Every mapping key keeps the line it was written on and
every top-level entry keeps its own source text, so later layers can report
errors at ``file:line`` and hash each entry on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import yaml

from ..base.errors import Location, VtgenError

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_VALUES",
    "Entry",
    "Field",
    "Scalar",
    "Value",
    "load_entries",
    "load_text",
    "read_text",
]

try:  # pragma: no branch - depends on how pyyaml was built
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

Scalar = str | bool | int | float | None
Value = Union[Scalar, "tuple[Field, ...]", "tuple[Value, ...]"]


@dataclass(frozen=True)
class Field:
    """One ``key: value`` of a YAML mapping, with the line of its key."""

    key: str
    value: Value
    location: Location


@dataclass(frozen=True)
class Entry:
    """One top-level list item: its fields, where it starts, and its own text."""

    fields: tuple[Field, ...]
    location: Location
    text: str
    comment: str = ""  # the ``#`` lines right above the entry (no blank line between), without the ``#``


MAX_INPUT_BYTES = 16 * 1024 * 1024  # 27x PyTorch's native_functions.yaml
MAX_DEPTH = 100  # nesting of lists and mappings (PyTorch's files: 4)
MAX_VALUES = 2_000_000  # values after alias expansion (PyTorch's native_functions.yaml: 28,000)


def read_text(path: str) -> str:
    """The file's text, or a located error when it cannot be read, is too large or is not UTF-8."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise VtgenError(f"no such file: {path}") from None
    except OSError as exc:
        raise VtgenError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise VtgenError(f"{path}: larger than {MAX_INPUT_BYTES >> 20} MiB: not an input file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        message = f"not UTF-8 text: byte 0x{data[exc.start]:02x} ({exc.reason})"
        raise VtgenError(message, Location(path, line)) from None


def load_entries(path: str) -> tuple[Entry, ...]:
    """Read ``path``, a YAML list of mappings, into located entries."""
    return load_text(read_text(path), path)


def load_text(text: str, path: str) -> tuple[Entry, ...]:
    """Parse ``text`` (named ``path`` in errors) into located entries."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        message = f"invalid YAML: {exc.problem or exc.context}"
        if exc.problem and exc.context and exc.context_mark is not None and exc.context_mark.line + 1 != line:
            message += f" ({exc.context} at line {exc.context_mark.line + 1})"
        raise VtgenError(message, Location(path, line)) from None
    except yaml.YAMLError as exc:
        raise VtgenError(f"invalid YAML: {exc}", Location(path, 1)) from None
    except RecursionError:  # the pure-Python composer on deep nesting
        raise VtgenError(f"invalid YAML: nested deeper than {MAX_DEPTH} levels", Location(path, 1)) from None
    if root is None:
        return ()
    _check_size(root, path, 0, {})
    if not isinstance(root, yaml.SequenceNode):
        raise VtgenError("expected a list of entries at the top level", _loc(path, root))
    lines = text.splitlines(keepends=True)
    starts = [item.start_mark.line for item in root.value] + [len(lines)]
    entries = []
    for index, item in enumerate(root.value):
        if not isinstance(item, yaml.MappingNode):
            raise VtgenError("expected each entry to be a mapping ('- key: value')", _loc(path, item))
        entry_text = _entry_text(lines, starts[index], starts[index + 1])
        fields = _mapping(item, path)
        entries.append(Entry(fields, _loc(path, item), entry_text, _comment_above(lines, starts[index])))
    return tuple(entries)


def _check_size(node: yaml.Node, path: str, depth: int, sizes: dict[int, int]) -> int:
    """The number of values ``node`` expands to (aliases repeat a node: counted once per use, computed
    once per node); a located error beyond ``MAX_DEPTH`` levels (a recursive alias too) or ``MAX_VALUES``."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    if depth > MAX_DEPTH:
        raise VtgenError(f"nested deeper than {MAX_DEPTH} levels", _loc(path, node))
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    total = 1 + sum(_check_size(child, path, depth + 1, sizes) for child in children)
    if total > MAX_VALUES:
        raise VtgenError(f"expands to more than {MAX_VALUES:,} values (nested aliases?)", _loc(path, node))
    sizes[id(node)] = total
    return total


def _entry_text(lines: list[str], start: int, end: int) -> str:
    """The entry's source lines, without the trailing blank and comment lines."""
    while end > start + 1 and lines[end - 1].strip()[:1] in ("", "#"):
        end -= 1
    return "".join(lines[start:end])


def _comment_above(lines: list[str], start: int) -> str:
    """The comment block ending on the line before ``start`` (documentation of the entry)."""
    first = start
    while first > 0 and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    text = (line.strip()[1:] for line in lines[first:start])
    return "\n".join(t[1:] if t.startswith(" ") else t for t in text).strip()


def _loc(path: str, node: yaml.Node) -> Location:
    return Location(path, node.start_mark.line + 1)


def _mapping(node: yaml.MappingNode, path: str) -> tuple[Field, ...]:
    fields: list[Field] = []
    seen: dict[str, Location] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node, path)
        location = _loc(path, key_node)
        if not isinstance(key, str):
            raise VtgenError(f"expected a text key, found {key!r}", location)
        if key in seen:
            raise VtgenError(f"duplicate key '{key}' (first at line {seen[key].line})", location)
        seen[key] = location
        fields.append(Field(key, _value(value_node, path), location))
    return tuple(fields)


def _value(node: yaml.Node, path: str) -> Value:
    if isinstance(node, yaml.MappingNode):
        return _mapping(node, path)
    if isinstance(node, yaml.SequenceNode):
        return tuple(_value(item, path) for item in node.value)
    return _scalar(node, path)


_TRUE = frozenset({"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})


def _scalar(node: yaml.Node, path: str) -> Scalar:
    if not isinstance(node, yaml.ScalarNode):
        raise VtgenError("expected a plain value here", _loc(path, node))
    tag, text = node.tag, node.value
    if tag.endswith(":str"):
        return str(text)
    if tag.endswith(":bool"):
        return text in _TRUE
    if tag.endswith(":null"):
        return None
    try:
        if tag.endswith(":int"):
            return int(text.replace("_", ""), 0)
        if tag.endswith(":float"):
            return float(text.replace("_", ""))
    except ValueError:
        return str(text)
    return str(text)
