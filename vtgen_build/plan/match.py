"""Which derivative info each native function uses.

An op uses the info written for its own schema; otherwise an in-place or out=
variant borrows the info of its out-of-place sibling (same signature); a
derived functional variant may borrow its mutable sibling's; and ``_foreach_``
ops borrow (and, out of place, adapt) the info of the per-tensor op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..base.errors import VtgenError
from ..model.native import NativeFunction
from ..model.schema import Argument, FunctionSchema, ListType, SchemaKind
from .formulas import SavedValue, backward_spelling, ident_re
from .infos import Backward, DerivativeInfo, Forward
from .mutating import mutated_arguments
from .policy import Policy
from .values import CppValue, value_type

__all__ = ["Match", "match_infos"]


@dataclass(frozen=True)
class Match:
    """A function with the infos it uses (one per autograd key; empty when none)."""

    function: NativeFunction
    infos: tuple[DerivativeInfo, ...]
    exact: bool


@dataclass(frozen=True)
class _Index:
    exact: dict[FunctionSchema, tuple[DerivativeInfo, ...]]
    functional: dict[FunctionSchema, tuple[DerivativeInfo, ...]]
    non_functional: dict[FunctionSchema, tuple[DerivativeInfo, ...]]


def match_infos(
    functions: tuple[NativeFunction, ...], infos: dict[FunctionSchema, tuple[DerivativeInfo, ...]], policy: Policy
) -> tuple[Match, ...]:
    """Match every function (sorted by C++ name, as registration order needs) to its infos."""
    index = _Index(
        dict(infos),
        {s.signature(strip_default=True): i for s, i in infos.items() if s.kind() is SchemaKind.functional},
        {s.signature(strip_default=True): i for s, i in infos.items() if s.kind() is not SchemaKind.functional},
    )
    result = []
    for f in sorted(functions, key=lambda f: f.cpp_name):
        found, exact = _find(f, index, policy)
        if found and not exact and mutated_arguments(f):
            found = tuple(_borrowed_by_mutating(i, f) for i in found)
        if found and f.kind is SchemaKind.inplace:
            # An op library's `-> ()` op spells its own forward formula out of place, like a borrowed
            # one: the kernel writes it into self's tangent (aten's own entries are in-place already).
            in_place_text = exact and (bool(f.func.returns) or f.namespace == "aten")
            found = tuple(_inplace_forward(i, f, in_place_text) for i in found)
        result.append(Match(f, found, exact))
    return tuple(result)


def _borrowed_by_mutating(info: DerivativeInfo, f: NativeFunction) -> DerivativeInfo:
    """A `-> ()` op using its functional sibling's formulas: its one written tensor is that op's output.

    Forward formulas carry over only to ``<name>_`` writing ``self`` (as for in-place ops); any
    other such op raises PyTorch's forward-AD not-implemented error when a tangent reaches it.
    """
    mutated = mutated_arguments(f)
    if len(mutated) > 1:
        raise VtgenError(
            f"'{f.name}' returns nothing and writes {len(mutated)} tensors: it needs a derivatives.yaml entry of "
            f"its own (the formulas of '{info.func.name}' do not say which written tensor is which output)",
            f.location,
        )
    if f.kind is SchemaKind.inplace and mutated[0].name == "self":
        return info
    return replace(info, forward=())


def _is_foreach(f: NativeFunction) -> bool:
    return f.name.base.startswith("_foreach_")


def _find(f: NativeFunction, index: _Index, policy: Policy) -> tuple[tuple[DerivativeInfo, ...], bool]:
    if "generated" in f.tags and f.kind is SchemaKind.out:
        return (), False
    if f.func in index.exact:
        return index.exact[f.func], True
    sig = f.func.signature(strip_default=True)
    if sig in index.functional and not _is_foreach(f):
        return index.functional[sig], False
    if "generated" in f.tags and sig in index.non_functional:
        return index.non_functional[sig], False
    if _is_foreach(f):
        info, generated = _foreach_info(f, index, policy)
        if info is None:
            return (), False
        if generated:
            index.exact[f.func] = (info,)
            index.functional[f.func] = (info,)
        return (info,), generated
    return (), False


def _flat_non_out(schema: FunctionSchema) -> tuple[Argument, ...]:
    return schema.arguments.non_out


def _is_reference(f: NativeFunction, ref: FunctionSchema, policy: Policy) -> bool:
    """Is ``ref`` the per-tensor op a ``_foreach_`` op is built from?"""
    if f.name.base.split("_foreach_")[-1] != ref.name.base:
        return False
    if ref.name.inplace and str(f.name) not in policy.foreach_with_inplace_ref:
        return False
    args, ref_args = _flat_non_out(f.func), _flat_non_out(ref)
    if str(f.name) not in policy.foreach_skip_argument_len_check and len(args) != len(ref_args):
        return False
    return all(
        r.type == a.type or (isinstance(a.type, ListType) and r.type == a.type.elem)
        for a, r in zip(args, ref_args, strict=False)
    )


def _foreach_info(f: NativeFunction, index: _Index, policy: Policy) -> tuple[DerivativeInfo | None, bool]:
    ref = _reference(f, index.functional, policy)
    if ref is None and f.kind is SchemaKind.inplace and str(f.name) in policy.foreach_with_inplace_ref:
        ref = _reference(f, index.non_functional, policy)
    if ref is None:
        return None, False
    if f.kind is SchemaKind.inplace:
        return _inplace_foreach_forward(f, ref), False
    return _adapt_to_foreach(f, ref, policy), True


def _inplace_foreach_forward(f: NativeFunction, ref: DerivativeInfo) -> DerivativeInfo:
    """An in-place ``_foreach_`` op updates element ``i`` with the per-tensor op's JVP.

    Tensor arguments keep the per-tensor op's names (the kernel binds them to element ``i`` of
    its own lists); a scalar list becomes ``name[i]`` and any other argument takes this op's
    name.  ``match_infos`` then makes it an in-place formula, as for any in-place op.
    """
    forward = []
    for fw in ref.forward:
        text = fw.formula
        for arg, ref_arg in zip(_flat_non_out(f.func), _flat_non_out(ref.func.func), strict=False):
            text = _foreach_rename(text, arg, ref_arg, tensors=False)
        forward.append(replace(fw, formula=text))
    return replace(ref, forward=tuple(forward))


def _reference(
    f: NativeFunction, table: dict[FunctionSchema, tuple[DerivativeInfo, ...]], policy: Policy
) -> DerivativeInfo | None:
    for schema, per_key in table.items():
        if _is_reference(f, schema, policy):
            default = next((i for i in per_key if i.dispatch_key == "Default"), None)
            if default is not None:
                return default
    return None


def _adapt_to_foreach(f: NativeFunction, ref: DerivativeInfo, policy: Policy) -> DerivativeInfo:
    """The per-tensor op's formulas, applied element by element over the lists."""
    pairs = list(zip(_flat_non_out(f.func), _flat_non_out(ref.func.func), strict=False))
    to_foreach = {r.name: a for a, r in pairs}
    backward = tuple(_foreach_backward(b, to_foreach, f) for b in ref.backward)
    var_names = {n for b in backward for n in b.var_names}
    with_derivs = tuple(
        CppValue(a.name, value_type(a.type), a.type) for a in _flat_non_out(f.func) if a.name in var_names
    )
    forward = tuple(_foreach_forward(fw, f, pairs, policy) for fw in ref.forward)
    return DerivativeInfo(
        name=f.name.base,
        func=f,
        dispatch_key="Default",
        node=f"Foreach{ref.node}{f.name.overload}",
        backward=backward,
        forward=forward,
        args_with_derivatives=with_derivs,
        non_differentiable=(),
        available_named_gradients=(),
        output_differentiability=None,
        output_differentiability_condition=None,
        location=ref.location,
    )


def _foreach_backward(b: Backward, to_foreach: dict[str, Argument], f: NativeFunction) -> Backward:
    text = b.formula.replace("grad", "grads[i]").replace("result", "result[i]")
    saved_in: dict[str, SavedValue] = {}
    for value in b.saved_inputs:
        element, named = _foreach_element(value.expr, to_foreach)
        if not named:
            raise VtgenError(
                f"'{f.name}' has no derivatives entry, and this formula of its per-tensor op saves "
                f"'{value.expr}', which names none of its arguments: it cannot be applied element by element; "
                f"give '{f.name}' an entry of its own",
                b.location,
            )
        text = text.replace(value.name, element)
        saved_in.update((a.name, SavedValue(a.name, value_type(a.type), a.name)) for a in named)
    saved_out = tuple(
        SavedValue("result", "at::TensorList", "result", True) for v in b.saved_outputs if v.name == "result"
    )
    names = tuple(to_foreach[n].name for n in b.var_names)
    return Backward(names, text, b.original, tuple(saved_in.values()), saved_out, frozenset(), b.location)


_STRING = re.compile(r'("(?:[^"\\]|\\.)*")')  # a C++ string literal, kept as re.split's odd pieces


def _foreach_element(expr: str, to_foreach: dict[str, Argument]) -> tuple[str, list[Argument]]:
    """A per-tensor op's saved expression (``self.sym_sizes()``, ``strides_or_error(mat2, "mat2")``) for element
    ``i`` of the lists, as the backward formula spells it (``self[i].sym_sizes()``, ``mat2[i].sym_strides()``;
    string literals kept), and the ``_foreach_`` op's arguments it names."""
    named: list[Argument] = []
    pieces = _STRING.split(backward_spelling(expr))
    for k in range(0, len(pieces), 2):  # the code between string literals
        for ref_name, arg in to_foreach.items():
            element = arg.name + "[i]" if isinstance(arg.type, ListType) else arg.name
            pieces[k], count = re.subn(rf"(?<!\w){re.escape(ref_name)}(?!\w)", element, pieces[k])
            named += [arg] if count and arg not in named else []
    return "".join(pieces), named


def _foreach_rename(text: str, arg: Argument, ref: Argument, *, tensors: bool) -> str:
    """``ref``'s name in a per-tensor forward formula → what stands for it in the ``_foreach_`` op:
    element ``name[i]`` of a scalar list, another argument's own name, and (``tensors``) the
    ``_p``/``_t`` of a tensor list."""
    if arg.type.is_tensor_like():
        if tensors:
            for suffix in ("_p", "_t"):
                if ref.name + suffix in text:
                    text = text.replace(ref.name + suffix, arg.name + suffix)
        return text
    if isinstance(arg.type, ListType):
        return text.replace(ref.name, arg.name + "[i]")
    return text.replace(ref.name, arg.name) if arg.name != ref.name else text


def _foreach_forward(fw: Forward, f: NativeFunction, pairs: list[tuple[Argument, Argument]], policy: Policy) -> Forward:
    text = fw.formula.replace("result", "result[i]") if "result" in fw.formula else fw.formula
    names, types = list(fw.var_names), list(fw.var_types)
    tangents, primals = list(fw.required_tangents), list(fw.required_primals)
    for arg, ref in pairs:
        text = _foreach_rename(text, arg, ref, tensors=True)
        names = [arg.name if n == ref.name else n for n in names]
        types = [
            arg.type if n == arg.name and o == ref.name else t
            for n, o, t in zip(names, fw.var_names, types, strict=False)
        ]
        tangents = [arg.name if n == ref.name else n for n in tangents]
        primals = [arg.name if n == ref.name else n for n in primals]
    return replace(
        fw,
        formula=text,
        var_names=tuple(names),
        var_types=tuple(types),
        required_tangents=tuple(tangents),
        required_primals=tuple(primals),
    )


def _inplace_forward(info: DerivativeInfo, f: NativeFunction, exact: bool) -> DerivativeInfo:
    """Forward formulas of an in-place op: ``result`` is the updated ``self``."""
    if not info.forward:
        return info
    if len(info.forward) != 1:
        return info
    fw = info.forward[0]
    text = fw.formula
    originals = bool(re.search(ident_re("self_p"), text))
    text = _inplace_names(text, originals)
    primals = fw.required_primals
    if re.search(ident_re("self_p"), text):
        primals = (*primals, "self")
    if not exact:
        text = _inplace_update(text, info.name)
    needs_original = bool(re.search(ident_re("original_self_p"), text) or re.search(ident_re("original_self_t"), text))
    derived = fw.derived
    if derived is not None:  # the same renaming, of what the backward text's names stand for
        binds = [(n, _inplace_names(v, originals)) for n, v in derived.bindings]
        binds += [("result", "self_p")] * bool(re.search(ident_re("result"), derived.original))
        derived = replace(derived, bindings=tuple(binds), formula=text, inplace_update=not exact)
    new = replace(
        fw,
        formula=text,
        var_names=("self",),
        required_primals=primals,
        required_original_self=needs_original,
        reuses_outplace=not exact,
        derived=derived,
    )
    return replace(info, forward=(new,))


def _inplace_names(text: str, originals: bool) -> str:
    """An out-of-place forward formula's names in an in-place kernel: ``result`` is the updated
    ``self``; ``self_p``/``self_t`` (when ``originals``) its value and tangent before the update."""
    if originals:
        text = _rename(_rename(text, "self_p", "original_self_p"), "self_t", "original_self_t")
    return _rename(text, "result", "self_p")


def _rename(text: str, old: str, new: str) -> str:
    return re.sub(ident_re(old), lambda m: f"{m.group(1)}{new}{m.group(2)}", text)


def _inplace_update(text: str, op: str) -> str:
    m = re.fullmatch(r"self_t.([\w]*)\((.*)\)", text)
    if m and _single_call(m.group(2)) and m.group(1) == op:
        return f"self_t_raw.defined() ? self_t_raw.{m.group(1)}_({m.group(2)}) : {text}"
    return f"self_t_raw.defined() ? self_t_raw.copy_({text}) : {text}"


def _single_call(inside: str) -> bool:
    level = 1
    for ch in inside:
        level += {"(": 1, ")": -1}.get(ch, 0)
        if level == 0:
            return False
    return True
