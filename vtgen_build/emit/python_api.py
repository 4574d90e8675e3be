"""The typed Python API of an op library: one function per operator name, from the schemas.

Types follow PyTorch's own stubs (``Tensor``, ``Optional[Tensor]``, ``Sequence[int]``,
``Union[int, SymInt]``, ``Scalar`` → ``Number``, ``Tensor[]`` → ``Sequence[Tensor]``, several
returns → a tuple); parameter names, defaults and the keyword-only marker come from the schema.
Overload names become ``typing.overload`` declarations of one function.  Each function calls
``torch.ops.<ns>.<op>`` and carries a docstring: the schema, the comment above the yaml entry,
and which inputs are differentiable (``ApiOp.autograd``, decided by the caller from the plan).

The module is valid Python for any yaml, or an error at the op's line: a parameter named like a
Python keyword gets ``_`` appended until it differs from the op's other parameters (``from`` beside
``from_`` is ``from__``); the module's own globals (imports, the ``torch.ops.<ns>`` handles) keep
their usual names unless an op or a parameter takes one, then a private one nobody takes
(``Spelling``); a default Python cannot spell (``010``), a positional argument without a default
after one with a default, and an op named like a module attribute Python itself uses
(``__getattr__``, ``__all__``) are errors.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass

from ..base.errors import VtgenError
from ..model.native import NativeFunction
from ..model.schema import Argument, BaseType, ListType, OptionalType, Type
from ..translate import elementwise_batched_rule

__all__ = ["ApiOp", "python_api_module", "python_default"]


@dataclass(frozen=True)
class ApiOp:
    function: NativeFunction
    autograd: str  # one sentence: which inputs are differentiable


_BASE = {
    "Tensor": "Tensor",
    "int": "int",
    "SymInt": "Union[int, SymInt]",
    "SymBool": "Union[bool, SymBool]",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "Scalar": "Number",
    "ScalarType": "torch.dtype",
    "Layout": "torch.layout",
    "Device": "Union[torch.device, str, int]",
    "DeviceIndex": "int",
    "MemoryFormat": "torch.memory_format",
    "Generator": "torch.Generator",
    "Dimname": "str",
    "Storage": "torch.UntypedStorage",
    "Stream": "torch.Stream",
    "QScheme": "torch.qscheme",
}
# A number as Python spells it: no integer with a leading zero (``010`` is a syntax error there, octal in C).
_NUMBER = re.compile(r"-?((0|[1-9]\d*)(\.\d*)?([eE][-+]?\d+)?|\d+\.\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)")
_LEADING_ZERO = re.compile(r"-?0\d+")

# What the module binds besides its functions: the imports, and one ``torch.ops.<ns>`` handle per namespace.
_IMPORTED = (
    *("Sequence", "Any", "Optional", "Union", "cast", "overload", "TYPE_CHECKING"),
    *("torch", "SymBool", "SymInt", "Tensor", "Number", "builtins"),
)
# builtins the module spells: in annotations, defaults, and getattr for an overload named like a keyword
_BUILTINS = frozenset(("int", "float", "bool", "str", "tuple", "list", "getattr"))
# Module attributes Python itself defines or looks up: an op cannot be a function of that name.
_MODULE_SPECIALS = frozenset(
    (
        "__all__", "__annotations__", "__builtins__", "__cached__", "__debug__", "__dict__", "__dir__", "__doc__",
        "__file__", "__getattr__", "__loader__", "__name__", "__package__", "__path__", "__spec__",
    )
)  # fmt: skip
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Spelling:
    """How the module spells its own globals.  Each keeps its usual name unless an op or a parameter
    takes it (a function ``cast``, an argument ``torch``), else a private one no op or parameter takes
    (``_cast``, ``__cast``...), so no function can hide what another one calls."""

    names: tuple[tuple[str, str], ...]  # (usual name, spelling)

    @classmethod
    def avoiding(cls, taken: set[str], namespaces: list[str]) -> Spelling:
        names: list[tuple[str, str]] = []
        used = set(taken)
        for usual in (*_IMPORTED, *(f"_ops_{ns}" for ns in namespaces)):
            spelled = usual
            while spelled in used:
                spelled = "_" + spelled
            used.add(spelled)
            names.append((usual, spelled))
        names += [(b, b if b not in taken else f"{dict(names)['builtins']}.{b}") for b in sorted(_BUILTINS)]
        return cls(tuple(names))

    def __call__(self, name: str) -> str:
        return dict(self.names)[name]

    def renamed(self, name: str) -> bool:
        return self(name) != name

    def type_text(self, text: str) -> str:
        """A type written with the usual names (``Optional[torch.dtype]``) in this module's spelling
        (an attribute, the ``dtype`` of ``torch.dtype``, keeps its name)."""
        known = dict(self.names)

        def spelled(m: re.Match[str]) -> str:
            attribute = m.start() > 0 and text[m.start() - 1] == "."
            return m.group(0) if attribute else known.get(m.group(0), m.group(0))

        return _TOKEN.sub(spelled, text)


def _base(t: BaseType, f: NativeFunction) -> str:
    found = _BASE.get(t.name)
    if found is None:
        raise VtgenError(f"'{f.name}': the typed Python API cannot spell the type '{t.name}'", f.location)
    return found


def argument_type(t: Type, f: NativeFunction) -> str:
    """The Python type an argument of schema type ``t`` accepts (with the usual names)."""
    if isinstance(t, OptionalType):
        return f"Optional[{argument_type(t.elem, f)}]"
    if isinstance(t, ListType):
        elem = argument_type(t.elem, f)
        if t.size is not None and isinstance(t.elem, BaseType) and t.elem.name in ("int", "SymInt"):
            return f"Union[{elem}, Sequence[{elem}]]"  # int[2] stride=1: one int stands for all
        return f"Sequence[{elem}]"
    assert isinstance(t, BaseType)
    return _base(t, f)


def return_type(f: NativeFunction) -> str:
    returns = [_return(r.type, f) for r in f.func.returns]
    if not returns:
        return "None"
    return returns[0] if len(returns) == 1 else f"tuple[{', '.join(returns)}]"


def _return(t: Type, f: NativeFunction) -> str:
    if isinstance(t, ListType):
        return f"list[{_return(t.elem, f)}]"
    if isinstance(t, OptionalType):
        return f"Optional[{_return(t.elem, f)}]"
    assert isinstance(t, BaseType)
    return _base(t, f)


def _number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def python_default(a: Argument, f: NativeFunction) -> str:
    """``a``'s default spelled for a module whose ``torch`` and ``float`` keep their names (the Python
    autograd's kernels).  A fixed-size list's default of one number (``SymInt[2] stride=1``) is that many
    copies, as C++ reads it: the kernel passes it on to the op's own call, whose Python binding takes a list."""
    text = _default(a, f, Spelling((("torch", "torch"), ("float", "float"))))
    size = a.type.size if isinstance(a.type, ListType) else None
    if not (size and a.default is not None and _number(a.default)):
        return text
    return f"({', '.join([text] * size)}{',' if size == 1 else ''})"


def _default(a: Argument, f: NativeFunction, spell: Spelling) -> str:
    """The default's Python spelling; an error at the op's line when it has none."""
    assert a.default is not None
    text = a.default
    if text in ("None", "True", "False") or _number(text):
        return text
    if text in ("Mean", "Sum"):  # at::Reduction
        return "1" if text == "Mean" else "2"
    if text in ("inf", "-inf"):
        return f'{spell("float")}("{text}")'
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return repr(text[1:-1])
    if text.startswith("[") and text.endswith("]"):
        items = [i.strip() for i in text[1:-1].split(",") if i.strip()]
        if all(_number(i) or i in ("True", "False") for i in items):
            return "(" + "".join(i + ", " for i in items).rstrip(" ") + ")" if items else "()"
    if a.type.base().name in ("ScalarType", "MemoryFormat", "Layout") and _TOKEN.fullmatch(text):
        return f"{spell('torch')}.{text}"
    why = " (an integer with a leading zero: octal in C, an error in Python)" if _LEADING_ZERO.search(text) else ""
    raise VtgenError(f"'{f.name}': the default '{text}' of '{a.name}' has no Python spelling{why}", f.location)


def _python_keyword(name: str) -> bool:
    return keyword.iskeyword(name) or name == "__debug__"


def parameter_names(f: NativeFunction) -> tuple[tuple[str, str], ...]:
    """(schema name, Python name) of each argument: a Python keyword gets ``_`` appended, as many as it
    takes to differ from every other argument (``from`` beside ``from_`` becomes ``from__``)."""
    names = [a.name for a in f.func.arguments.all]
    used = {n for n in names if not _python_keyword(n)}
    result = []
    for name in names:
        spelled = name
        if _python_keyword(name):
            spelled = name + "_"
            while spelled in used:
                spelled += "_"
            used.add(spelled)
        result.append((name, spelled))
    return tuple(result)


def _check_default_order(f: NativeFunction) -> None:
    """Python has no positional parameter without a default after one with a default."""
    defaulted: Argument | None = None
    for a in f.func.arguments.positional:
        if a.default is not None:
            defaulted = defaulted or a
        elif defaulted is not None:
            raise VtgenError(
                f"'{f.name}': the typed Python API cannot spell the positional argument '{a.name}' (no default) "
                f"after '{defaulted.name}' (a default)",
                f.location,
            )


@dataclass(frozen=True)
class _Writer:
    """Spells one module: its globals (``spelling``) and each function's parameters."""

    spelling: Spelling

    def parameters(self, f: NativeFunction) -> list[str]:
        args, python = f.func.arguments, dict(parameter_names(f))
        _check_default_order(f)
        params = [self.parameter(a, python[a.name], f) for a in args.positional]
        keyword_only = [*args.kwarg_only, *args.out]
        if keyword_only:
            params += ["*", *(self.parameter(a, python[a.name], f) for a in keyword_only)]
        return params

    def parameter(self, a: Argument, name: str, f: NativeFunction) -> str:
        text = f"{name}: {self.spelling.type_text(argument_type(a.type, f))}"
        return text if a.default is None else f"{text} = {_default(a, f, self.spelling)}"

    def signature(self, name: str, f: NativeFunction) -> str:
        returns = self.spelling.type_text(return_type(f))
        return f"def {name}({', '.join(self.parameters(f))}) -> {returns}:"

    def overload_ref(self, f: NativeFunction) -> str:
        overload = f.name.overload or "default"
        name = f"{self.spelling(f'_ops_{f.namespace}')}.{f.name.name}"
        return (
            f"{name}.{overload}"
            if not _python_keyword(overload)
            else f'{self.spelling("getattr")}({name}, "{overload}")'
        )

    def call(self, f: NativeFunction) -> str:
        args, python = f.func.arguments, dict(parameter_names(f))
        parts = [python[a.name] for a in args.positional]
        for a in (*args.kwarg_only, *args.out):
            spelled = python[a.name]
            parts.append(f"{a.name}={spelled}" if not _python_keyword(a.name) else f'**{{"{a.name}": {spelled}}}')
        return f"{self.overload_ref(f)}({', '.join(parts)})"

    def function(self, name: str, ops: list[ApiOp]) -> str:
        if len(ops) == 1:
            f = ops[0].function
            returns = self.spelling.type_text(return_type(f))
            call = self.call(f) if returns == "None" else f'return {self.spelling("cast")}("{returns}", {self.call(f)})'
            return "\n".join([self.signature(name, f), _docstring(_doc(ops[0])), f"    {call}"])
        decorator = "@" + self.spelling("overload")
        stubs = [f"{decorator}\n{self.signature(name, op.function)} ..." for op in ops]
        first = ops[0].function
        packet = f"{self.spelling(f'_ops_{first.namespace}')}.{first.name.name}"
        doc = "\n\n".join(_doc(op) for op in ops)
        any_ = self.spelling("Any")
        impl = "\n".join([
            f"def {name}(*args: {any_}, **kwargs: {any_}) -> {any_}:",
            _docstring(doc),
            f"    return {packet}(*args, **kwargs)",
        ])  # fmt: skip
        return "\n\n\n".join([*stubs, impl])


def _doc(op: ApiOp) -> str:
    f = op.function
    parts = [f"{f.namespace}::{f.func}"]
    if f.doc:
        parts.append(f.doc)
    parts.append(op.autograd)
    return "\n\n".join(parts)


def _docstring(text: str, indent: str = "    ") -> str:
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = body.split("\n")
    if len(lines) == 1:
        return f'{indent}"""{body}"""'
    inner = "\n".join(indent + line if line else "" for line in lines[1:])
    return f'{indent}"""{lines[0]}\n{inner}\n{indent}"""'


def _groups(ops: tuple[ApiOp, ...]) -> dict[str, list[ApiOp]]:
    groups: dict[str, list[ApiOp]] = {}
    for op in ops:
        f = op.function
        name = f.name.name
        if _python_keyword(name) or not name.isidentifier() or name in _MODULE_SPECIALS:
            raise VtgenError(f"'{f.name}': '{name}' cannot be a Python function name", f.location)
        first = groups.setdefault(name, [op])[0]
        if first is not op and first.function.namespace != f.namespace:
            raise VtgenError(
                f"'{f.name}': the typed Python API has one '{name}' (also in namespace '{first.function.namespace}')",
                f.location,
            )
        if first is not op:
            groups[name].append(op)
    return groups


def _imports(spell: Spelling, batching: bool) -> list[str]:
    def names(*usual: str) -> str:
        return ", ".join(f"{n} as {spell(n)}" if spell.renamed(n) else n for n in usual)

    def module(name: str) -> str:
        return f"import {name} as {spell(name)}" if spell.renamed(name) else f"import {name}"

    typing = ("TYPE_CHECKING",) if batching else ()
    lines = [
        f"from collections.abc import {names('Sequence')}",
        f"from typing import {names(*typing, 'Any', 'Optional', 'Union', 'cast', 'overload')}",
        "",
        module("torch"),
        f"from torch import {names('SymBool', 'SymInt', 'Tensor')}",
        f"from torch.types import {names('Number')}",
    ]
    if any(spell.renamed(b) for b in _BUILTINS):
        lines.insert(0, module("builtins"))
    return lines


_SHIM_NAMES = ("AOTI_C_SHIMS", "install_aoti_c_shims")
_RULE_NAMES = ("BATCHING_RULES", "install_batching_rules")
_RULE_HELPERS = ("_batching_libraries", "_batching_operator", "_elementwise_batched")  # private
_SHIM_HELPERS = ("_aoti_operator", "_picklable_by_name")  # private: not in __all__


def _aoti_block(shims: tuple[tuple[str, tuple[str, ...]], ...], torch: str, any_: str) -> str:
    """``AOTI_C_SHIMS`` (each operator's shim declarations) and ``install_aoti_c_shims()``."""
    entries = "\n".join(f"    {json.dumps(name)}: ({''.join(f'{json.dumps(d)}, ' for d in decls).rstrip()}),"
                         for name, decls in shims)  # fmt: skip
    return f"""# The AOTInductor C shims compiled into the op library (its AOTIShims.cpp): each operator's shim
# declarations, as torch._inductor.config.aot_inductor.custom_ops_to_c_shims takes them.
AOTI_C_SHIMS: dict[str, tuple[str, ...]] = {{
{entries}
}}


def install_aoti_c_shims(library: str) -> None:
    \"\"\"Make AOTInductor call the op library's C shims directly (``library``: its path, already loaded).

    Lists each operator of ``AOTI_C_SHIMS`` in ``custom_ops_to_c_shims`` (Inductor's wrapper then calls
    the shim instead of its proxy executor), and makes the library's symbols global, so an AOTInductor
    package compiled or loaded afterwards in this process resolves the shims.
    \"\"\"
    import ctypes
    import os

    import torch._inductor.config as inductor_config

    try:  # RTLD_NOLOAD: only a library this process loaded (torch.ops.load_library) is made global
        ctypes.CDLL(library, mode=getattr(os, "RTLD_GLOBAL", 0) | getattr(os, "RTLD_NOLOAD", 0))
    except OSError as exc:
        raise ImportError(f"install_aoti_c_shims: {{library}} is not loaded (load it first): {{exc}}") from None
    for name, declarations in AOTI_C_SHIMS.items():
        op = _aoti_operator(name)
        inductor_config.aot_inductor.custom_ops_to_c_shims[op] = list(declarations)
        _picklable_by_name(op)


def _aoti_operator(name: str) -> {any_}:
    \"\"\"The OpOverload ``namespace::name[.overload]`` (also how ``_picklable_by_name`` rebuilds one).\"\"\"
    namespace, _, operator = name.partition("::")
    packet, _, overload = operator.partition(".")
    return getattr(getattr(getattr({torch}.ops, namespace), packet), overload or "default")


def _picklable_by_name(op: {any_}) -> None:
    \"\"\"An OpOverload does not pickle (2.10 to 2.14), and Inductor's cache key pickles its config, the
    shims' operators too: before 2.13 every torch.compile then failed.  Pickle them by their name.\"\"\"
    import copyreg
    import pickle

    try:
        pickle.dumps(op)
    except Exception:  # (pickle raises what the object's reduction raises)
        copyreg.pickle(type(op), lambda o: (_aoti_operator, (f"{{o._schema.name}}.{{o._overloadname}}",)))"""


def _batching_block(rules: tuple[str, ...], spell: Spelling) -> str:
    """``BATCHING_RULES`` (the element-wise operators, ``plan/batching.py``) and ``install_batching_rules()``,
    registering the rule the stable mode's Python autograd module registers (``_elementwise_batched``) where
    mypy does not look: it is untyped."""
    torch, any_ = spell("torch"), spell("Any")
    rule = re.sub(r"(?<![\w.])torch\.", f"{torch}.", elementwise_batched_rule())  # (not functorch., not x.torch.)
    untyped = "\n".join(f"    {line}" if line else "" for line in rule.splitlines())
    names = ", ".join(json.dumps(r) for r in rules) + ("," if len(rules) == 1 else "")
    return f"""# The batching rules of the element-wise operators (native_functions.yaml: `vmap: elementwise` or the
# `pointwise` tag): under torch.vmap each runs its operator once on the whole batch, where PyTorch's
# fallback would loop over it.  Every other operator keeps that fallback.
BATCHING_RULES: tuple[str, ...] = ({names})
_batching_libraries: list[{any_}] = []


def install_batching_rules() -> None:
    \"\"\"Register the batching rule (FuncTorchBatched kernel) of each operator of ``BATCHING_RULES``, once:
    load the op library first.\"\"\"
    if _batching_libraries:
        return
    library_of: {any_} = {torch}.library.Library  # (untyped)
    for name in BATCHING_RULES:
        namespace, _, operator = name.partition("::")
        library = library_of(namespace, "IMPL")
        library.impl(operator, _elementwise_batched(_batching_operator(name)), "FuncTorchBatched")
        _batching_libraries.append(library)


def _batching_operator(name: str) -> {any_}:
    namespace, _, operator = name.partition("::")
    packet, _, overload = operator.partition(".")
    return getattr(getattr(getattr({torch}.ops, namespace), packet), overload or "default")


if {spell("TYPE_CHECKING")}:
    def _elementwise_batched(op: {any_}) -> {any_}: ...
else:
{untyped}"""


def _public(shims: tuple[tuple[str, tuple[str, ...]], ...], rules: tuple[str, ...]) -> tuple[str, ...]:
    return (_SHIM_NAMES if shims else ()) + (_RULE_NAMES if rules else ())


def python_api_module(
    ops: tuple[ApiOp, ...],
    title: str,
    shims: tuple[tuple[str, tuple[str, ...]], ...] = (),
    rules: tuple[str, ...] = (),
) -> str:
    """The module text: ``title`` (the library) in its docstring, then the functions in yaml order;
    with ``shims`` (operator → its AOTInductor C shim declarations), ``install_aoti_c_shims()``; with
    ``rules`` (the qualified names of the operators with a batching rule), ``install_batching_rules()``."""
    groups = _groups(ops)
    reserved = [(n, "AOTInductor") for n in ((*_SHIM_NAMES, *_SHIM_HELPERS) if shims else ())]
    reserved += [(n, "batching") for n in ((*_RULE_NAMES, *_RULE_HELPERS) if rules else ())]
    for name, what in reserved:
        if name in groups:
            op = groups[name][0].function
            problem = f"operator '{name}' has the name of the typed API's {what} helper; rename it"
            raise VtgenError(problem, op.location)
    namespaces = sorted({op.function.namespace for op in ops})
    taken = set(groups) | {p for op in ops for _, p in parameter_names(op.function)}
    writer = _Writer(Spelling.avoiding(taken, namespaces))
    header = [
        f'"""Typed Python API of the {title} ops (generated by vtgen_build from native_functions.yaml; do not edit).',
        "",
        "Each function calls ``torch.ops.<namespace>.<op>``: load the op library before calling one.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *_imports(writer.spelling, bool(rules)),
        "",
        f"__all__ = [{', '.join(repr(n) for n in sorted([*groups, *_public(shims, rules)]))}]",
        "",
        *(f"{writer.spelling(f'_ops_{ns}')} = {writer.spelling('torch')}.ops.{ns}" for ns in namespaces),
    ]
    functions = [writer.function(name, group) for name, group in groups.items()]
    if shims:
        functions.append(_aoti_block(shims, writer.spelling("torch"), writer.spelling("Any")))
    if rules:
        functions.append(_batching_block(rules, writer.spelling))
    return "\n".join(header) + "\n\n\n" + "\n\n\n".join(functions) + "\n"
