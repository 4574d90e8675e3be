"""Spelling the debug-build (``#ifndef NDEBUG``) checks around a kernel's redispatch."""

from __future__ import annotations

from ..plan.kernel import KernelPlan

__all__ = ["debug_after", "debug_before"]

_NO_DISPATCH = "!at::impl::dispatch_mode_enabled()"


def debug_before(k: KernelPlan) -> list[str]:
    """Remember each input's storage and TensorImpl."""
    if k.debug is None:
        return []
    lines = ["#ifndef NDEBUG"]
    for name, is_list in k.debug.inputs:
        t = f"{name}_"
        if is_list:
            lines += [
                f"std::vector<::std::optional<Storage>> {t}storage_saved({t}.size());",
                f"std::vector<c10::intrusive_ptr<TensorImpl>> {t}impl_saved({t}.size());",
                f"for (size_t i = 0; i < {t}.size(); i++) {{",
                f"  if ({t}[i].has_storage()) {t}storage_saved[i] = {t}[i].storage();",
                f"  if ({t}[i].defined()) {t}impl_saved[i] = {t}[i].getIntrusivePtr();",
                "}",
            ]
        else:
            lines += [
                f"auto {t}_storage_saved =",
                f"  {t}.has_storage() ? ::std::optional<Storage>({t}.storage()) : ::std::nullopt;",
                f"c10::intrusive_ptr<TensorImpl> {t}_impl_saved;",
                f"if ({t}.defined()) {t}_impl_saved = {t}.getIntrusivePtr();",
            ]
    return [*lines, "#endif"]


def _input_checks(name: str, is_list: bool) -> list[str]:
    t = f"{name}_"
    if is_list:
        return [
            f"for (size_t i = 0; i < {t}.size() && {_NO_DISPATCH}; i++) {{",
            f"  if ({t}storage_saved[i].has_value() && !at::impl::tensorlist_has_dispatch({t}))",
            f"    TORCH_INTERNAL_ASSERT({t}storage_saved[i].value().is_alias_of({t}[i].storage()));",
            f"  if ({t}impl_saved[i] && !at::impl::tensorlist_has_dispatch({t}))",
            f"    TORCH_INTERNAL_ASSERT({t}impl_saved[i] == {t}[i].getIntrusivePtr());",
            "}",
        ]
    return [
        f"if ({t}_storage_saved.has_value() && {_NO_DISPATCH} && !at::impl::tensor_has_dispatch({t}))",
        f"  TORCH_INTERNAL_ASSERT({t}_storage_saved.value().is_alias_of({t}.storage()));",
        f"if ({t}_impl_saved && {_NO_DISPATCH} && !at::impl::tensor_has_dispatch({t}))",
        f"  TORCH_INTERNAL_ASSERT({t}_impl_saved == {t}.getIntrusivePtr());",
    ]


def _output_checks(k: KernelPlan, out: str, aliased: str | None, unique: bool, fresh: bool) -> list[str]:
    fn = k.wrapper
    lines = []
    if aliased is not None:
        lines += [
            f"if ({aliased}_.has_storage() && {_NO_DISPATCH} && !at::impl::tensor_has_dispatch({out}))",
            f"  TORCH_INTERNAL_ASSERT({aliased}_.storage().is_alias_of({out}.storage()));",
        ]
    elif unique:
        lines += [
            f"if ({out}.has_storage() && {_NO_DISPATCH} && !at::impl::tensor_has_dispatch({out})) {{",
            f'  TORCH_INTERNAL_ASSERT({out}.storage().use_count() == 1, "function: {fn}");',
            "}",
        ]
    if fresh:
        lines += [
            f"if ({_NO_DISPATCH} && !at::impl::tensor_has_dispatch({out}))",
            f'  TORCH_INTERNAL_ASSERT({out}.use_count() == expected_fresh_use_count({out}), "function: {fn}");',
        ]
    return lines


def debug_after(k: KernelPlan) -> list[str]:
    """Inputs kept their storage and TensorImpl; outputs are fresh (or alias their base)."""
    if k.debug is None:
        return []
    lines = ["#ifndef NDEBUG"]
    for name, is_list in k.debug.inputs:
        lines += _input_checks(name, is_list)
    for out, aliased, unique, fresh in k.debug.outputs:
        lines += _output_checks(k, out, aliased, unique, fresh)
    return [*lines, "#endif"]
