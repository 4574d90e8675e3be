"""The translation units of a gradcheck library, cut from a generated check build.

One unit per op family holding the chosen ops' kernels (each shard's own helpers come
with its prelude), and one per family and shard holding the ``apply`` of the Nodes that
family owns, each Node in exactly one unit (``kernel_units``): a unit's text, and so
its cache key, never depends on which other ops are selected.  Instead of the shard's registrations, each kernel gets an
``extern "C"`` function registering it behind a counter of entries; the small
registration unit (``registration_unit``, a table and no torch header) names those of the ops that link,
so the linker drops the code of the others, and exports the counters; one fixed unit (``REGISTRAR``)
registers the table's rows.  Every
definition keeps a ``#line`` to its place in the generated shard (formulas: the yaml).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..compile import node_blocks, section, shard_prefix
from ..emit.output_index import OutputIndex, Registration, read_index
from ..model.schema import op_name

__all__ = [
    "PROVIDED",
    "REGISTRAR",
    "CutUnit",
    "Registration",
    "kernel_units",
    "read_registrations",
    "register_symbol",
    "registration_unit",
]


def read_registrations(out: Path) -> list[Registration]:
    """The kernel registrations of the generated shards (``emit.output_index``, their one reader)."""
    return read_index(out).registrations


def register_symbol(kernel: str) -> str:
    return f"vtgen_register_{kernel}"


# What the registration unit defines for libtorch, which keeps it (data: it cannot be bound).
PROVIDED = frozenset({"_ZN5torch8autograd9generated7details23kCudnnDoubleBackwardMsgE"})

_COUNTER = "std::atomic<long long>"
_COUNTED = """
// gradcheck builds: every registered kernel counts its entries
template <auto F> struct vtgen_counted;
template <typename R, typename... A, R (*F)(A...)>
struct vtgen_counted<F> {
  static inline std::atomic<long long>* hits = nullptr;
  static R call(A... args) {
    hits->fetch_add(1, std::memory_order_relaxed);
    return F(std::forward<A>(args)...);
  }
};
"""


def _register(kernel: str) -> str:
    counted = f"torch::autograd::VariableType::vtgen_counted<&torch::autograd::VariableType::{kernel}>"
    return (
        f'extern "C" void {register_symbol(kernel)}(torch::Library& m, const char* op, {_COUNTER}* hits) {{\n'
        f"  {counted}::hits = hits;\n"
        f"  m.impl(op, TORCH_FN({counted}::call));\n"
        "}\n"
    )


@dataclass(frozen=True)
class CutUnit:
    """A unit of the library: one op family's kernels with the Nodes it owns in one shard, or Nodes alone."""

    name: str  # VariableType_6.sin (a family's kernels), Functions_6.sin (Nodes the family owns): shard, family
    text: str
    kernels: tuple[str, ...]  # the selected kernels whose code needs it (excluded when it fails)


def _families(index: OutputIndex) -> dict[str, str]:
    """Kernel → its op family (the first, in name order, of the ops it is registered for)."""
    families: dict[str, str] = {}
    for op, kernels in index.kernels_of_op.items():
        family = op_name(op).family
        for k in kernels:
            families[k] = min(families.get(k, family), family)
    return families


def _owners(index: OutputIndex, families: dict[str, str]) -> dict[str, str]:
    """Node → the family that owns it: of the families of every kernel of the output creating it, the first
    by name, a ``_foreach_`` one last (``sin`` owns SinBackward0, not ``_foreach_sin``).  The whole output
    decides, so a Node's unit never depends on which ops are selected."""
    owners: dict[str, str] = {}
    first = lambda f: (f.startswith("_foreach_"), f)  # noqa: E731
    for kernel, nodes in index.nodes_of_kernel.items():
        family = families.get(kernel, kernel)
        for n in nodes:
            owners[n] = min(owners.get(n, family), family, key=first)
    return owners


def _unit(index: OutputIndex, name: str, kernels: Sequence[str], nodes: Sequence[str], users: Iterable[str]) -> CutUnit:
    """``kernels`` (of one shard) behind counters and ``nodes`` (of one shard), each section cut with its
    shard's prelude; first the includes both preludes share, so that one precompiled header holds them
    (the sections include them again: include guards make that free)."""
    kernel_part: list[str] = []
    if kernels:
        created = [n for k in kernels for n in index.nodes_of_kernel.get(k, ())]
        counted = ('#line 1 "vtgen-gradcheck"', _COUNTED)
        kernel_part = section(index, [index.kernels[k] for k in kernels], created, before_epilogue=counted)
        kernel_part += ["#include <atomic>", *(_register(k) for k in kernels)]
    node_part = section(index, node_blocks(index, nodes), nodes) if nodes else []
    shared = dict.fromkeys([*shard_prefix("\n".join(kernel_part)), *shard_prefix("\n".join(node_part))])
    head = "// Generated by vtgen-build check --gradcheck: one op family's kernels (counted) and Nodes."
    text = "\n".join([head, *shared, *kernel_part, *node_part]) + "\n"
    return CutUnit(name, text, tuple(dict.fromkeys([*kernels, *users])))


def kernel_units(index: OutputIndex, kernels: Iterable[str]) -> list[CutUnit]:
    """The units of ``kernels``: one per op family holding its kernels and the Nodes it owns (``_owners``) in
    the first shard holding any; one per other (shard, owning family) whose Nodes the kernels create,
    holding every Node that family owns there.

    A unit's text depends on its family alone, never on the rest of the selection: ``--op sin`` after a
    wider run finds every unit it needs already compiled.  Usually one unit per family: its kernels create
    the Nodes of its own formulas.
    """
    families = _families(index)
    owners = _owners(index, families)
    by_family: dict[tuple[str, str], list[str]] = {}
    for k in dict.fromkeys(kernels):
        by_family.setdefault((index.kernels[k].unit, families.get(k, k)), []).append(k)
    users: dict[tuple[str, str], list[str]] = {}  # (node shard, owner) → the selected kernels needing it
    for names in by_family.values():
        for k in names:
            for n in index.nodes_of_kernel.get(k, ()):
                users.setdefault((index.header_of_node[n], owners[n]), []).append(k)

    def owned(header: str, owner: str) -> list[str]:
        return sorted(n for n, o in owners.items() if o == owner and index.header_of_node[n] == header)

    homes: dict[str, tuple[str, str]] = {}  # family → (the first node shard holding Nodes it owns, family)
    for n, o in owners.items():
        homes[o] = min(homes.get(o, (index.header_of_node[n], o)), (index.header_of_node[n], o))
    units: list[CutUnit] = []
    placed: set[tuple[str, str]] = set()
    for (shard, family), names in sorted(by_family.items()):
        home = homes.get(family)
        nodes = owned(*home) if home is not None and home not in placed else []
        if home is not None:
            placed.add(home)
        users_of_home = users.get(home, []) if home is not None else []
        units.append(_unit(index, f"{shard.removesuffix('.cpp')}.{family}", names, nodes, users_of_home))
    for (header, owner), needing in sorted(users.items()):
        if (header, owner) not in placed:
            units.append(_unit(index, f"{header.removesuffix('.h')}.{owner}", [], owned(header, owner), needing))
    return units


_ROW = (
    "struct VtgenRow {\n  const char* ns;\n  const char* key;  // a dispatch key's name\n  const char* op;\n"
    f"  void (*reg)(torch::Library&, const char*, {_COUNTER}*);\n  {_COUNTER}* hits;\n}};\n"
)
# The one unit holding torch/library.h's registration code: the same text for every selection, so compiled once
# per compiler, flags and torch, never per edit.  It registers the rows of the registration unit's table (one
# torch::Library per namespace and dispatch key, as TORCH_LIBRARY_IMPL makes) when the library is loaded;
# the table is constant data, in place before any initializer runs.
REGISTRAR = (
    "// Generated by vtgen-build check --gradcheck: registers the kernels the registration unit's table names.\n"
    "#include <atomic>\n#include <cstring>\n#include <memory>\n#include <string>\n#include <vector>\n"
    "#include <torch/library.h>\n\n"
    + _ROW
    + """extern "C" const VtgenRow vtgen_gradcheck_rows[];

namespace {
std::vector<std::unique_ptr<torch::Library>> vtgen_register_rows() {
  std::vector<std::unique_ptr<torch::Library>> made;
  const VtgenRow* last = nullptr;
  for (const VtgenRow* row = vtgen_gradcheck_rows; row->op != nullptr; last = row++) {
    if (last == nullptr || std::strcmp(last->ns, row->ns) != 0 || std::strcmp(last->key, row->key) != 0) {
      made.push_back(std::make_unique<torch::Library>(
          torch::Library::IMPL, row->ns, c10::parseDispatchKey(row->key), __FILE__, __LINE__));
    }
    row->reg(*made.back(), row->op, row->hits);
  }
  return made;
}
const auto vtgen_libraries = vtgen_register_rows();
}  // namespace
"""
)


def registration_unit(registrations: Sequence[Registration]) -> str:
    """The table of ``registrations`` (grouped by namespace and dispatch key) that ``REGISTRAR`` registers,
    behind counters, and the exported counters (``vtgen_gradcheck_*``).  It includes no torch header: a new
    selection of ops recompiles this small unit, never torch/library.h's registration code."""
    n = len(registrations)
    order = sorted(range(n), key=lambda i: (registrations[i].namespace, registrations[i].key, i))
    lines = [
        "// Generated by vtgen-build check --gradcheck: the registrations' table and entry counters.",
        "#include <atomic>",
        "",
        "namespace torch { class Library; }",
        "",
        _ROW,
    ]
    for kernel in dict.fromkeys(r.kernel for r in registrations):
        lines.append(f'extern "C" void {register_symbol(kernel)}(torch::Library&, const char*, {_COUNTER}*);')
    lines += [
        "",
        "// A message formulas name that libtorch keeps to itself; data is bound when the library loads.",
        "// Weak: a checkout's FunctionsManual.cpp linked into the library brings its own definition.",
        "namespace torch::autograd::generated::details {",
        "__attribute__((weak)) const char* kCudnnDoubleBackwardMsg = "
        '"double backward through a cuDNN RNN is not supported: '
        'run its forward pass with cuDNN disabled";',
        "} // namespace torch::autograd::generated::details",
        "",
        "namespace {",
        f"std::atomic<long long> hits[{n + 1}];",
        f"const char* const ops[{n + 1}] = {{{''.join(json.dumps(r.op) + ', ' for r in registrations)}nullptr}};",
        "} // namespace",
        "",
        'extern "C" const VtgenRow vtgen_gradcheck_rows[] = {',
        *(
            f"  {{{json.dumps(registrations[i].namespace)}, {json.dumps(registrations[i].key)}, ops[{i}], "
            f"&{register_symbol(registrations[i].kernel)}, &hits[{i}]}},"
            for i in order
        ),
        "  {nullptr, nullptr, nullptr, nullptr, nullptr},",
        "};",
        "",
        '#define VTGEN_EXPORT extern "C" __attribute__((visibility("default")))',
        f"VTGEN_EXPORT int vtgen_gradcheck_count() {{ return {n}; }}",
        f"VTGEN_EXPORT const char* vtgen_gradcheck_op(int i) {{ return i >= 0 && i < {n} ? ops[i] : nullptr; }}",
        f"VTGEN_EXPORT long long vtgen_gradcheck_hits(int i) {{ return i >= 0 && i < {n} ? hits[i].load() : -1; }}",
    ]
    return "\n".join(lines) + "\n"
