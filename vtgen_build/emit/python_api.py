"""The typed Python API of an op library: one function per operator name, from the schemas.

Types follow PyTorch's own stubs (``Tensor``, ``Optional[Tensor]``, ``Sequence[int]``,
``Union[int, SymInt]``, ``Scalar`` → ``Number``, ``Tensor[]`` → ``Sequence[Tensor]``, several
returns → a tuple); parameter names, defaults and the keyword-only marker come from the schema.
Overload names become ``typing.overload`` declarations of one function.  Each function calls
``torch.ops.<ns>.<op>`` and carries a docstring: the schema, the comment above the yaml entry,
and which inputs are differentiable (``ApiOp.autograd``, decided by the caller from the plan).
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from ..base.errors import VtgenError
from ..model.native import NativeFunction
from ..model.schema import Argument, BaseType, ListType, OptionalType, Type

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
_NUMBER = re.compile(r"-?(\d+(\.\d*)?([eE][-+]?\d+)?|\.\d+)")
_NAMED_DEFAULTS = {"Mean": "1", "Sum": "2", "inf": 'float("inf")', "-inf": 'float("-inf")'}


def _base(t: BaseType, f: NativeFunction) -> str:
    found = _BASE.get(t.name)
    if found is None:
        raise VtgenError(f"'{f.name}': the typed Python API cannot spell the type '{t.name}'", f.location)
    return found


def argument_type(t: Type, f: NativeFunction) -> str:
    """The Python type an argument of schema type ``t`` accepts."""
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


def python_default(a: Argument, f: NativeFunction) -> str:
    """The Python spelling of ``a``'s schema default."""
    assert a.default is not None
    text = a.default
    if text in ("None", "True", "False") or _NUMBER.fullmatch(text):
        return text
    if text in _NAMED_DEFAULTS:
        return _NAMED_DEFAULTS[text]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return repr(text[1:-1])
    if text.startswith("[") and text.endswith("]"):
        items = [i.strip() for i in text[1:-1].split(",") if i.strip()]
        if all(_NUMBER.fullmatch(i) or i in ("True", "False") for i in items):
            return "(" + "".join(i + ", " for i in items).rstrip(" ") + ")" if items else "()"
    if a.type.base().name in ("ScalarType", "MemoryFormat", "Layout") and text.isidentifier():
        return f"torch.{text}"
    raise VtgenError(f"'{f.name}': the default '{text}' of '{a.name}' has no Python spelling", f.location)


def _param_name(name: str) -> str:
    return name + "_" if keyword.iskeyword(name) else name


def _parameters(f: NativeFunction) -> list[str]:
    args = f.func.arguments
    params = [_parameter(a, f) for a in args.positional]
    keyword_only = [*args.kwarg_only, *args.out]
    if keyword_only:
        params += ["*", *(_parameter(a, f) for a in keyword_only)]
    return params


def _parameter(a: Argument, f: NativeFunction) -> str:
    text = f"{_param_name(a.name)}: {argument_type(a.type, f)}"
    return text if a.default is None else f"{text} = {python_default(a, f)}"


def _signature(name: str, f: NativeFunction) -> str:
    return f"def {name}({', '.join(_parameters(f))}) -> {return_type(f)}:"


def _overload_ref(f: NativeFunction) -> str:
    overload = f.name.overload or "default"
    ns = f"_ops_{f.namespace}"
    name = f"{ns}.{f.name.name}"
    return f"{name}.{overload}" if not keyword.iskeyword(overload) else f'getattr({name}, "{overload}")'


def _call(f: NativeFunction) -> str:
    args = f.func.arguments
    parts = [_param_name(a.name) for a in args.positional]
    for a in (*args.kwarg_only, *args.out):
        parts.append(f"{a.name}={a.name}" if not keyword.iskeyword(a.name) else f'**{{"{a.name}": {a.name}_}}')
    return f"{_overload_ref(f)}({', '.join(parts)})"


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


def _function(name: str, ops: list[ApiOp]) -> str:
    if len(ops) == 1:
        op = ops[0]
        returns = return_type(op.function)
        call = _call(op.function) if returns == "None" else f'return cast("{returns}", {_call(op.function)})'
        return "\n".join([_signature(name, op.function), _docstring(_doc(op)), f"    {call}"])
    stubs = [f"@overload\n{_signature(name, op.function)} ..." for op in ops]
    packet = f"_ops_{ops[0].function.namespace}.{ops[0].function.name.name}"
    doc = "\n\n".join(_doc(op) for op in ops)
    impl = "\n".join([
        f"def {name}(*args: Any, **kwargs: Any) -> Any:",
        _docstring(doc),
        f"    return {packet}(*args, **kwargs)",
    ])  # fmt: skip
    return "\n\n\n".join([*stubs, impl])


def _groups(ops: tuple[ApiOp, ...]) -> dict[str, list[ApiOp]]:
    groups: dict[str, list[ApiOp]] = {}
    for op in ops:
        f = op.function
        name = f.name.name
        if keyword.iskeyword(name) or not name.isidentifier():
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


def python_api_module(ops: tuple[ApiOp, ...], title: str) -> str:
    """The module text: ``title`` (the library) in its docstring, then the functions in yaml order."""
    groups = _groups(ops)
    namespaces = sorted({op.function.namespace for op in ops})
    header = [
        f'"""Typed Python API of the {title} ops (generated by vtgen_build from native_functions.yaml; do not edit).',
        "",
        "Each function calls ``torch.ops.<namespace>.<op>``: load the op library before calling one.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Sequence",
        "from typing import Any, Optional, Union, cast, overload",
        "",
        "import torch",
        "from torch import SymBool, SymInt, Tensor",
        "from torch.types import Number",
        "",
        f"__all__ = [{', '.join(repr(n) for n in sorted(groups))}]",
        "",
        *(f"_ops_{ns} = torch.ops.{ns}" for ns in namespaces),
    ]
    functions = [_function(name, group) for name, group in groups.items()]
    return "\n".join(header) + "\n\n\n" + "\n\n\n".join(functions) + "\n"
