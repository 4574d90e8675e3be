"""The units a gradcheck library is compiled from (``gradcheck.units.kernel_units``), without a compiler.

Each unit holds one op family's kernels or the Nodes one family owns: its text, and so its cache key,
must not depend on which other ops are selected (``--op sin`` after a wider run compiles nothing),
and every Node a selected kernel creates must be defined in exactly one unit.
"""

from __future__ import annotations

from pathlib import Path

from vtgen_build.compile import shard_prefix
from vtgen_build.emit.output_index import OutputIndex, read_index
from vtgen_build.engine.generate import GenerateOptions, generate
from vtgen_build.gradcheck.units import kernel_units
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.request import BuildRequest

from .conftest import SAMPLE


def _index(tmp_path: Path, shards: int) -> OutputIndex:
    inputs = Inputs(str(SAMPLE / "native_functions.yaml"), str(SAMPLE / "derivatives.yaml"),
                    str(SAMPLE / "tags.yaml"), "vtsample")  # fmt: skip
    out = tmp_path / f"out{shards}"
    generate(inputs, GenerateOptions(str(out), shards, BuildRequest("vtsample")))
    return read_index(out)


def _kernels(index: OutputIndex, *ops: str) -> list[str]:
    return [k for op in ops for k in index.kernels_of_op.get(op, ()) if k in index.kernels]


def test_a_units_text_does_not_depend_on_the_other_ops_selected(tmp_path: Path) -> None:
    index = _index(tmp_path, 1)  # one shard: every op's kernels and Nodes in the same generated files
    alone = {u.name: u.text for u in kernel_units(index, _kernels(index, "softsign", "softsign_"))}
    wider = {u.name: u.text for u in kernel_units(index, _kernels(index, "scale_add", "softsign", "softsign_"))}
    assert alone and set(alone) < set(wider)
    assert all(wider[name] == text for name, text in alone.items())  # each of softsign's units: the same text


def test_every_created_node_is_defined_once_and_each_unit_says_which_kernels_need_it(tmp_path: Path) -> None:
    index = _index(tmp_path, 2)
    kernels = _kernels(index, *sorted({op for op in index.kernels_of_op}))
    units = kernel_units(index, kernels)
    created = {n for k in kernels for n in index.nodes_of_kernel.get(k, ())}
    defined = [n for u in units for n in created if f"{n}::apply(" in u.text]
    assert sorted(defined) == sorted(created)  # each exactly once
    assert {k for u in units for k in u.kernels} == set(kernels)
    assert all(shard_prefix(u.text) for u in units)  # each starts with includes a precompiled header can hold
