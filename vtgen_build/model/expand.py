"""The variants derived at load time: generated out= and functional native functions.

Operators come in families sharing one ``signature()`` (``add.Tensor``,
``add_.Tensor``, ``add.out``).  When a family lists an out= name under
``autogen`` but has no out= variant, or has an out= variant but no functional
one, the missing member is derived here so that every family can be grouped.
Derived functions carry ``generated=True`` and a CompositeExplicitAutograd kernel.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import replace

from .native import Dispatch, NativeFunction
from .schema import Annotation, Argument, Arguments, FunctionSchema, OperatorName, Return, SchemaKind

__all__ = ["add_generated_variants"]

_KEPT_TAGS = frozenset({"nondeterministic_seeded", "view_copy", "pt2_compliant_tag"})


def add_generated_variants(functions: Iterable[NativeFunction]) -> tuple[NativeFunction, ...]:
    """``functions`` followed by the variants derived from them, in a stable order."""
    declared = tuple(functions)
    taken = {(f.namespace, str(f.name)) for f in declared}
    added: list[NativeFunction] = []
    for family in _families(declared).values():
        for fn in _missing_variants(family):
            if (fn.namespace, str(fn.name)) not in taken:
                taken.add((fn.namespace, str(fn.name)))
                added.append(fn)
    return declared + tuple(added)


def _families(functions: tuple[NativeFunction, ...]) -> dict[str, dict[SchemaKind, NativeFunction]]:
    families: dict[str, dict[SchemaKind, NativeFunction]] = {}
    for f in functions:
        families.setdefault(f"{f.namespace}::{f.func.signature()}", {}).setdefault(f.kind, f)
    return families


def _missing_variants(family: dict[SchemaKind, NativeFunction]) -> list[NativeFunction]:
    if not ({SchemaKind.functional, SchemaKind.inplace, SchemaKind.out, SchemaKind.mutable} & family.keys()):
        return []
    members = family.values()
    is_core = any("core" in f.tags for f in members)
    if all(f.manual_cpp_binding for f in members):
        return []  # bypasses the dispatcher
    if any(f.is_view_op and f.name.name != "set_" for f in members):
        return []  # views are not grouped
    if all(f.has_composite_implicit_autograd_kernel for f in members) and not is_core:
        return []  # decomposes; transforms never see it
    has_out = SchemaKind.out in family
    if has_out and len(family) == 1:
        return []  # an out= op with nothing to pair with
    base = next(
        family[k]
        for k in (SchemaKind.mutable, SchemaKind.inplace, SchemaKind.out, SchemaKind.functional)
        if k in family
    )
    can_have_out = base.kind is SchemaKind.inplace or any(r.type.is_tensor_like() for r in base.func.returns)
    wants_out = any("out" in str(name) for name in base.autogen)
    gets_out = not has_out and can_have_out and wants_out
    result = []
    if gets_out:
        result.append(_derive(base, _out_schema(base.func)))
    if SchemaKind.functional not in family and (has_out or gets_out):
        result.append(_derive(base, _functional_schema(base.func)))
    return result


def _derive(base: NativeFunction, func: FunctionSchema) -> NativeFunction:
    kernel = func.name.unambiguous_name() if func.kind() is SchemaKind.out else func.cpp_name()
    if base.func.has_symint():
        kernel += "_symint"
    tags = {"generated"} | (base.tags & _KEPT_TAGS)
    if func.arguments.out:
        tags.add("out")
    if func.name.inplace:
        tags.add("inplace")
    return NativeFunction(
        func=func,
        location=base.location,
        namespace=base.namespace,
        dispatch=(Dispatch("CompositeExplicitAutograd", kernel),),
        tags=frozenset(tags),
        device_check="NoCheck",
        device_guard=False,
        use_const_ref_for_mutable_tensors=base.use_const_ref_for_mutable_tensors,
        generated=True,
        abstract_override=base.is_abstract,
        text=base.text,
        doc=base.doc,
    )


def _out_overload(name: OperatorName) -> str:
    return f"{name.overload}_out" if name.overload else "out"


def _out_schema(func: FunctionSchema) -> FunctionSchema:
    name = func.name.remove_inplace().with_overload(_out_overload(func.name))
    args = func.arguments
    if func.kind() is SchemaKind.inplace:
        self_arg = args.self_arg
        assert self_arg is not None
        positional = tuple(replace(a, annotation=None) if a.name == "self" else a for a in args.positional)
        out = Argument("out", self_arg.type, None, self_arg.annotation)
        return FunctionSchema(name, Arguments(positional, args.kwarg_only, (out,)), func.returns)
    returns, outs = _returns_to_out_args(func)
    if func.kind() is SchemaKind.mutable:
        return FunctionSchema(name, Arguments(args.positional, args.kwarg_only, outs), returns)
    plain = args.signature()
    return FunctionSchema(name, Arguments(plain.positional, plain.kwarg_only, outs), returns)


def _returns_to_out_args(func: FunctionSchema) -> tuple[tuple[Return, ...], tuple[Argument, ...]]:
    used = {letter for a in func.arguments.all if a.annotation for letter in a.annotation.alias_set}
    free = [c for c in string.ascii_lowercase if c not in used]
    all_tensors = all(str(r.type) == "Tensor" for r in func.returns)
    returns: list[Return] = []
    outs: list[Argument] = []
    for i, r in enumerate(func.returns):
        if not r.type.is_tensor_like():
            returns.append(r)
            continue
        annotation = Annotation((free[i],), True)
        outs.append(Argument("out" if len(func.returns) == 1 else f"out{i}", r.type, None, annotation))
        if all_tensors:
            returns.append(Return(None, r.type, annotation))
    return tuple(returns), tuple(outs)


def _functional_schema(func: FunctionSchema) -> FunctionSchema:
    sig = func.signature(keep_return_names=True)
    name = OperatorName(
        func.name.base,
        dunder=func.name.dunder,
        functional_overload=func.kind() is SchemaKind.mutable,
        overload=func.name.overload,
    )
    return FunctionSchema(name, sig.arguments, sig.returns)
