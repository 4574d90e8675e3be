"""The names a generated Python autograd module reserves, and how user text enters its source.

One list, owned by the formula translator (``python_formula``) and used by the module's emitter
(``python_autograd``): what the module's functions read or bind under a fixed name besides the
op's own values.  The op's arguments and outputs become locals through ``py_name``, which steps
aside from those names (``torch`` → ``torch_``); the ops become classes and kernels through
``op_identifiers``, which never reuses a name of the module; a name starting with ``_`` is the
module's own (``_s_self``, ``_grad_self``, the prelude's helpers), so an argument so named is an
error at its yaml line (``private_name_error``).  The formulas' own vocabulary (``grad``,
``grads``, ``result``, ``grad_input_mask``, ``grad_<output>``) is bound under its own name: the
plan refuses an argument that would clash with it (``plan/infos.py``).

Text from a yaml file or a path goes into the source only through ``comment`` and ``string``:
a comment holds no line break (nor anything Python's tokenizer would take for one), a string
literal is ``repr`` of the value.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable

from .python_prelude import HELPERS

__all__ = [
    "AUTOCAST_GLOBALS",
    "MODULE_GLOBALS",
    "RESERVED_LOCALS",
    "attribute",
    "comment",
    "op_identifiers",
    "private_name_error",
    "py_name",
    "string",
]

# What the module binds at top level: its imports, the library handle, the formulas module and
# the prelude's helpers.  Every op's class and kernel steps aside from these.
# the autocast part's own globals (emit/python_autocast.py; its kernels are `_autocast_<op>_<key>`)
AUTOCAST_GLOBALS = ("_AUTOCAST_LIBRARY", "_autocast_cast", "_autocast_widest", "_autocast_call")
MODULE_GLOBALS = frozenset(("math", "torch", "_lib", "_formulas", *HELPERS, *AUTOCAST_GLOBALS))

# Names the module's functions read or bind whatever the op is: the module's two public globals,
# the builtins generated code calls, and the Functions' own parameters and locals.  An argument or
# output of one of these names is a local with one more ``_`` (``py_name``).
RESERVED_LOCALS = frozenset(
    (
        *("math", "torch"),
        *("bool", "complex", "float", "int", "len", "max", "min", "isinstance", "getattr", "tuple", "list"),
        *("NotImplementedError", "RuntimeError", "None", "True", "False"),
        *("ctx", "layout", "flat", "needs", "tangents", "inputs", "output"),
    )
)
assert not any(n.endswith("_") for n in RESERVED_LOCALS)  # py_name's shift relies on it


def py_name(name: str) -> str:
    """An argument or output ``name`` (or a formula word derived from one: ``self_t``) as a Python
    local.  A reserved name or keyword, with any number of ``_`` appended, gets one more ``_``
    (``torch`` → ``torch_``, ``torch_`` → ``torch__``); any other name is itself.  So two names
    never share a local, and no local is a name the module reserves."""
    root = name.rstrip("_")
    if root in RESERVED_LOCALS or keyword.iskeyword(root) or keyword.issoftkeyword(root):
        return name + "_"
    return name


def attribute(obj: str, name: str) -> str:
    """``obj.name``, or ``getattr(obj, "name")`` where ``name`` is a Python keyword."""
    return f"getattr({obj}, {string(name)})" if keyword.iskeyword(name) else f"{obj}.{name}"


def private_name_error(names: Iterable[str]) -> str | None:
    """The message refusing the first of ``names`` (arguments, outputs) that starts with ``_``."""
    for name in names:
        if name.startswith("_"):
            return (
                f"the Python autograd cannot bind '{name}': names starting with '_' are the generated "
                "module's own; rename it"
            )
    return None


# the module-level names of an op: its Function class, its Autograd kernel, its transform-level apply
_OP_SUFFIXES = ("", "_autograd", "_apply")


def op_identifiers(ops: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The class name of each op (``(name, overload)``, in yaml order); its kernel is the class name
    and ``_autograd``.  ``_<name>`` or ``_<name>_<overload>``; where that, or its kernel's name, is
    taken (a global of the module, an earlier op: ``foo.bar`` beside ``foo_bar``), the first of
    ``<that>_2``, ``<that>_3``... whose two names are free: distinct names, fixed by the yaml."""
    taken = set(MODULE_GLOBALS)
    found = []
    for name, overload in ops:
        base = f"_{name}_{overload}" if overload else f"_{name}"
        chosen, n = base, 1
        while any(chosen + suffix in taken for suffix in _OP_SUFFIXES):
            n += 1
            chosen = f"{base}_{n}"
        taken.update(chosen + suffix for suffix in _OP_SUFFIXES)
        found.append(chosen)
    return tuple(found)


def comment(text: str) -> str:
    """``text`` safe after a ``#``: anything unprintable escaped (a line break cannot end the comment
    and start a line of code)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def string(value: str) -> str:
    """A Python string literal of ``value``: ``repr``, in double quotes where that needs no escape."""
    text = repr(value)
    return f'"{text[1:-1]}"' if text.startswith("'") and '"' not in value else text
