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


def test_a_new_selection_recompiles_no_torch_header_for_its_registrations() -> None:
    """The registrations' table changes with the selection (an edit's ``--op``): it includes no torch header, so
    compiling it costs a fraction of a second; torch/library.h's code is the registrar's, one text for every
    selection, compiled once."""
    from vtgen_build.gradcheck.units import REGISTRAR, Registration, register_symbol, registration_unit

    sin = [Registration("aten", "Autograd", "sin", "sin"), Registration("aten", "Autograd", "sin_", "sin_")]
    wider = [Registration("aten", "ADInplaceOrView", "sin_", "sin__view"), *sin]
    tables = [registration_unit(regs) for regs in (sin, wider)]
    assert tables[0] != tables[1]
    for table in tables:
        includes = [line for line in table.splitlines() if line.startswith("#include")]
        assert includes == ["#include <atomic>"], includes
    assert "#include <torch/library.h>" in REGISTRAR and "vtgen_gradcheck_rows" in REGISTRAR
    rows = [r.strip() for r in tables[1].split("vtgen_gradcheck_rows[] = {")[1].split("};")[0].strip().splitlines()]
    # grouped by namespace and dispatch key (one torch::Library each), each row its op's counter
    assert rows[0].startswith('{"aten", "ADInplaceOrView", ops[0], &' + register_symbol("sin__view"))
    assert rows[1].startswith('{"aten", "Autograd", ops[1], &' + register_symbol("sin"))
    assert rows[-1] == "{nullptr, nullptr, nullptr, nullptr, nullptr},"
