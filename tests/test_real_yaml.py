"""The real PyTorch 2.13 files: they load with no error, and our model equals what torchgen builds.

torchgen (from the installed torch wheel) is the reference and runs inside the test session:
``torchgen.gen.parse_native_yaml`` for the native functions and
``torchgen.packaged.autograd.load_derivatives`` for derivatives.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from vtgen_build.model import Model

if TYPE_CHECKING:
    from tests.conftest import RealYaml

pytestmark = pytest.mark.torch

# The counts of PyTorch 2.13 (issue 2); the tests also check them against torchgen itself.
ENTRIES = 2584
NATIVE_FUNCTIONS = 3101
DERIVATIVE_ENTRIES = 687


@dataclass(frozen=True)
class Reference:
    native_functions: dict[str, Any]  # str(func) -> torchgen NativeFunction
    kernels: dict[str, dict[str, str]]  # str(func) -> dispatch key -> kernel
    derivatives: list[tuple[str, dict[str, Any]]]  # (str(schema), key -> DifferentiabilityInfo), in file order
    used_dispatch_keys: frozenset[str]


@pytest.fixture(scope="module")
def reference(real_yaml: RealYaml) -> Iterator[Reference]:
    gen = pytest.importorskip("torchgen.gen")
    ld = pytest.importorskip("torchgen.packaged.autograd.load_derivatives")
    native, tags, derivatives = str(real_yaml.native_functions), str(real_yaml.tags), str(real_yaml.derivatives)
    parsed = gen.parse_native_yaml(native, tags)
    functions = {str(f.func): f for f in parsed.native_functions}
    kernels: dict[str, dict[str, str]] = {s: {} for s in functions}
    by_name = {f.func.name: s for s, f in functions.items()}
    for key, index in parsed.backend_indices.items():
        for op, metadata in index.index.items():
            kernels[by_name[op]][str(key)] = metadata.kernel
    # load_derivatives also adds infos for the generated view_copy functions; leave that step out so
    # that it returns one info per derivatives.yaml entry.  It caches per path: keep that cache as found.
    cache_key = (derivatives, native)
    saved = ld._GLOBAL_LOAD_DERIVATIVE_CACHE.pop(cache_key, None)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(ld, "add_view_copy_derivatives", lambda infos, view_groups: None)
            infos, used_keys = ld.load_derivatives(derivatives, native, tags)
    finally:
        ld._GLOBAL_LOAD_DERIVATIVE_CACHE.pop(cache_key, None)
        if saved is not None:
            ld._GLOBAL_LOAD_DERIVATIVE_CACHE[cache_key] = saved
    yield Reference(functions, kernels, [(str(k), v) for k, v in infos.items()], frozenset(used_keys))


def test_real_files_load(real_model: Model) -> None:
    assert real_model.entry_count == ENTRIES
    assert len(real_model.native_functions) == NATIVE_FUNCTIONS
    assert len(real_model.derivatives) == DERIVATIVE_ENTRIES


def test_counts_equal_torchgen(real_model: Model, reference: Reference) -> None:
    declared = [f for f in reference.native_functions.values() if "generated" not in f.tags]
    assert (real_model.entry_count, len(real_model.native_functions), len(real_model.derivatives)) == (
        len(declared),
        len(reference.native_functions),
        len(reference.derivatives),
    )
    assert sum(not f.generated for f in real_model.native_functions) == len(declared)


def test_same_native_functions_as_torchgen(real_model: Model, reference: Reference) -> None:
    ours = [str(f.func) for f in real_model.native_functions]
    assert len(set(ours)) == len(ours)
    assert set(ours) == set(reference.native_functions)


def test_same_tags_as_torchgen(real_model: Model, reference: Reference) -> None:
    differ = {
        str(f.func): (sorted(f.tags), sorted(reference.native_functions[str(f.func)].tags))
        for f in real_model.native_functions
        if f.tags != frozenset(reference.native_functions[str(f.func)].tags)
    }
    assert differ == {}


def _fields(f: Any, theirs: bool) -> dict[str, object]:
    """The fields both models have, spelled alike."""
    if theirs:
        return {
            "namespace": f.namespace,
            "line": f.loc.line,
            "variants": sorted(v.name for v in f.variants),
            "structured": f.structured,
            "structured_delegate": str(f.structured_delegate) if f.structured_delegate else None,
            "structured_inherits": f.structured_inherits,
            "autogen": sorted(map(str, f.autogen)),
            "manual_kernel_registration": f.manual_kernel_registration,
            "manual_cpp_binding": f.manual_cpp_binding,
            "device_check": f.device_check.name,
            "device_guard": f.device_guard,
            "python_module": f.python_module,
            "category_override": f.category_override,
            "cpp_no_default_args": sorted(f.cpp_no_default_args),
            "use_const_ref_for_mutable_tensors": f.use_const_ref_for_mutable_tensors,
            "generated": "generated" in f.tags,
            "has_precomputed": f.precomputed is not None,
            "has_ufunc_inner_loop": bool(f.ufunc_inner_loop),
            "is_view_op": f.is_view_op,
            "kind": f.func.kind().name,
        }
    return {
        "namespace": f.namespace,
        "line": f.location.line,
        "variants": sorted(f.variants),
        "structured": f.structured,
        "structured_delegate": str(f.structured_delegate) if f.structured_delegate else None,
        "structured_inherits": f.structured_inherits,
        "autogen": sorted(map(str, f.autogen)),
        "manual_kernel_registration": f.manual_kernel_registration,
        "manual_cpp_binding": f.manual_cpp_binding,
        "device_check": f.device_check,
        "device_guard": f.device_guard,
        "python_module": f.python_module,
        "category_override": f.category_override,
        "cpp_no_default_args": sorted(f.cpp_no_default_args),
        "use_const_ref_for_mutable_tensors": f.use_const_ref_for_mutable_tensors,
        "generated": f.generated,
        "has_precomputed": bool(f.precomputed),
        "has_ufunc_inner_loop": bool(f.ufunc_inner_loop),
        "is_view_op": f.is_view_op,
        "kind": f.kind.name,
    }


def test_same_fields_as_torchgen(real_model: Model, reference: Reference) -> None:
    differ = []
    for f in real_model.native_functions:
        ours, theirs = _fields(f, False), _fields(reference.native_functions[str(f.func)], True)
        differ += [(str(f.func), k, ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]]
    assert differ[:10] == []


def test_same_dispatch_tables_as_torchgen(real_model: Model, reference: Reference) -> None:
    differ = []
    for f in real_model.native_functions:
        theirs = dict(reference.kernels[str(f.func)])
        if f.ufunc_inner_loop:
            # torchgen adds the CPU/CUDA kernels it generates from ufunc_inner_loop; ours lists the loops.
            theirs = {k: v for k, v in theirs.items() if not v.startswith("ufunc_")}
        ours = {d.key: d.kernel for d in f.dispatch}
        if ours != theirs:
            differ.append((str(f.func), ours, theirs))
    assert differ[:5] == []


def test_same_derivative_entries_as_torchgen(real_model: Model, reference: Reference) -> None:
    assert [str(e.schema) for e in real_model.derivatives] == [name for name, _ in reference.derivatives]
    used = {s.dispatch_key for e in real_model.derivatives for s in e.formula_sets}
    assert used == reference.used_dispatch_keys


def test_same_formula_names_as_torchgen(real_model: Model, reference: Reference) -> None:
    """Per entry and autograd key: which inputs have formulas, which are non-differentiable, which outputs."""
    differ = []
    for entry, (name, per_key) in zip(real_model.derivatives, reference.derivatives, strict=True):
        assert {s.dispatch_key for s in entry.formula_sets} == set(per_key), name
        for formulas in entry.formula_sets:
            info = per_key[formulas.dispatch_key]
            ours = (
                {n for f in formulas.backward if not f.is_non_differentiable for n in f.names},
                {n for f in formulas.backward if f.is_non_differentiable for n in f.names},
                {n for f in formulas.forward for n in f.names},
            )
            theirs = (
                {n for d in info.derivatives for n in d.var_names},
                set(info.non_differentiable_arg_names),
                {n for d in info.forward_derivatives for n in d.var_names},
            )
            if ours != theirs:
                differ.append((name, formulas.dispatch_key, ours, theirs))
    assert differ[:5] == []


def test_same_output_differentiability_as_torchgen(real_model: Model, reference: Reference) -> None:
    for entry, (name, per_key) in zip(real_model.derivatives, reference.derivatives, strict=True):
        for info in per_key.values():
            if entry.output_differentiability_condition is not None:
                assert info.output_differentiability_conditions == [entry.output_differentiability_condition], name
            else:
                od = entry.output_differentiability
                assert info.output_differentiability == (list(od) if od is not None else None), name


def test_every_record_is_located(real_yaml: RealYaml, real_model: Model) -> None:
    native_lines = real_yaml.native_functions.read_text(encoding="utf-8").splitlines()
    for f in real_model.native_functions:
        assert f.location.file == str(real_yaml.native_functions)
        if not f.generated:
            assert native_lines[f.location.line - 1].startswith("- func: ")
            assert f.text.startswith(native_lines[f.location.line - 1] + "\n")
    derivative_lines = real_yaml.derivatives.read_text(encoding="utf-8").splitlines()
    for e in real_model.derivatives:
        first = derivative_lines[e.location.line - 1]
        assert first.startswith("- name:")
        assert first.removeprefix("- name:").strip() == str(e.schema)
        assert e.text.startswith(first + "\n")
        for formulas in e.formula_sets:
            for formula in formulas.formulas:
                assert derivative_lines[formula.location.line - 1].lstrip().startswith(formula.key + ":")
