"""Spelling one ADInplaceOrView kernel (and a view op's replay function) from its InplaceOrViewPlan.

A mutating kernel redispatches below ADInplaceOrView, then bumps the version
counter of what it returns.  A view kernel redispatches, then makes the result
a view of its base with ``as_view``.  When the base cannot be viewed by
``as_strided`` (or view replay is on, or the view changes metadata) it also
hands ``as_view`` a view function replaying the op on another base: a
``torch::autograd::ViewFunc`` of our own (libtorch's generated ones are not
exported), defined with internal linkage next to the kernel.  No inverse view
function is generated: the reverse function raises if ever called.
"""

from __future__ import annotations

from ..model.cpp_api import dispatcher_arguments, dispatcher_returns
from ..plan.inplace_or_view import InplaceOrViewPlan, ViewPlan
from .dispatch import handle_declaration, redispatch_call

__all__ = ["inplace_or_view_definition", "inplace_or_view_registration"]

_KEYSET = "ks & c10::after_ADInplaceOrView_keyset"
_GUARD = "at::AutoDispatchBelowADInplaceOrView guard;"
_REPLAY = "_replay"  # the view function's own handle

# kernel parameter type -> the type a view function keeps it as (owning, copyable)
_OWNED = {
    "at::IntArrayRef": "::std::vector<int64_t>",
    "c10::SymIntArrayRef": "::std::vector<c10::SymInt>",
    "c10::string_view": "std::string",
    "::std::optional<c10::string_view>": "::std::optional<std::string>",
}
_BORROWED = ("ArrayRef", "ITensorListRef", "TensorList", "c10::List", "&&")


def inplace_or_view_registration(p: InplaceOrViewPlan) -> str:
    return f'm.impl("{p.op}", TORCH_FN(ADInplaceOrView::{p.wrapper}));'


def inplace_or_view_definition(p: InplaceOrViewPlan) -> str:
    """The kernel (preceded by its view function, for a view op that can be replayed)."""
    f = p.function
    params = ", ".join(["c10::DispatchKeySet ks", *(f"{b.type.cpp()} {b.name}" for b in dispatcher_arguments(f))])
    lines = [] if f.namespace == "aten" else [handle_declaration(f)]
    lines += _mutation(p) if p.view is None else _view(p, p.view)
    body = "\n".join("  " + line for line in "\n".join(lines).split("\n"))
    kernel = f"{dispatcher_returns(f).cpp()} {p.wrapper}({params}) {{\n{body}\n}}"
    replay = _view_func(p, p.view) if p.view is not None and p.view.differentiable else None
    return kernel if replay is None else f"{replay}\n\n{kernel}"


def _args(p: InplaceOrViewPlan) -> str:
    return ", ".join(a.name for a in p.function.func.arguments.all)


def _return(names: tuple[str, ...]) -> list[str]:
    if not names:
        return []
    if len(names) == 1:
        return [f"return {names[0]};"]
    return [f"return std::forward_as_tuple({', '.join(names)});"]


def _mutation(p: InplaceOrViewPlan) -> list[str]:
    call = redispatch_call(p.function, _KEYSET, _args(p))
    lists = {a.name for a in p.function.func.arguments.all if a.type.is_list()}
    bumps = [
        f"for (const auto& t : {name}) torch::autograd::increment_version(t);"
        if name in lists
        else f"torch::autograd::increment_version({name});"
        for name in p.bumped
    ]
    returned = p.bumped if p.function.func.returns else ()
    return ["{", f"  {_GUARD}", f"  {call};", "}", *bumps, *_return(returned)]


def _creation_meta(original: str) -> str:
    in_grad_mode = f"(at::GradMode::is_enabled() ? {original} : CreationMeta::NO_GRAD_MODE)"
    return f"c10::InferenceMode::is_enabled() ? CreationMeta::INFERENCE_MODE : {in_grad_mode}"


def _view(p: InplaceOrViewPlan, v: ViewPlan) -> list[str]:
    call = redispatch_call(p.function, _KEYSET, _args(p))
    lines = ["auto _tmp = ([&]() {", f"  {_GUARD}", f"  return {call};", "})();"]
    if not v.differentiable:
        as_view = f"as_view(/* base */ {v.base}, /* output */ _tmp, /* is_bw_differentiable */ false, " \
                  "/* is_fw_differentiable */ false)"  # fmt: skip
        return [*lines, f"return {as_view};"]
    if v.multi_output:
        meta = _creation_meta("CreationMeta::MULTI_OUTPUT_NODE")
        loop = [*_replay_setup(p, v, "view_idx"), _as_view_call(v, "_tmp[view_idx]", meta) + ";"]
        return [*lines, "for (auto view_idx : c10::irange(_tmp.size())) {", *("  " + x for x in loop), "}",
                "return _tmp;"]  # fmt: skip
    meta = _creation_meta("CreationMeta::DEFAULT")
    return [*lines, *_replay_setup(p, v, None), f"return {_as_view_call(v, '_tmp', meta)};"]


def _as_view_call(v: ViewPlan, output: str, meta: str) -> str:
    return (
        f"as_view(/* base */ {v.base}, /* output */ {output}, /* is_bw_differentiable */ true, "
        "/* is_fw_differentiable */ true, /* view_func */ std::move(func), /* rev_view_func */ rev_func, "
        f"/* creation_meta */ {meta})"
    )


def _captured(p: InplaceOrViewPlan, v: ViewPlan) -> list[tuple[str, str]] | None:
    """(name, owned type) of every argument the view function keeps; None: one cannot be kept."""
    kept = []
    for b in dispatcher_arguments(p.function):
        if b.name == v.base:
            continue
        cpp = b.type.cpp()
        owned = _OWNED.get(cpp) or cpp.removeprefix("const ").removesuffix(" &").removesuffix("&").strip()
        if any(s in owned for s in _BORROWED) or owned.endswith("&"):
            return None
        kept.append((b.name, owned))
    return kept


def _struct_name(p: InplaceOrViewPlan) -> str:
    return f"{p.wrapper}_ViewFunc"


def _replay_setup(p: InplaceOrViewPlan, v: ViewPlan, view_idx: str | None) -> list[str]:
    kept = _captured(p, v)
    condition = " ||\n    ".join([
        "true" if v.metadata_change else "false",
        f"!{v.base}.unsafeGetTensorImpl()->support_as_strided()",
        f"{v.base}.unsafeGetTensorImpl()->is_python_dispatch()",
        "c10::AutogradState::get_tls_state().get_view_replay_enabled()",
    ])  # fmt: skip
    lines = [
        "std::unique_ptr<torch::autograd::ViewFunc> func(nullptr);",
        "std::function<at::Tensor(const at::Tensor&)> rev_func = nullptr;",
    ]
    if kept is None:
        return [*lines, f"// {p.op}: an argument cannot be kept by a view function; views replay by as_strided"]
    args = [name if "vector" not in owned else f"{name}.vec()" for name, owned in kept]
    message = f'"{p.op}: vtgen_build generates no inverse view function"'
    ctor_args = ", ".join([*args, *([view_idx] if view_idx else [])])
    return [
        *lines,
        f"if ({condition}) {{",
        f"  func = std::make_unique<{_struct_name(p)}>({ctor_args});",
        f"  rev_func = [](const at::Tensor&) -> at::Tensor {{ TORCH_CHECK(false, {message}); return at::Tensor(); }};",
        "}",
    ]


def _view_func(p: InplaceOrViewPlan, v: ViewPlan) -> str | None:
    """A ViewFunc replaying the op on a new base with the arguments it was called with."""
    kept = _captured(p, v)
    if kept is None:
        return None
    members = [*kept, *([("view_idx", "int64_t")] if v.multi_output else [])]
    name = _struct_name(p)
    explicit = "explicit " if len(members) == 1 else ""
    inits = " : " + ", ".join(f"{n}(std::move({n}_))" for n, _ in members) + " " if members else " "
    ctor = f"  {explicit}{name}({', '.join(f'{t} {n}_' for n, t in members)}){inits}{{}}"
    call_args = ", ".join("input_base" if a.name == v.base else a.name for a in p.function.func.arguments.all)
    pick = "[view_idx]" if v.multi_output else ""
    lookup = handle_declaration(p.function, _REPLAY)
    return "\n".join([
        f"// Replays {p.op} on another base (a view of a view, or a base as_strided cannot view).",
        f"struct {name} final : public torch::autograd::ViewFunc {{",
        ctor,
        "  at::Tensor operator()(const at::Tensor& input_base) const override {",
        f"    {lookup}",
        f"    return {_REPLAY}.call({call_args}){pick};",
        "  }",
        "  std::unique_ptr<torch::autograd::ViewFunc> clone_and_set(",
        "      std::optional<std::vector<c10::SymInt>> = std::nullopt,",
        "      std::optional<std::vector<at::Tensor>> = std::nullopt) const override {",
        f"    return std::make_unique<{name}>(*this);",
        "  }",
        *(f"  {t} {n};" for n, t in members),
        "};",
    ])  # fmt: skip
