"""Function schemas: ``name.overload(Type arg, ..., *, Type kw=default) -> Returns``.

Every class here is a frozen dataclass whose ``parse()`` is the inverse of
``str()``: ``str(FunctionSchema.parse(s)) == s`` for every schema PyTorch
ships, and ``parse`` checks that before returning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import Enum
from functools import cache
from typing import TypeVar

from ..base.errors import VtgenError, did_you_mean
from ..base.names import CPP_KEYWORDS, control_character, identifier_problem

__all__ = [
    "BASE_TYPES",
    "Annotation",
    "Argument",
    "Arguments",
    "BaseType",
    "FunctionSchema",
    "ListType",
    "OpSelector",
    "OperatorName",
    "OptionalType",
    "Return",
    "SchemaError",
    "SchemaKind",
    "Type",
    "op_name",
    "op_selection",
    "resolve_ops",
]

BASE_TYPES = frozenset(
    (
        "Tensor",
        "int",
        "SymInt",
        "SymBool",
        "float",
        "bool",
        "str",
        "Scalar",
        "ScalarType",
        "Layout",
        "Device",
        "DeviceIndex",
        "MemoryFormat",
        "Generator",
        "Dimname",
        "DimVector",
        "Storage",
        "Stream",
        "QScheme",
        "ConstQuantizerPtr",
        "GraphModule",
    )
)

_T = TypeVar("_T")


class SchemaError(VtgenError):
    """A malformed schema; ``column`` is 1-based within the schema text."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"{message} (column {column})")
        self.column = column


def _fail(message: str, text: str, offset: int) -> SchemaError:
    return SchemaError(f"{message} in '{text}'", offset + 1)


class SchemaKind(Enum):
    functional = "functional"
    inplace = "inplace"
    out = "out"
    mutable = "mutable"
    scratch = "scratch"


@dataclass(frozen=True)
class Annotation:
    """An alias annotation: ``a``, ``a!``, ``a|b``, ``a -> *``."""

    alias_set: tuple[str, ...]
    is_write: bool
    alias_set_after: tuple[str, ...] = ()

    _RE = re.compile(r"^([a-z0-9]+(?:\|[a-z0-9]+)*)(!?)(?: -> (\*|[a-z0-9]+(?:\|[a-z0-9]+)*))?$")

    @classmethod
    def parse(cls, text: str) -> Annotation:
        m = cls._RE.match(text)
        if m is None:
            raise SchemaError(f"malformed alias annotation '{text}'", 1)
        after = tuple(m.group(3).split("|")) if m.group(3) else ()
        return cls(tuple(m.group(1).split("|")), m.group(2) == "!", after)

    def __str__(self) -> str:
        text = "|".join(self.alias_set) + ("!" if self.is_write else "")
        return f"{text} -> {'|'.join(self.alias_set_after)}" if self.alias_set_after else text


@dataclass(frozen=True)
class Type:
    """A schema type: a base type, an optional ``T?`` or a list ``T[]`` / ``T[N]``."""

    @classmethod
    def parse(cls, text: str) -> Type:
        return _parse_type(text)

    @staticmethod
    def _parse_uncached(text: str) -> Type:
        if text.endswith("?"):
            return OptionalType(Type.parse(text[:-1]))
        m = re.match(r"^(.+)\[([0-9]*)\]$", text)
        if m:
            size = int(m.group(2)) if m.group(2) else None
            return ListType(Type.parse(m.group(1)), size)
        if text in BASE_TYPES or text.startswith("__torch__.torch.classes."):
            return BaseType(text)
        raise SchemaError(f"unknown type '{text}'{did_you_mean(text, BASE_TYPES)}", 1)

    def is_tensor_like(self) -> bool:
        raise NotImplementedError

    def base(self) -> BaseType:
        """The innermost base type (``Tensor`` for ``Tensor?[]``)."""
        raise NotImplementedError

    def is_list(self) -> bool:
        return False

    def is_optional(self) -> bool:
        return False


@dataclass(frozen=True)
class BaseType(Type):
    name: str

    def __str__(self) -> str:
        return self.name

    def is_tensor_like(self) -> bool:
        return self.name == "Tensor"

    def base(self) -> BaseType:
        return self


@dataclass(frozen=True)
class OptionalType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"{self.elem}?"

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()

    def base(self) -> BaseType:
        return self.elem.base()

    def is_optional(self) -> bool:
        return True

    def is_list(self) -> bool:
        return self.elem.is_list()


@dataclass(frozen=True)
class ListType(Type):
    elem: Type
    size: int | None

    def __str__(self) -> str:
        return f"{self.elem}[{'' if self.size is None else self.size}]"

    def is_tensor_like(self) -> bool:
        return self.elem.is_tensor_like()

    def base(self) -> BaseType:
        return self.elem.base()

    def is_list(self) -> bool:
        return True


@cache
def _parse_type(text: str) -> Type:
    return Type._parse_uncached(text)


@cache
def _parse_argument(text: str) -> Argument:
    return Argument._parse_uncached(text)


@cache
def _parse_return(text: str) -> Return:
    return Return._parse_uncached(text)


def _split_annotation(text: str) -> tuple[str, Annotation | None]:
    """``Tensor(a!)[]`` → (``Tensor[]``, annotation ``a!``)."""
    m = re.match(r"^(Tensor)\((.+?)\)(.*)$", text)
    if m is None:
        return text, None
    return m.group(1) + m.group(3), Annotation.parse(m.group(2))


def _type_text(ty: Type, annotation: Annotation | None) -> str:
    if annotation is None:
        return str(ty)
    base = str(ty)
    return f"Tensor({annotation}){base[len('Tensor') :]}"


@dataclass(frozen=True)
class Argument:
    """``Type(annotation) name=default``; the default is kept as written."""

    name: str
    type: Type
    default: str | None = None
    annotation: Annotation | None = None

    @classmethod
    def parse(cls, text: str) -> Argument:
        return _parse_argument(text)

    @classmethod
    def _parse_uncached(cls, text: str) -> Argument:
        type_text, sep, name_default = text.rpartition(" ")
        if not sep or not type_text:
            raise SchemaError(f"expected 'Type name', found '{text}'", 1)
        if "," in type_text:
            raise SchemaError("expected ', ' between arguments", type_text.index(",") + 1)
        name, eq, default = name_default.partition("=")
        if identifier_problem(name) is not None:
            keyword = " (a C++ keyword)" if name in CPP_KEYWORDS else ""
            raise SchemaError(f"bad argument name '{name}'{keyword}", len(type_text) + 2)
        bare, annotation = _split_annotation(type_text)
        return cls(name, Type.parse(bare), default if eq else None, annotation)

    def __str__(self) -> str:
        default = "" if self.default is None else f"={self.default}"
        return f"{_type_text(self.type, self.annotation)} {self.name}{default}"

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write


_TENSOR_OPTION_NAMES = (("dtype", "ScalarType"), ("layout", "Layout"), ("device", "Device"), ("pin_memory", "bool"))


@dataclass(frozen=True)
class Arguments:
    """Positional, keyword-only (after ``*``) and out (mutable kwarg-only) arguments."""

    positional: tuple[Argument, ...]
    kwarg_only: tuple[Argument, ...]
    out: tuple[Argument, ...]

    @classmethod
    def parse(cls, text: str) -> Arguments:
        groups: tuple[list[Argument], list[Argument], list[Argument]] = ([], [], [])
        group, offset = 0, 0
        for piece in text.split(", ") if text else []:
            try:
                group = cls._place(piece, group, groups)
            except SchemaError as exc:
                raise SchemaError(exc.message.rsplit(" (column", 1)[0], offset + exc.column) from None
            offset += len(piece) + 2
        return cls(tuple(groups[0]), tuple(groups[1]), tuple(groups[2]))

    @staticmethod
    def _place(piece: str, group: int, groups: tuple[list[Argument], ...]) -> int:
        if piece == "*":
            if group != 0:
                raise SchemaError("'*' may appear only once", 1)
            return 1
        arg = Argument.parse(piece)
        if group >= 1 and arg.is_write:
            group = 2
        elif group == 2:
            raise SchemaError(f"non-mutable argument '{arg.name}' cannot follow out arguments", 1)
        groups[group].append(arg)
        return group

    def __str__(self) -> str:
        parts = [str(a) for a in self.positional]
        if self.kwarg_only or self.out:
            parts.append("*")
        parts += [str(a) for a in self.kwarg_only + self.out]
        return ", ".join(parts)

    @property
    def all(self) -> tuple[Argument, ...]:
        """Every argument in schema order."""
        return self.positional + self.kwarg_only + self.out

    @property
    def non_out(self) -> tuple[Argument, ...]:
        return self.positional + self.kwarg_only

    @property
    def self_arg(self) -> Argument | None:
        return next((a for a in self.positional if a.name == "self"), None)

    def post_self_positional(self) -> tuple[Argument, ...]:
        names = [a.name for a in self.positional]
        return self.positional[names.index("self") + 1 :] if "self" in names else self.positional

    def tensor_options_start(self) -> int | None:
        """Index in ``kwarg_only`` of a dtype/layout/device/pin_memory run, if any."""
        for i in range(len(self.kwarg_only) - 3):
            window = self.kwarg_only[i : i + 4]
            if all(
                a.name == name and str(a.type) in (ty, ty + "?")
                for a, (name, ty) in zip(window, _TENSOR_OPTION_NAMES, strict=True)
            ):
                return i
        return None

    def get(self, name: str) -> Argument | None:
        return next((a for a in self.all if a.name == name), None)

    def signature(self, *, strip_default: bool = False, patch_bernoulli: bool = False) -> Arguments:
        """Without out arguments, the tensor-options group and annotations."""

        def plain(a: Argument) -> Argument:
            default = None if strip_default else a.default
            if patch_bernoulli and a.name == "p" and default is None:
                default = "0.5"  # bernoulli.p has no default, its variants have one
            return Argument(a.name, a.type, default)

        start = self.tensor_options_start()
        kwargs = self.kwarg_only if start is None else self.kwarg_only[:start] + self.kwarg_only[start + 4 :]
        return Arguments(tuple(map(plain, self.positional)), tuple(map(plain, kwargs)), ())


@dataclass(frozen=True)
class Return:
    """One returned value: ``Tensor``, ``Tensor(a!)``, ``Tensor values``."""

    name: str | None
    type: Type
    annotation: Annotation | None = None

    @classmethod
    def parse(cls, text: str) -> Return:
        return _parse_return(text)

    @classmethod
    def _parse_uncached(cls, text: str) -> Return:
        type_text, sep, name = text.rpartition(" ")
        if not sep:
            type_text, name = text, ""
        if name and identifier_problem(name) is not None:
            keyword = " (a C++ keyword)" if name in CPP_KEYWORDS else ""
            raise SchemaError(f"bad return name {name!r}{keyword}", len(type_text) + 2)
        bare, annotation = _split_annotation(type_text)
        return cls(name or None, Type.parse(bare), annotation)

    def __str__(self) -> str:
        name = "" if self.name is None else f" {self.name}"
        return f"{_type_text(self.type, self.annotation)}{name}"

    @property
    def is_write(self) -> bool:
        return self.annotation is not None and self.annotation.is_write


_AUGMENTED = frozenset(
    ("add", "sub", "mul", "div", "mod", "pow", "lshift", "rshift", "and", "xor", "or", "matmul", "truediv", "floordiv")
)


@dataclass(frozen=True)
class OperatorName:
    """``base[_functional][_].overload`` or a dunder ``__iadd__``."""

    base: str
    inplace: bool = False
    dunder: bool = False
    functional_overload: bool = False
    overload: str = ""

    @classmethod
    def parse(cls, text: str) -> OperatorName:
        name, dot, overload = text.partition(".")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) or (dot and not re.fullmatch(r"[A-Za-z0-9_]+", overload)):
            raise SchemaError(f"bad operator name '{text}'", 1)
        if name in CPP_KEYWORDS:
            raise SchemaError(f"bad operator name '{name}' (a C++ keyword)", 1)
        if name.startswith("__") and name.endswith("__") and len(name) > 4:
            core = name[2:-2]
            inplace = core.startswith("i") and core[1:] in _AUGMENTED
            return cls(core[1:] if inplace else core, inplace, True, False, overload)
        functional = name.endswith("_functional")
        if functional:
            name = name[: -len("_functional")]
        inplace = name.endswith("_") and not functional
        return cls(name[:-1] if inplace else name, inplace, False, functional, overload)

    @property
    def name(self) -> str:
        """The operator name without the overload: ``add_``, ``__iand__``."""
        if self.dunder:
            return f"__{'i' if self.inplace else ''}{self.base}__"
        suffix = "_functional" if self.functional_overload else ""
        return f"{self.base}{suffix}{'_' if self.inplace else ''}"

    def __str__(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def family(self) -> str:
        """The name an op shares with its in-place variant: ``add`` for ``add_``, ``__and__`` for ``__iand__``."""
        return self.remove_inplace().name

    def unambiguous_name(self) -> str:
        """``add_out`` for ``add.out``: the name plus the overload, joined by ``_``."""
        return f"{self.name}_{self.overload}" if self.overload else self.name

    def remove_inplace(self) -> OperatorName:
        return replace(self, inplace=False)

    def with_overload(self, overload: str) -> OperatorName:
        return replace(self, overload=overload)


def op_name(op: str) -> OperatorName:
    """The typed name of a registered op, given as ``name.overload`` or ``namespace::name.overload``.

    Every room that selects ops by name asks this, instead of cutting the text: ``__and__``
    keeps its underscores, and ``__iand__`` is the in-place variant of ``__and__``.
    """
    return OperatorName.parse(op.rpartition("::")[2])


@dataclass(frozen=True)
class OpSelector:
    """One ``--op`` name, its namespace handled (``op_selection``): ``name`` is an op (``add.Tensor``) or
    every overload of a name (``add``), without the namespace; ``qualified``: given as ``namespace::name``."""

    namespace: str  # the inputs' (the one an --op may name)
    name: str
    qualified: bool = False

    def __str__(self) -> str:
        """As given: a message answers in the user's spelling."""
        return f"{self.namespace}::{self.name}" if self.qualified else self.name


def op_selection(names: Iterable[str], namespace: str) -> tuple[OpSelector, ...]:
    """The ``--op`` names as a front end reads them (``mylib::op``, ``op`` or ``op.overload``), the one place
    their namespace is handled: one qualified by another namespace than the inputs' is an error."""
    selected = []
    for name in names:
        ns, qualified, bare = name.rpartition("::")
        if qualified and ns != namespace:
            raise VtgenError(f"--op {name}: the ops are in namespace '{namespace}', not '{ns}'")
        selected.append(OpSelector(namespace, bare, bool(qualified)))
    return tuple(selected)


def resolve_ops(selected: Iterable[OpSelector], known: Iterable[str], missing: str) -> list[str]:
    """The ops of ``known`` (``name.overload``, no namespace) each selector selects, in order: an exact
    op (``add.Tensor``) or every overload of a name (``add``), the one rule every ``--op`` follows.  A
    selector matching nothing is an error saying ``missing`` (what the command looked for), with a
    did-you-mean in the spelling given."""
    known = tuple(known)
    by_name: dict[str, list[int]] = {}  # each name's ops (their positions): one parse per op, not per selector
    for i, op in enumerate(known):
        for key in dict.fromkeys((op_name(op).name, op)):  # every overload of the name, and the op itself
            by_name.setdefault(key, []).append(i)
    chosen: list[str] = []
    for s in selected:
        hits = [known[i] for i in sorted(set(by_name.get(s.name, ())))]
        if not hits:
            candidates = dict.fromkeys([*known, *(op_name(op).name for op in known)])
            shown = [f"{s.namespace}::{op}" for op in candidates] if s.qualified else list(candidates)
            raise VtgenError(f"--op {s}: {missing}{did_you_mean(str(s), shown)}")
        chosen += hits
    return list(dict.fromkeys(chosen))


@dataclass(frozen=True)
class FunctionSchema:
    name: OperatorName
    arguments: Arguments
    returns: tuple[Return, ...]

    def __hash__(self) -> int:
        """Hashed once: schemas key the plan's tables, and a field-by-field hash walks the whole tree."""
        found: int | None = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = hash(str(self))  # the text is canonical: equal schemas, equal text
        return found

    @classmethod
    def parse(cls, text: str) -> FunctionSchema:
        """Parse a schema; a malformed one raises SchemaError with the column."""
        control = control_character(text)
        if control is not None:  # it would end the C++ string literal or the Python docstring it is pasted into
            raise SchemaError(f"a control character ({control[1]}) is not allowed in a schema", control[0] + 1)
        open_at = text.find("(")
        if open_at <= 0:
            raise _fail("expected 'name(arguments) -> returns'", text, max(open_at, 0))
        close_at = text.find(") -> ")
        if close_at < 0 or text.count("(", 0, close_at) != text.count(")", 0, close_at) + 1:
            close_at = cls._matching_paren(text, open_at)
        arrow = text[close_at + 1 :]
        if not arrow.startswith(" -> "):
            raise _fail("expected ' -> ' after the arguments", text, close_at + 1)
        name = cls._located(OperatorName.parse, text[:open_at], 0)
        arguments = cls._located(Arguments.parse, text[open_at + 1 : close_at], open_at + 1)
        returns = cls._located(cls._parse_returns, arrow[4:], close_at + 5)
        schema = cls(name, arguments, returns)
        if str(schema) != text:
            raise _fail(f"schema does not round-trip (reads back as '{schema}')", text, 0)
        return schema

    @staticmethod
    def _matching_paren(text: str, open_at: int) -> int:
        depth = 0
        for i in range(open_at, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                return i
        raise _fail("unbalanced parentheses", text, open_at)

    @staticmethod
    def _located(parse: Callable[[str], _T], piece: str, offset: int) -> _T:
        try:
            return parse(piece)
        except SchemaError as exc:
            message = exc.message.rsplit(" (column", 1)[0]
            raise SchemaError(message, offset + exc.column) from None

    @staticmethod
    def _parse_returns(text: str) -> tuple[Return, ...]:
        if not text.startswith("("):
            return (Return.parse(text),)
        if not text.endswith(")"):
            raise SchemaError("expected ')' at the end of the returns", len(text) + 1)
        returns, offset = [], 1
        for piece in text[1:-1].split(", ") if len(text) > 2 else []:
            returns.append(FunctionSchema._located(Return.parse, piece, offset))
            offset += len(piece) + 2
        return tuple(returns)

    def __str__(self) -> str:
        text: str | None = self.__dict__.get("_text")  # schemas are immutable: spell them once
        if text is None:
            returns = str(self.returns[0]) if len(self.returns) == 1 else f"({', '.join(map(str, self.returns))})"
            text = f"{self.name}({self.arguments}) -> {returns}"
            self.__dict__["_text"] = text
        return text

    def kind(self) -> SchemaKind:
        """Functional, in-place (``add_``), out= (mutable kwargs), mutable, or scratch."""
        found: SchemaKind | None = self.__dict__.get("_kind")
        if found is None:
            found = self.__dict__["_kind"] = self._kind()
        return found

    def _kind(self) -> SchemaKind:
        if self.name.inplace:
            return SchemaKind.inplace
        if any(a.name.startswith("_scratch_") for a in self.arguments.out):
            return SchemaKind.scratch
        if self.arguments.out:
            return SchemaKind.out
        if any(a.is_write for a in self.arguments.post_self_positional()):
            return SchemaKind.mutable
        return SchemaKind.functional

    def has_symint(self) -> bool:
        return any(a.type.base().name == "SymInt" for a in self.arguments.all)

    def cpp_name(self) -> str:
        """The C++ API name: the operator name, plus ``_out`` for out= schemas."""
        return self.name.name + ("_out" if self.arguments.out else "")

    def is_view(self) -> bool:
        """Returns an alias of an input that is not written (``Tensor(a)``)."""
        return any(r.annotation is not None and not r.annotation.is_write for r in self.returns)

    def has_wildcard_alias(self) -> bool:
        return any(a.annotation is not None and "*" in a.annotation.alias_set_after for a in self.arguments.all)

    def signature(
        self, *, strip_default: bool = False, strip_view_copy_name: bool = False, keep_return_names: bool = False
    ) -> FunctionSchema:
        """The schema shared by an op's functional, in-place and out= variants (computed once per flag set)."""
        key = (strip_default, strip_view_copy_name, keep_return_names)
        memo: dict[tuple[bool, bool, bool], FunctionSchema] = self.__dict__.setdefault("_signature_memo", {})
        if key not in memo:
            memo[key] = self._signature(*key)
        return memo[key]

    def _signature(self, strip_default: bool, strip_view_copy_name: bool, keep_return_names: bool) -> FunctionSchema:
        """The schema shared by an op's functional, in-place and out= variants.

        Drops the overload name, the in-place underscore, out arguments, the
        tensor-options group, alias annotations and return names; mutable inputs
        that are not returned become extra returns.  Two native functions with
        the same signature are variants of one operator.
        """
        base = self.name.base
        if strip_view_copy_name:
            if base.endswith("_copy"):
                base = base.replace("_copy", "")
            elif base.endswith("_scatter"):
                base = base.replace("scatter", "inverse")
        returned = {r.annotation for r in self.returns if r.annotation is not None}
        self_arg = self.arguments.self_arg
        mutated = [self_arg] if self_arg else []
        mutated += list(self.arguments.out) + list(self.arguments.post_self_positional())
        extra = tuple(
            Return(f"{a.name}_out" if keep_return_names else None, a.type)
            for a in mutated
            if a.is_write and a.annotation not in returned
        )
        kept = tuple(Return(r.name if keep_return_names else None, r.type) for r in self.returns)
        returns = kept + extra
        return FunctionSchema(
            OperatorName(base, dunder=self.name.dunder),
            self.arguments.signature(strip_default=strip_default, patch_bernoulli=str(self.name) == "bernoulli.p"),
            returns,
        )
