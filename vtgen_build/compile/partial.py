"""Translation units cut from a generated output: some ops' kernels and the Nodes they create.

``vtgen-build check --op``/``--changed`` compiles one such unit; ``check --gradcheck`` builds
one per kernel shard into its library.  Both are assembled here, from the records of the
output index: each section opens with ``#line 1`` to the shard it comes from, then that
shard's prelude (including exactly the ``Functions_<k>.h`` declaring the Nodes needed), then
each definition behind a ``#line`` to its own place (inside formulas: the yaml), then the
shard's epilogue.  Errors therefore point at the full generated files, never at the cut.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ..emit.output_index import Block, OutputIndex, is_node_header

__all__ = ["node_blocks", "op_kernels", "section", "with_node_includes"]

_INCLUDE = '#include "'


def _is_node_include(line: str) -> bool:
    """Does ``line`` include a generated Node header (the emitter's name rule, ``is_node_header``)?"""
    return line.startswith(_INCLUDE) and line.endswith('"') and is_node_header(line[len(_INCLUDE) : -1])


def with_node_includes(prelude: str, headers: Iterable[str]) -> str:
    """``prelude`` including exactly ``headers`` (the ``Functions_<k>.h`` declaring the Nodes needed)."""
    lines = prelude.split("\n")
    wanted = [f'#include "{h}"' for h in sorted(set(headers))]
    at = next((i for i, line in enumerate(lines) if _is_node_include(line)), None)
    kept = [line for line in lines if not _is_node_include(line)]
    if at is None:
        at = max((i for i, line in enumerate(kept) if line.startswith("#include")), default=-1) + 1
    return "\n".join(kept[:at] + wanted + kept[at:])


def op_kernels(index: OutputIndex, ops: Iterable[str]) -> list[str]:
    """The kernels (one per dispatch key) of ``ops``, in order, each once."""
    return list(dict.fromkeys(k for op in ops for k in index.kernels_of_op.get(op, ()) if k in index.kernels))


def node_blocks(index: OutputIndex, nodes: Iterable[str]) -> list[Block]:
    """The definitions (``apply``, ...) of ``nodes``."""
    return [b for n in nodes for b in index.node_blocks.get(n, [])]


def section(
    index: OutputIndex,
    blocks: Sequence[Block],
    nodes: Iterable[str],
    after_prelude: Sequence[str] = (),
    before_epilogue: Sequence[str] = (),
) -> list[str]:
    """The lines of one section of a cut unit: ``blocks`` (all of one shard) with that shard's prelude,
    including the headers of ``nodes``, and its epilogue; ``[]`` when there are no blocks."""
    if not blocks:
        return []
    unit = index.units[blocks[0].unit]
    parts = [f"#line 1 {_quoted(index, unit.name)}"]
    parts.append(with_node_includes(unit.prelude, (index.header_of_node[n] for n in nodes)))
    parts += after_prelude
    parts += [f"#line {b.first} {_quoted(index, b.unit)}\n{b.text}" for b in blocks]
    parts += before_epilogue
    parts.append(unit.epilogue)
    return parts


def _quoted(index: OutputIndex, name: str) -> str:
    return json.dumps(str(index.out_dir / name))
