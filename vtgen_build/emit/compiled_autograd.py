"""Compiled-autograd support of one backward Node: ``compiled_args`` and ``apply_with_saved``.

Compiled autograd (``torch._dynamo.compiled_autograd``) asks every Node of a backward graph
for the values its cache key depends on (``compiled_args``: each saved member, in member
order), then traces the graph: ``apply_with_saved`` swaps each saved member for its traced
stand-in, hands the Node's functional form (registered once per Node type, with the JIT
types of its arguments) and the packed arguments to the compiler, and swaps the members
back.  The functional form itself (``<Node>_apply_functional``) is spelled by
:mod:`.node`; this module only says which arguments it takes and how they travel.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..plan.formulas import SavedValue
from ..plan.infos import DerivativeInfo
from ..plan.values import saved_member_type

__all__ = [
    "LIST_TYPES",
    "FunctionalArg",
    "apply_with_saved",
    "compiled_args",
    "functional_args",
    "functional_ivalue",
    "member_name",
    "members",
    "needs_input_grad",
    "released_checks",
    "unpacks",
]

#: Input types a Node counts gradients for element by element (it keeps their ``<name>_size_``).
LIST_TYPES = (
    "at::TensorList",
    "at::ITensorListRef",
    "c10::List<::std::optional<at::Tensor>>",
    "::std::vector<at::Tensor>",
)

_MOBILE_GUARD = (
    "#ifdef C10_MOBILE",
    '  TORCH_INTERNAL_ASSERT(false, "vtgen: no compiled autograd in mobile builds");',
    "#else",
)


@dataclass(frozen=True)
class FunctionalArg:
    """One argument of ``<Node>_apply_functional``: its name (as formulas read it) and C++ type."""

    name: str
    cpp_type: str  # a reference for saved members, by value for sizes and flags

    @property
    def value_type(self) -> str:
        """The type it is packed as (``IValuePacker<...>``)."""
        return self.cpp_type.removesuffix("&").removeprefix("const").strip()


def members(info: DerivativeInfo) -> list[SavedValue]:
    """Saved values in member order: saved inputs by name, then saved outputs by name."""
    return sorted(info.saved_inputs, key=lambda v: v.name) + sorted(info.saved_outputs, key=lambda v: v.name)


def _kind(v: SavedValue) -> str:
    return saved_member_type(v.cpp_type, is_output=v.is_output)[0]


def member_name(v: SavedValue) -> str:
    """The data member holding ``v``: a SavedVariable (or a list of them) has a trailing ``_``."""
    return v.name + "_" if _kind(v) in ("SavedVariable", "std::vector<SavedVariable>") else v.name


def _unpacked_type(v: SavedValue) -> str:
    kind = _kind(v)
    if kind == "SavedVariable":
        return "Tensor&"
    if kind == "std::vector<SavedVariable>":
        return "c10::List<std::optional<Tensor>>&" if "optional" in v.cpp_type else "std::vector<Tensor>&"
    return kind + "&"


def functional_args(info: DerivativeInfo) -> list[FunctionalArg]:
    """The arguments after ``needs_input_grad``: list sizes, saved members, ``retain_variables``."""
    sizes = [FunctionalArg(f"{a.name}_size_", "size_t") for a in info.args_with_derivatives if a.cpp_type in LIST_TYPES]
    saved = [FunctionalArg(v.name, _unpacked_type(v)) for v in members(info)]
    retain = [FunctionalArg("retain_variables", "bool")] if info.uses("retain_variables") else []
    return sizes + saved + retain


def released_checks(info: DerivativeInfo) -> list[str]:
    """A backward after the Node released a saved list fails with ERR_BACKWARD_TWICE."""
    return [
        f"TORCH_CHECK(!{v.name}_released_, ERR_BACKWARD_TWICE);"
        for v in members(info)
        if len(saved_member_type(v.cpp_type, is_output=v.is_output)) > 1
    ]


def unpacks(info: DerivativeInfo) -> list[str]:
    """Saved variables as the tensors the formulas read (outputs unpacked for this Node)."""
    lines = []
    for v in members(info):
        kind, owner = _kind(v), "getptr()" if v.is_output else "nullptr"
        if kind == "SavedVariable":
            lines.append(f"auto {v.name} = {v.name}_.unpack({'getptr()' if v.is_output else ''});")
        elif kind == "std::vector<SavedVariable>":
            helper = "unpack_opt_list" if "optional" in v.cpp_type else "unpack_list"
            lines.append(f"auto {v.name} = {helper}({v.name}_, {owner});")
    return lines


def needs_input_grad(info: DerivativeInfo) -> list[str]:
    """Index ranges of the differentiable inputs and which of them the engine wants."""
    lines = ["vtgen_detail::IndexRanges gen;"]
    for a in info.args_with_derivatives:
        size = f"{a.name}_size_" if a.cpp_type in LIST_TYPES else "1"
        lines.append(f"auto {a.name}_ix = gen.range({size});")
    masks = ", ".join(f"task_should_compute_output({{ {a.name}_ix }})" for a in info.args_with_derivatives)
    n = len(info.args_with_derivatives)
    return [*lines, f"auto needs_input_grad = std::array<bool, {n}>{{ {masks} }};"]


def compiled_args(info: DerivativeInfo) -> str:
    """``<Node>::compiled_args``: every saved member, in member order (tensors with their output flag)."""
    assert info.node is not None
    lines = []
    for v in members(info):
        saved_variable = _kind(v) in ("SavedVariable", "std::vector<SavedVariable>")
        flag = f", {'true' if v.is_output else 'false'}" if saved_variable else ""
        lines.append(f"  args.collect({member_name(v)}{flag});")
    return "\n".join([f"void {info.node}::compiled_args(CompiledNodeArgs& args) const {{", *lines, "}"])


def functional_ivalue(info: DerivativeInfo) -> str:
    """``<Node>_apply_functional_ivalue``: the functional form over packed arguments, for the compiler."""
    assert info.node is not None
    n = len(info.args_with_derivatives)
    args = functional_args(info)
    call = ["variable_list(grads)", "needs_input_grad", *(a.name for a in args)]
    body = [
        "auto packed_args = PackedArgs(args);",
        f"auto needs_input_grad = packed_args.unpack<std::array<bool, {n}>>();",
        *(f"auto {a.name} = packed_args.unpack<{a.value_type}>();" for a in args),
        f"return {info.node}_apply_functional({', '.join(call)});",
    ]
    return "\n".join(
        [
            f"static variable_list {info.node}_apply_functional_ivalue(const variable_list& grads, "
            "const ivalue_list& args) {",
            *_MOBILE_GUARD,
            *("  " + line for line in body),
            "#endif",
            "}",
        ]
    )


def apply_with_saved(info: DerivativeInfo) -> str:
    """``<Node>::apply_with_saved``: swap the saved members, trace the functional form, swap back."""
    assert info.node is not None
    n = len(info.args_with_derivatives)
    args = functional_args(info)
    visits = [member_name(v) for v in members(info)]
    packers = [f"std::array<bool, {n}>", *(a.value_type for a in args)]
    schema = [f"  torch::dynamo::autograd::IValuePacker<{t}>::packed_type()," for t in packers]
    body = [
        *(f"saved.before({m});" for m in visits),
        "static bool called = false;",
        "if (!called) {",
        "  called = true;",
        *("  " + line for line in ["std::vector<at::TypePtr> schema = {", *schema, "};"]),
        "  const auto& pyinterface = torch::dynamo::autograd::getPyCompilerInterface();",
        f"  pyinterface->bind_function(saved.get_py_compiler(), name(), {info.node}_apply_functional_ivalue, schema);",
        "}",
        "PackedArgs packed_args;",
        *released_checks(info),
        *unpacks(info),
        *needs_input_grad(info),
        "packed_args.pack(needs_input_grad);",
        *(f"packed_args.pack({a.name});" for a in args),
        "auto output_result =",
        "    vtgen_detail::compiled_autograd_apply_functional(packed_args, next_edges(), saved, grads, name());",
        *(f"saved.after({m});" for m in visits),
        "return output_result;",
    ]
    return "\n".join(
        [
            f"variable_list {info.node}::apply_with_saved(const variable_list& grads, SwapSavedVariables& saved) {{",
            *_MOBILE_GUARD,
            *("  " + line for line in body),
            "#endif",
            "}",
        ]
    )
