"""Reading formulas: which values a backward formula needs saved, and how it is rewritten.

A backward formula is C++ over the op's inputs and outputs.  Some uses of an
input only need a cheap property of it (``self.sym_sizes()``,
``self.scalar_type()``); those are saved as their own members and the formula
is rewritten to use the member.  Any input still named after that is saved whole.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..base.errors import Location, VtgenError
from .values import CppValue

__all__ = ["SavedValue", "concrete_sizes", "extract_saved", "ident_re", "uses_ident"]


@dataclass(frozen=True)
class SavedValue:
    """A value the kernel stores on the Node: member name, C++ value type, forward-time expression."""

    name: str
    cpp_type: str
    expr: str
    is_output: bool = False


def ident_re(name: str) -> str:
    """A regex matching ``name`` as a whole C++ identifier (group 1 and 2 are the borders)."""
    return rf"(^|\W){name}($|\W)"


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """Patterns are built per argument name; compile each once (re's own cache is too small)."""
    return re.compile(pattern)


_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text))


def uses_ident(text: str, name: str) -> bool:
    """Does ``name`` appear in ``text`` as a whole identifier (``ident_re(name)`` finds it)?"""
    if name not in text:
        return False
    if name.isidentifier():  # bordered by non-word characters: one of the text's maximal \w runs
        return name in _words(text)
    return _compiled(ident_re(name)).search(text) is not None


@dataclass(frozen=True)
class _Rule:
    """``pattern`` (with ``{}`` for the value name) → member ``name + suffix`` of ``cpp_type``."""

    pattern: str
    suffix: str | Callable[[re.Match[str]], str]
    cpp_type: str
    expr: Callable[[str], str] | None = None  # forward-time expression, default: the match
    rewrite: Callable[[str], str] | None = None  # formula text, default: the member name

    @functools.cached_property
    def needle(self) -> str:
        """Literal text every match contains (the method or helper name): a cheap pre-test."""
        return re.split(r"[\\{]", self.pattern.replace("{}.", "").replace("{}", ""))[0]


_RULES = (
    _Rule(r"{}.sym_sizes\(\)", "_sym_sizes", "c10::SymIntArrayRef"),
    _Rule(
        r"{}->sym_sizes\(\)",
        "_sym_sizes_opt",
        "::std::optional<c10::SymIntArrayRef>",
        expr=lambda n: f"{n}.has_value() ? std::optional<c10::SymIntArrayRef>({n}->sym_sizes()) : std::nullopt",
    ),
    _Rule(
        r"{}.sym_blocksize\(\)",
        "_self_sym_blocksize_opt",
        "::std::optional<c10::SymIntArrayRef>",
        expr=lambda n: f"at::sparse_csr::getSymIntBlockSize({n})",
    ),
    _Rule(r"{}.options\(\)", "_options", "at::TensorOptions"),
    _Rule(
        r"zeros_like\({}\)",
        "_info",
        "torch::autograd::generated::TypeAndSize",
        expr=lambda n: n,
        rewrite=lambda n: f"{n}_info.zeros()",
    ),
    _Rule(r"{}.sym_size\((-?\w+)\)", lambda m: f"_sym_argsize_{m.group(1).replace('-', 'minus_')}", "c10::SymInt"),
    _Rule(r"{}.numel\(\)", "_numel", "int64_t"),
    _Rule(r"{}.sym_numel\(\)", "_sym_numel", "c10::SymInt"),
    _Rule(r"to_args_sizes\({}\)", "_args_sizes", "::std::vector<::std::vector<int64_t>>"),
    _Rule(r"to_args_sizes_symint\({}\)", "_args_sizes_symint", "::std::vector<::std::vector<c10::SymInt>>"),
    _Rule(r"to_args_scalartypes\({}\)", "_args_scalartypes", "::std::vector<at::ScalarType>"),
    _Rule(r"TensorGeometry\({}\)", "_geometry", "at::TensorGeometry"),
    _Rule(r"{}.scalar_type\(\)", "_scalar_type", "at::ScalarType"),
    _Rule(r"{}.dim\(\)", "_dim", "int64_t"),
    _Rule(r"{}.sym_strides\(\)", "_sym_strides", "c10::SymIntArrayRef", expr=lambda n: f'strides_or_error({n}, "{n}")'),
    _Rule(r"{}.layout\(\)", "_layout", "at::Layout"),
    _Rule(r"{}.is_conj\(\)", "_conjugate", "bool"),
)

_STRIDES_OR_ERROR = re.compile(r'strides_or_error\((\w+), "\1"\)')


def backward_spelling(expr: str) -> str:
    """A saved value's forward-time expression as a backward formula spells it: ``strides_or_error(x, "x")``
    (the forward's check that the strides exist, declared only where the kernels are) is ``x.sym_strides()``."""
    return _STRIDES_OR_ERROR.sub(lambda m: f"{m.group(1)}.sym_strides()", expr)


# The C++ API's concrete spellings, and the symbolic ones a formula's saved sizes take: the Python autograd
# accepts both (a size is a SymInt there either way); the C++ autograd refuses the concrete ones, whose
# int64_t would throw on a tensor with symbolic sizes (``concrete_sizes``).
_CONCRETE = (
    (re.compile(r"(\.|->)sizes\(\)"), ".sizes()", ".sym_sizes()"),
    (re.compile(r"(\.|->)size\((-?\d+)\)"), ".size(int)", ".sym_size(int)"),
    (re.compile(r"(\.|->)strides\(\)"), ".strides()", ".sym_strides()"),
)


def _symbolic(formula: str) -> str:
    """``formula`` with the concrete spellings of sizes written symbolically (``x.size(-1)``: ``x.sym_size(-1)``)."""
    formula = _CONCRETE[0][0].sub(".sym_sizes()", formula)
    formula = _CONCRETE[1][0].sub(lambda m: f".sym_size({m.group(2)})", formula)
    return _CONCRETE[2][0].sub(".sym_strides()", formula)


def concrete_sizes(original: str, where: Location) -> None:
    """For the C++ autograd: a formula reading a concrete size is an error at its line, with the column."""
    found = [
        (m.start(), written, symbolic) for pattern, written, symbolic in _CONCRETE if (m := pattern.search(original))
    ]
    if found:
        column, written, symbolic = min(found)
        raise VtgenError(
            f"{written} is not supported in C++ autograd formulas (column {column + 1} of the formula: a saved "
            f"size must be symbolic); use {symbolic} (the Python autograd of a stable-ABI library takes either)",
            where,
        )


def extract_saved(
    formula: str, values: tuple[CppValue, ...], var_names: tuple[str, ...], where: Location, *, outputs: bool
) -> tuple[str, tuple[SavedValue, ...]]:
    """Rewrite ``formula`` to use saved members; return it with the values to save."""
    formula = _symbolic(formula)
    saved: list[SavedValue] = []
    for value in values:
        if value.name not in formula:
            continue  # cheap test first: most arguments never appear in a formula
        for rule in _RULES:
            if rule.needle in formula:
                formula = _apply_rule(rule, value.name, formula, saved, var_names, where, outputs)
        if value.cpp_type == "::std::optional<c10::string_view>":
            optional_view = (
                f"{value.name}.has_value() ? std::optional<std::string_view>({value.name}.value()) : std::nullopt"
            )
            formula = re.sub(rf"\b{value.name}\b", optional_view, formula)
        if uses_ident(formula, value.name):
            saved.append(SavedValue(value.name, value.cpp_type, value.name, outputs))
    return formula, tuple(saved)


def _apply_rule(
    rule: _Rule,
    name: str,
    formula: str,
    saved: list[SavedValue],
    var_names: tuple[str, ...],
    where: Location,
    outputs: bool,
) -> str:
    def replace(m: re.Match[str]) -> str:
        suffix = rule.suffix(m) if callable(rule.suffix) else rule.suffix
        if rule.suffix == "_sym_strides" and var_names != (name,):
            raise VtgenError(f"'{name}.sym_strides()' may only be used in the formula for '{name}' alone", where)
        expr = rule.expr(name) if rule.expr else m.group(0)
        saved.append(SavedValue(name + suffix, rule.cpp_type, expr, outputs))
        return rule.rewrite(name) if rule.rewrite else name + suffix

    return _compiled(rule.pattern.format(name)).sub(replace, formula)
