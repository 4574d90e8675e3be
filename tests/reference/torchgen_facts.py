"""Ground-truth facts about PyTorch's autograd codegen, computed by torchgen itself.

This is test support for the parity tests of ``vtgen_build``. It imports the
torchgen package shipped inside the torch wheel, runs torchgen's own loaders and
decision functions on the yaml files packaged with it, and reduces the result to
plain Python values (ints, strings, tuples, dicts, sets) that a test can compare
with what our generator plans.

Nothing here re-implements torchgen's decisions: every fact is read off the
objects torchgen builds, or off the text one of torchgen's per-operator
functions returns for a single operator.  The module is only importable where
torchgen is installed, so tests should guard it with
``pytest.importorskip("torchgen")``.

Run ``python -m tests.reference.torchgen_facts`` to print the counts (and, when
``/tmp/ref`` holds a reference run of torchgen's gen_autograd, to cross-check
them against the generated files).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import torchgen
import yaml
from torchgen.api import cpp
from torchgen.api.autograd import (
    DifferentiabilityInfo,
    NativeFunctionWithDifferentiabilityInfo,
    match_differentiability_info,
)
from torchgen.code_template import CodeTemplate
from torchgen.gen import parse_native_yaml
from torchgen.packaged.autograd.gen_autograd_functions import (
    get_infos_with_derivatives_list,
    process_function,
)
from torchgen.packaged.autograd.gen_inplace_or_view_type import gen_inplace_or_view_type_env, use_derived
from torchgen.packaged.autograd.gen_variable_type import gen_variable_type_func
from torchgen.yaml_utils import YamlLoader

from .shapes import compiled_lines, hook_sites  # torchgen's side and ours are read alike

if TYPE_CHECKING:
    from torchgen.model import FunctionSchema, NativeFunction

__all__ = [
    "DEFAULT_KEY_SPELLING",
    "Kind",
    "RegKey",
    "TorchgenPaths",
    "compiled_autograd",
    "complex_checked",
    "debug_checks",
    "derivative_entry_count",
    "entry_count",
    "inplace_or_view",
    "jvp_decompositions",
    "native_function_count",
    "node_creation_hooks",
    "node_for_kernel",
    "nodes",
    "paths",
    "registrations",
    "save_guards",
    "saved_members",
    "used_dispatch_keys",
]

#: A registration: (operator name with overload, e.g. "add.Tensor"; autograd key).
RegKey = tuple[str, str]
#: "kernel" (a generated VariableType function) or "fallback"
#: (torch::autograd::autogradNotImplementedFallback()).
Kind = str

#: derivatives.yaml calls the plain autograd key "Default"; it is registered as "Autograd".
DEFAULT_KEY_SPELLING: Final = "Autograd"

_FALLBACK_MARKER: Final = "autogradNotImplementedFallback"
_NODE_CREATION: Final = re.compile(r"c10::make_intrusive<(\w+)>\(")
_REGISTERED_NAME: Final = re.compile(r'm\.impl\("([^"]+)"')
_COMPLEX_CHECK: Final = re.compile(r'throw_error_for_complex_autograd\((\w+), "')
# Our own template, handed to torchgen's process_function so that it renders
# only the data members it declares for one Node.
_MEMBERS_ONLY: Final = CodeTemplate("${saved_variables}\n${saved_list_sizes}\n")
# Likewise for what a Node's compiled_args collects and apply_with_saved swaps.
_COMPILED_ONLY: Final = CodeTemplate(
    "${compiled_args}\n--\n${apply_with_saved_before}\n--\n${apply_with_saved_after}\n"
)
_MEMBER_DECL: Final = re.compile(r"^(?P<type>.+?)\s+(?P<name>\w+)(?:\s*=\s*[^;]+)?;$")


@dataclass(frozen=True)
class TorchgenPaths:
    """The three yaml files torchgen ships, as gen_autograd reads them."""

    native_functions: Path
    tags: Path
    derivatives: Path


@functools.lru_cache(maxsize=1)
def paths() -> TorchgenPaths:
    root = Path(torchgen.__file__).parent / "packaged"
    return TorchgenPaths(
        native_functions=root / "ATen" / "native" / "native_functions.yaml",
        tags=root / "ATen" / "native" / "tags.yaml",
        derivatives=root / "autograd" / "derivatives.yaml",
    )


def _load_yaml_list(path: Path) -> list[object]:
    with path.open() as f:
        data = yaml.load(f, Loader=YamlLoader)
    if not isinstance(data, list):
        raise TypeError(f"{path}: expected a yaml list, got {type(data).__name__}")
    return data


@functools.lru_cache(maxsize=1)
def entry_count() -> int:
    """Top-level entries in native_functions.yaml (before generated variants)."""
    return len(_load_yaml_list(paths().native_functions))


@functools.lru_cache(maxsize=1)
def derivative_entry_count() -> int:
    """Top-level entries in derivatives.yaml."""
    return len(_load_yaml_list(paths().derivatives))


@functools.lru_cache(maxsize=1)
def _native_functions() -> tuple[NativeFunction, ...]:
    p = paths()
    return tuple(parse_native_yaml(str(p.native_functions), str(p.tags)).native_functions)


@functools.lru_cache(maxsize=1)
def native_function_count() -> int:
    """NativeFunctions after torchgen adds its generated variants (out=, functional)."""
    return len(_native_functions())


@dataclass(frozen=True)
class _Model:
    infos: dict[FunctionSchema, dict[str, DifferentiabilityInfo]]
    used_keys: frozenset[str]
    matched: tuple[NativeFunctionWithDifferentiabilityInfo, ...]


@functools.lru_cache(maxsize=1)
def _model() -> _Model:
    """Load derivatives and match them the way gen_autograd.gen_autograd does.

    torchgen's load_derivatives keeps a module-global cache and
    match_differentiability_info adds the generated out-of-place _foreach_
    infos to that same dict, so we copy the dict first and match exactly once.
    """
    # Imported here: load_derivatives pulls in the whole packaged autograd codegen.
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    p = paths()
    loaded, used_keys = load_derivatives(str(p.derivatives), str(p.native_functions), str(p.tags))
    infos = dict(loaded)
    # gen_autograd matches the functions in this order (the nop selector keeps all).
    fns = sorted(_native_functions(), key=lambda f: cpp.name(f.func))
    matched = match_differentiability_info(fns, infos)
    return _Model(infos=infos, used_keys=frozenset(used_keys), matched=tuple(matched))


@functools.lru_cache(maxsize=1)
def used_dispatch_keys() -> frozenset[str]:
    """Autograd keys that get a TORCH_LIBRARY_IMPL block, spelled as registered."""
    return frozenset(DEFAULT_KEY_SPELLING if k == "Default" else k for k in _model().used_keys)


@dataclass(frozen=True)
class _Emitted:
    kind: Kind
    node: str | None
    complex_checked: frozenset[str] = frozenset()
    save_guards: frozenset[tuple[str, str]] = frozenset()
    debug: tuple[bool, frozenset[str], frozenset[str]] = (False, frozenset(), frozenset())
    jvp_decomposition: bool = False
    tangent_clone: bool = False
    forward: tuple[tuple[str, ...], frozenset[tuple[str, str, str]]] = ((), frozenset())
    hooks: tuple[tuple[str, ...], bool] = ((), True)


_FORWARD_FORMULA: Final = re.compile(r"^\s*\w+_new_fw_grad_opts?(?:\[i\])? = (.*);$", re.M)
_FORWARD_BINDING: Final = re.compile(r"auto (\w+?)(_t_raw|_p) = (?:toNonOptFwGrad|toNonOptPrimal)\((.+?)\);")


def forward_code(
    definition: str, binding: re.Pattern[str] = _FORWARD_BINDING
) -> tuple[tuple[str, ...], frozenset[tuple[str, str, str]]]:
    """A kernel's forward-mode formulas, in order, and what each name bound for them reads."""
    formulas = tuple(_FORWARD_FORMULA.findall(definition))
    return formulas, frozenset(binding.findall(definition))


_UNIQUE_STORAGE: Final = re.compile(r"TORCH_INTERNAL_ASSERT\((\w+)\.storage\(\)\.use_count\(\) == 1")
_FRESH_IMPL: Final = re.compile(r"TORCH_INTERNAL_ASSERT\((\w+)\.use_count\(\) == expected_fresh_use_count")


def _debug_checks(definition: str) -> tuple[bool, frozenset[str], frozenset[str]]:
    """(has debug checks, outputs asserted to own their storage, outputs asserted to be fresh)."""
    return (
        "#ifndef NDEBUG" in definition,
        frozenset(_UNIQUE_STORAGE.findall(definition)),
        frozenset(_FRESH_IMPL.findall(definition)),
    )


_GUARD_OPEN: Final = re.compile(r"^\s+if \((.*should_compute_output.*)\) \{$")
_MEMBER_SET: Final = re.compile(r"^\s+grad_fn->(\w+?)_? = ")


def _save_guards(definition: str) -> frozenset[tuple[str, str]]:
    """(saved member, condition) for each member saved under a should_compute_output test."""
    found: set[tuple[str, str]] = set()
    condition: str | None = None
    for line in definition.splitlines():
        opened = _GUARD_OPEN.match(line)
        if opened:
            condition = opened.group(1)
            continue
        member = _MEMBER_SET.match(line)
        if member and condition is not None:
            found.add((member.group(1).rstrip("_"), condition))
            condition = None
        elif line.strip() == "}":
            condition = None
    return frozenset(found)


@functools.lru_cache(maxsize=1)
def _emitted() -> dict[RegKey, _Emitted]:
    """Ask torchgen, one operator at a time, what VariableType gets.

    gen_variable_type feeds every matched function for which use_derived() holds
    to gen_variable_type_func; that returns, per derivatives.yaml key, the
    registration line and the kernel definition.  We read the operator name
    from the registration, the kind from whether it is the not-implemented
    fallback, and the Node from the first c10::make_intrusive<...> in the body.
    """
    out: dict[RegKey, _Emitted] = {}
    for fn in _model().matched:
        if not use_derived(fn):
            continue
        emitted = gen_variable_type_func(fn)
        for field, lines in emitted.items():
            if not field.startswith("wrapper_registrations_"):
                continue
            key = field.removeprefix("wrapper_registrations_")
            spelled = DEFAULT_KEY_SPELLING if key == "Default" else key
            (registration,) = lines
            found = _REGISTERED_NAME.search(registration)
            if found is None:
                raise AssertionError(f"unrecognised registration: {registration!r}")
            op = found.group(1)
            if op != str(fn.func.func.name):
                raise AssertionError(f"{op} registered for {fn.func.func.name}")
            (definition,) = emitted[f"type_derived_method_definitions_{key}"]
            if _FALLBACK_MARKER in registration:
                record = _Emitted(kind="fallback", node=None)
            else:
                node = _NODE_CREATION.search(definition)
                checked = frozenset(_COMPLEX_CHECK.findall(definition))
                record = _Emitted(
                    kind="kernel",
                    node=node.group(1) if node else None,
                    complex_checked=checked,
                    save_guards=_save_guards(definition),
                    debug=_debug_checks(definition),
                    jvp_decomposition="run_jit_decomposition_with_args_for_jvp" in definition,
                    tangent_clone="self_t = GradMode::is_enabled() ? self_t.clone() : self_t;" in definition,
                    forward=forward_code(definition),
                    hooks=hook_sites(definition),
                )
            if (op, spelled) in out:
                raise AssertionError(f"duplicate registration {(op, spelled)}")
            out[(op, spelled)] = record
    return out


_BUMP: Final = re.compile(r"increment_version\((\w+)\);")
_VIEW_BASE: Final = re.compile(r"as_view\((?:/\* base \*/ )?(\w+),")


@functools.lru_cache(maxsize=1)
def inplace_or_view() -> dict[str, tuple[object, ...]]:
    """Every ADInplaceOrView registration (op -> treatment), read off torchgen's kernel text per op.

    ``("mutation", bumped names)`` for an in-place or out= kernel; ``("view", base, backward
    differentiable, one view per list element, always replayed by its view function)`` for a view.
    """
    out: dict[str, tuple[object, ...]] = {}
    for fn in _model().matched:
        if not use_derived(fn):
            continue
        env = gen_inplace_or_view_type_env(fn)
        registrations = env["inplace_or_view_wrapper_registrations"]
        if not registrations:
            continue
        found = _REGISTERED_NAME.search(registrations[0])
        if found is None:
            raise AssertionError(f"unrecognised registration: {registrations[0]!r}")
        (definition,) = env["inplace_or_view_method_definitions"]
        if "increment_version" in definition:
            out[found.group(1)] = ("mutation", tuple(_BUMP.findall(definition)))
            continue
        base = _VIEW_BASE.search(definition)
        if base is None:
            raise AssertionError(f"neither a version bump nor as_view: {definition!r}")
        differentiable = "/* is_bw_differentiable */ true" in definition
        out[found.group(1)] = ("view", base.group(1), differentiable, "MULTI_OUTPUT_NODE" in definition,
                               "if (true ||" in definition)  # fmt: skip
    return out


@functools.lru_cache(maxsize=1)
def registrations() -> dict[RegKey, Kind]:
    """Every VariableType registration: (op, autograd key) -> "kernel" | "fallback"."""
    return {k: v.kind for k, v in _emitted().items()}


@functools.lru_cache(maxsize=1)
def complex_checked() -> dict[RegKey, frozenset[str]]:
    """For each generated kernel, the outputs it checks are not complex (empty: none)."""
    return {k: v.complex_checked for k, v in _emitted().items() if v.kind == "kernel"}


@functools.lru_cache(maxsize=1)
def debug_checks() -> dict[RegKey, tuple[bool, frozenset[str], frozenset[str]]]:
    """Per kernel: whether it has #ifndef NDEBUG checks, and which outputs they constrain."""
    return {k: v.debug for k, v in _emitted().items() if v.kind == "kernel"}


@functools.lru_cache(maxsize=1)
def jvp_decompositions() -> frozenset[RegKey]:
    """Kernels that, without a forward formula, run the op's decomposition when a tangent is present."""
    return frozenset(k for k, v in _emitted().items() if v.kind == "kernel" and v.jvp_decomposition)


@functools.lru_cache(maxsize=1)
def tangent_clones() -> frozenset[RegKey]:
    """In-place kernels reusing an out-of-place forward formula, which copy ``self_t`` under grad mode."""
    return frozenset(k for k, v in _emitted().items() if v.kind == "kernel" and v.tangent_clone)


@functools.lru_cache(maxsize=1)
def forward() -> dict[RegKey, tuple[tuple[str, ...], frozenset[tuple[str, str, str]]]]:
    """Per kernel: its forward-mode formulas and the (name, _t_raw or _p, expression read) it binds."""
    return {k: v.forward for k, v in _emitted().items() if v.kind == "kernel"}


@functools.lru_cache(maxsize=1)
def node_creation_hooks() -> dict[RegKey, tuple[tuple[str, ...], bool]]:
    """Per kernel: the Nodes it fires node-creation hooks on (2.14 and later), after its last save or not."""
    return {k: v.hooks for k, v in _emitted().items() if v.kind == "kernel"}


@functools.lru_cache(maxsize=1)
def save_guards() -> dict[RegKey, frozenset[tuple[str, str]]]:
    """For each generated kernel, the saved members guarded by should_compute_output, with the guard."""
    return {k: v.save_guards for k, v in _emitted().items() if v.kind == "kernel"}


@functools.lru_cache(maxsize=1)
def node_for_kernel() -> dict[RegKey, str | None]:
    """For each generated kernel, the Node type it creates as grad_fn.

    None when the kernel creates no Node (out= variants, ops whose outputs or
    inputs are not differentiable, DONT_REQUIRE_DERIVATIVE ops).  Ops that
    require a derivative but have no formula get torchgen's "NotImplemented"
    Node.  Fallback registrations are not listed.
    """
    return {k: v.node for k, v in _emitted().items() if v.kind == "kernel"}


@functools.lru_cache(maxsize=1)
def _node_infos() -> tuple[DifferentiabilityInfo, ...]:
    # Same selection gen_autograd_functions_lib makes, after matching (which
    # adds the generated _foreach_ infos).
    return tuple(get_infos_with_derivatives_list(_model().infos))


@functools.lru_cache(maxsize=1)
def nodes() -> frozenset[str]:
    """Names of the Node subclasses declared in Functions.h."""
    names = [info.op for info in _node_infos()]
    if None in names or len(set(names)) != len(names):
        raise AssertionError("Node names are missing or duplicated")
    return frozenset(n for n in names if n is not None)


def _parse_members(text: str, node: str) -> tuple[tuple[str, str], ...]:
    members: list[tuple[str, str]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _MEMBER_DECL.match(line)
        if m is None:
            raise AssertionError(f"{node}: cannot read member declaration {line!r}")
        members.append((m.group("name"), m.group("type")))
    return tuple(members)


@functools.lru_cache(maxsize=1)
def saved_members() -> dict[str, tuple[tuple[str, str], ...]]:
    """node -> data members torchgen declares for it, in declaration order.

    Each member is (name, C++ type), e.g. ("self_", "SavedVariable"),
    ("self_sym_sizes", "std::vector<c10::SymInt>"), ("tensors_released_",
    "bool"), ("tensors_size_", "size_t").  Saved inputs come first, then saved
    outputs, each sorted by name; list sizes come last.  The
    ``retain_variables`` flag (for formulas using retain_variables) is not a
    saved member and is not listed.
    """
    result: dict[str, tuple[tuple[str, str], ...]] = {}
    for info in _node_infos():
        assert info.op is not None
        result[info.op] = _parse_members(process_function(info, _MEMBERS_ONLY), info.op)
    return result


@functools.lru_cache(maxsize=1)
def compiled_autograd() -> dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
    """node -> (what compiled_args collects, what apply_with_saved swaps before, and after), in order.

    E.g. MulBackward0: ``args.collect(other_, false);`` ..., ``saved.before(other_);`` ...
    """
    out: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}
    for info in _node_infos():
        assert info.op is not None
        out[info.op] = compiled_lines(process_function(info, _COMPILED_ONLY))
    return out


# --------------------------------------------------------------------------
# Cross-check against a reference run of gen_autograd (not used by tests).


def _reference_registrations(ref: Path) -> dict[RegKey, Kind]:
    block = re.compile(r"TORCH_LIBRARY_IMPL\(aten, (\w+), m\) \{(.*?)\n\}", re.S)
    impl = re.compile(r'm\.impl\("([^"]+)",\s*(TORCH_FN|torch::autograd::autogradNotImplementedFallback)')
    found: dict[RegKey, Kind] = {}
    for shard in sorted(ref.glob("VariableType_*.cpp")):
        for key, body in block.findall(shard.read_text()):
            for op, how in impl.findall(body):
                found[(op, key)] = "kernel" if how == "TORCH_FN" else "fallback"
    return found


def _reference_members(ref: Path) -> dict[str, tuple[tuple[str, str], ...]]:
    text = (ref / "Functions.h").read_text()
    struct = re.compile(r"struct TORCH_API (\w+) : public \w+ \{\n#endif\n(.*?)\n\};", re.S)
    out: dict[str, tuple[tuple[str, str], ...]] = {}
    for name, body in struct.findall(text):
        tail = body.split("SwapSavedVariables& saved) override;", 1)[1]
        out[name] = _parse_members(tail, name)
    return out


def _cross_check(ref: Path) -> list[str]:
    problems: list[str] = []
    ref_regs = _reference_registrations(ref)
    if ref_regs != registrations():
        problems.append(f"registrations differ: {len(ref_regs)} in {ref}, {len(registrations())} computed")
    ref_members = _reference_members(ref)
    if set(ref_members) != nodes():
        problems.append("Node names differ from Functions.h")
    elif ref_members != saved_members():
        bad = sorted(n for n in ref_members if ref_members[n] != saved_members()[n])
        problems.append(f"saved members differ for {len(bad)} nodes, e.g. {bad[:5]}")
    return problems


def release_facts() -> dict[str, object]:
    """The facts a parity test compares, as JSON-ready data (for a torchgen run in a subprocess)."""

    def keyed(d: dict[RegKey, object]) -> list[list[object]]:
        return [[op, key, value] for (op, key), value in sorted(d.items())]

    return {
        "torchgen": str(Path(torchgen.__file__).parent),
        "registrations": keyed(dict(registrations())),
        "node_for_kernel": keyed(dict(node_for_kernel())),
        "nodes": sorted(nodes()),
        "saved_members": {n: [list(m) for m in ms] for n, ms in sorted(saved_members().items())},
        "compiled_autograd": {n: [list(x) for x in v] for n, v in sorted(compiled_autograd().items())},
        "complex_checked": keyed({k: sorted(v) for k, v in complex_checked().items()}),
        "node_creation_hooks": keyed({k: [list(f), last] for k, (f, last) in node_creation_hooks().items()}),
        "inplace_or_view": {op: list(t) for op, t in sorted(inplace_or_view().items())},
    }


def _main() -> int:
    import sys

    if sys.argv[1:] == ["--json"]:
        import json

        json.dump(release_facts(), sys.stdout, sort_keys=True)
        return 0
    regs = registrations()
    kinds = list(regs.values())
    per_key = {k: sum(1 for (_, key) in regs if key == k) for k in sorted(used_dispatch_keys())}
    kernel_nodes = node_for_kernel()
    print(f"native_functions.yaml entries : {entry_count()}")
    print(f"native functions (generated)  : {native_function_count()}")
    print(f"derivatives.yaml entries      : {derivative_entry_count()}")
    print(f"registrations                 : {len(regs)}  per key {per_key}")
    print(f"  kernels / fallbacks         : {kinds.count('kernel')} / {kinds.count('fallback')}")
    print(f"  kernels creating a Node     : {sum(1 for n in kernel_nodes.values() if n)}")
    print(f"  kernels creating NotImplemented: {sum(1 for n in kernel_nodes.values() if n == 'NotImplemented')}")
    print(f"Nodes                         : {len(nodes())}")
    print(f"Nodes with saved members      : {sum(1 for m in saved_members().values() if m)}")
    ref = Path("/tmp/ref")
    if (ref / "Functions.h").exists():
        problems = _cross_check(ref)
        print("cross-check with /tmp/ref    :", problems or "OK")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
