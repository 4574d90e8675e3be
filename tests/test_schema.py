"""Function schemas: parse() and str() are inverses, on the real files and on generated schemas."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vtgen_build.base.names import CPP_KEYWORDS
from vtgen_build.inputs.load import load_entries
from vtgen_build.model.schema import (
    BASE_TYPES,
    Annotation,
    Argument,
    Arguments,
    BaseType,
    FunctionSchema,
    ListType,
    OperatorName,
    OptionalType,
    Return,
    SchemaError,
    SchemaKind,
    Type,
)

if TYPE_CHECKING:
    from tests.conftest import RealYaml
    from vtgen_build.model import Model


def _schema_texts(path: str, key: str) -> list[str]:
    texts = []
    for entry in load_entries(path):
        (field,) = (f for f in entry.fields if f.key == key)
        assert isinstance(field.value, str)
        texts.append(field.value.partition("::")[2] if "::" in field.value.split("(")[0] else field.value)
    return texts


# -- the real files ---------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.parametrize(("file", "key", "count"), [("native_functions", "func", 2584), ("derivatives", "name", 687)])
def test_real_schemas_round_trip(real_yaml: RealYaml, file: str, key: str, count: int) -> None:
    texts = _schema_texts(str(getattr(real_yaml, file)), key)
    assert len(texts) == count
    bad = [s for s in texts if str(FunctionSchema.parse(s)) != s]
    assert bad == []


@pytest.mark.torch
def test_real_signatures_match_torchgen(real_yaml: RealYaml, real_model: Model) -> None:
    """``signature()`` (how variants are grouped) spells every real schema as torchgen does."""
    torchgen_model = pytest.importorskip("torchgen.model")
    schemas = [f.func for f in real_model.native_functions] + [d.schema for d in real_model.derivatives]
    assert len(schemas) == 3101 + 687
    options: list[dict[str, bool]] = [
        {},
        {"strip_default": True},
        {"strip_view_copy_name": True},
        {"keep_return_names": True},
    ]
    mismatches = []
    for ours in schemas:
        theirs = torchgen_model.FunctionSchema.parse(str(ours))
        for kw in options:
            if str(ours.signature(**kw)) != str(theirs.signature(**kw)):
                mismatches.append((str(ours), kw, str(ours.signature(**kw)), str(theirs.signature(**kw))))
    assert mismatches[:5] == []


@pytest.mark.torch
def test_real_schema_kinds_match_torchgen(real_model: Model) -> None:
    torchgen_model = pytest.importorskip("torchgen.model")
    for f in real_model.native_functions:
        theirs = torchgen_model.FunctionSchema.parse(str(f.func))
        assert f.func.kind().name == theirs.kind().name, str(f.func)


# -- generated schemas ------------------------------------------------------------------------

# Valid names only: a C++ keyword is rejected (test_cpp_keywords_are_rejected_as_names says how).
_IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,7}", fullmatch=True).filter(lambda s: s not in CPP_KEYWORDS)
_OP_BASE = st.from_regex(r"_?[a-z][a-z0-9]{0,5}(_[a-z0-9]{1,5}){0,2}", fullmatch=True).filter(
    lambda s: not s.endswith("_functional")
)
_OVERLOAD = st.one_of(st.just(""), st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,9}", fullmatch=True))
_DUNDER = ("add", "sub", "mul", "and", "or", "xor", "lshift", "rshift", "getitem", "len", "truediv")
_AUGMENTED = frozenset({"add", "sub", "mul", "and", "or", "xor", "lshift", "rshift", "truediv"})
_DEFAULTS = (
    "None",
    "True",
    "False",
    "0",
    "1",
    "-1",
    "-100",
    "0.5",
    "1e-05",
    "[]",
    "[0,1]",
    "[-2,-1]",
    "Mean",
    "long",
    "contiguous_format",
    "'linear'",
    '"L"',
    '""',
    '"\\"\'\\\\"',
)


@st.composite
def operator_names(draw: st.DrawFn) -> OperatorName:
    overload = draw(_OVERLOAD)
    if draw(st.booleans()) and draw(st.booleans()):  # a quarter are dunders
        base = draw(st.sampled_from(_DUNDER))
        return OperatorName(base, inplace=base in _AUGMENTED and draw(st.booleans()), dunder=True, overload=overload)
    functional = draw(st.booleans()) and draw(st.booleans())
    inplace = not functional and draw(st.booleans())
    base = draw(_OP_BASE.filter(lambda s: inplace or functional or s not in CPP_KEYWORDS))  # `or_` is fine
    return OperatorName(base, inplace=inplace, functional_overload=functional, overload=overload)


def _wrap(inner: st.SearchStrategy[Type]) -> st.SearchStrategy[Type]:
    return st.one_of(
        inner.filter(lambda t: not isinstance(t, OptionalType)).map(OptionalType),
        st.builds(ListType, inner, st.one_of(st.none(), st.integers(1, 8))),
    )


_CUSTOM_CLASS = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase"
types: st.SearchStrategy[Type] = st.recursive(
    st.sampled_from([*sorted(BASE_TYPES), _CUSTOM_CLASS]).map(BaseType), _wrap, max_leaves=3
)
tensor_types: st.SearchStrategy[Type] = st.recursive(st.just(BaseType("Tensor")), _wrap, max_leaves=3)

_ALIAS_SET = st.lists(st.sampled_from([*string.ascii_lowercase[:5], "x0"]), min_size=1, max_size=2, unique=True)


def alias_annotations(*, write: bool | None, after: bool) -> st.SearchStrategy[Annotation]:
    """``write``: force (True/False) or draw (None) the ``!``; ``after``: may have ``-> *`` / ``-> b``."""
    after_sets = st.one_of(st.just(()), st.just(("*",)), _ALIAS_SET.map(tuple)) if after else st.just(())
    return st.builds(
        Annotation,
        _ALIAS_SET.map(tuple),
        st.booleans() if write is None else st.just(write),
        after_sets,
    )


def arguments_of(*, write: bool | None, after: bool = True) -> st.SearchStrategy[Argument]:
    defaults = st.one_of(st.none(), st.sampled_from(_DEFAULTS))
    plain = st.builds(Argument, _IDENT, types, defaults, st.none())
    annotated = st.builds(Argument, _IDENT, tensor_types, defaults, alias_annotations(write=write, after=after))
    if write:
        return annotated  # out arguments are always written to
    return st.one_of(plain, annotated)


returns_ = st.one_of(
    st.builds(Return, st.one_of(st.none(), _IDENT), types, st.none()),
    st.builds(Return, st.one_of(st.none(), _IDENT), tensor_types, alias_annotations(write=None, after=False)),
)

schemas = st.builds(
    FunctionSchema,
    operator_names(),
    st.builds(
        Arguments,
        st.lists(arguments_of(write=None), max_size=4).map(tuple),
        st.lists(arguments_of(write=False), max_size=3).map(tuple),
        st.lists(arguments_of(write=True), max_size=2).map(tuple),
    ),
    st.lists(returns_, max_size=3).map(tuple),
)


@pytest.mark.parametrize("keyword", sorted(CPP_KEYWORDS))
@pytest.mark.parametrize("overload", ["", ".Tensor"])
def test_cpp_keywords_are_rejected_as_names(keyword: str, overload: str) -> None:
    with pytest.raises(SchemaError, match=rf"^error: bad operator name '{keyword}' \(a C\+\+ keyword\)"):
        FunctionSchema.parse(f"{keyword}{overload}(Tensor self) -> Tensor")
    with pytest.raises(SchemaError, match=rf"^error: bad argument name '{keyword}' \(a C\+\+ keyword\)"):
        FunctionSchema.parse(f"f(Tensor {keyword}) -> Tensor")
    assert str(OperatorName.parse(f"{keyword}_{overload}")) == f"{keyword}_{overload}"  # in-place: not a keyword


@given(schemas)
def test_generated_schema_round_trips(schema: FunctionSchema) -> None:
    text = str(schema)
    parsed = FunctionSchema.parse(text)
    assert str(parsed) == text
    assert parsed == schema


@given(types)
def test_generated_type_round_trips(ty: Type) -> None:
    assert Type.parse(str(ty)) == ty


@given(operator_names())
def test_generated_operator_name_round_trips(name: OperatorName) -> None:
    assert OperatorName.parse(str(name)) == name


@given(st.text(alphabet="()[]?!*|-> ,=.aTensorint_1:", max_size=40))
def test_any_text_parses_or_fails_with_a_column(text: str) -> None:
    try:
        schema = FunctionSchema.parse(text)
    except SchemaError as exc:
        assert 1 <= exc.column <= len(text) + 1
        assert f"(column {exc.column})" in str(exc)
    else:
        assert str(schema) == text


# -- hand-picked schemas ----------------------------------------------------------------------

_EXAMPLES = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]",
    "_foreach_add_.List(Tensor(a!)[] self, Tensor[] other, *, Scalar alpha=1) -> ()",
    "__iand__.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    "_fused_moving_avg_obs_fq_helper_functional(Tensor self, Tensor observer_on, Tensor running_min) -> "
    "(Tensor output, Tensor mask, Tensor running_min_out)",
    "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], SymInt[1]? s=None) -> Tensor",
    "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
    "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
    "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
    "_test_string_default(Tensor dummy, str a=\"\\\"'\\\\\", str b='\"\\'\\\\') -> Tensor",
]


@pytest.mark.parametrize("text", _EXAMPLES)
def test_examples_round_trip(text: str) -> None:
    assert str(FunctionSchema.parse(text)) == text


def test_parts_of_a_schema() -> None:
    s = FunctionSchema.parse("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert s.name == OperatorName("add", overload="out")
    assert [a.name for a in s.arguments.positional] == ["self", "other"]
    assert [a.name for a in s.arguments.kwarg_only] == ["alpha"]
    assert s.arguments.kwarg_only[0].default == "1"
    assert [a.name for a in s.arguments.out] == ["out"]
    assert s.arguments.out[0].annotation == Annotation(("a",), True)
    assert s.returns == (Return(None, BaseType("Tensor"), Annotation(("a",), True)),)
    assert s.kind() is SchemaKind.out
    assert str(s.signature()) == "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("add_", OperatorName("add", inplace=True)),
        ("__iadd__", OperatorName("add", inplace=True, dunder=True)),
        ("__getitem__.t", OperatorName("getitem", dunder=True, overload="t")),
        ("_foo_functional", OperatorName("_foo", functional_overload=True)),
        ("a.b_1", OperatorName("a", overload="b_1")),
    ],
)
def test_operator_names(text: str, expected: OperatorName) -> None:
    assert OperatorName.parse(text) == expected
    assert str(expected) == text


def test_types() -> None:
    assert Type.parse("int[2]") == ListType(BaseType("int"), 2)
    assert Type.parse("Tensor?[]") == ListType(OptionalType(BaseType("Tensor")), None)
    assert Type.parse("float[]?") == OptionalType(ListType(BaseType("float"), None))
    assert Type.parse("Tensor?[]").is_tensor_like()
    assert Type.parse("Tensor?[]").base() == BaseType("Tensor")


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("add(Tensor self, Tnsor other) -> Tensor", 18, "unknown type 'Tnsor'; did you mean 'Tensor'?"),
        ("add(Tensor self -> Tensor", 4, "unbalanced parentheses in 'add(Tensor self -> Tensor'"),
        ("add(Tensor self) Tensor", 17, "expected ' -> ' after the arguments in 'add(Tensor self) Tensor'"),
        ("(Tensor self) -> Tensor", 1, "expected 'name(arguments) -> returns' in '(Tensor self) -> Tensor'"),
        ("add.x.y(Tensor self) -> Tensor", 1, "bad operator name 'add.x.y'"),
        ("add(Tensor self, Tensor 1x) -> Tensor", 25, "bad argument name '1x'"),
        ("add(Tensor self, Tensor) -> Tensor", 18, "expected 'Type name', found 'Tensor'"),
        ("add(Tensor self,Tensor other) -> Tensor", 16, "expected ', ' between arguments"),
        ("add(Tensor self, *, *, int a) -> Tensor", 21, "'*' may appear only once"),
        (
            "add(Tensor self, *, Tensor(a!) out, int a) -> Tensor",
            37,
            "non-mutable argument 'a' cannot follow out arguments",
        ),
        ("add(Tensor(A!) self) -> Tensor", 5, "malformed alias annotation 'A!'"),
        ("add(int[x] a) -> Tensor", 5, "unknown type 'int[x]'; did you mean 'int'?"),
        ("add(Tensor self) -> Tensr", 21, "unknown type 'Tensr'; did you mean 'Tensor'?"),
        ("add(Tensor self) -> (Tensor a, Tensr b)", 32, "unknown type 'Tensr'; did you mean 'Tensor'?"),
        ("add(Tensor self) -> (Tensor, Tensor", 36, "expected ')' at the end of the returns"),
        (
            "add(Tensor self) -> (Tensor)",
            1,
            "schema does not round-trip (reads back as 'add(Tensor self) -> Tensor') in 'add(Tensor self) -> (Tensor)'",
        ),
    ],
)
def test_malformed_schema_reports_the_column(text: str, column: int, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        FunctionSchema.parse(text)
    assert info.value.column == column
    assert info.value.message == f"{message} (column {column})"
