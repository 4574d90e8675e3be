"""The formula translator: derivatives.yaml's C++ expressions as Python (no torch needed).

A table of spellings, errors at the offending construct's offset (and, through the generator,
at the yaml line and column), a property test of precedence and semantics against a reference
evaluator, and every formula of the sample and of tests/packages translated.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vtgen_build.base.errors import Location, VtgenError
from vtgen_build.diagnostics import from_error
from vtgen_build.engine.planned import plan_inputs
from vtgen_build.engine.python_autograd import autograd_module, write_python_autograd
from vtgen_build.inputs.files import Inputs
from vtgen_build.model import load_model
from vtgen_build.plan.infos import build_infos
from vtgen_build.plan.policy import load_policy
from vtgen_build.translate import Scope, python_formulas, translate_formula
from vtgen_build.translate.cpp_expr import Call, ExprError, Name, parse_expression
from vtgen_build.translate.formulas import forward_python

from .conftest import CliRunner

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tests" / "packages" / "py_autograd"
SCOPE = Scope(
    frozenset(("grad", "grads", "self", "other", "alpha", "result", "grad_input_mask", "dim", "lambda")),
    "ns",
    library_ops=frozenset(("softsign_backward",)),
    user_functions=frozenset(("my_helper",)),
)

SPELLINGS = [
    ("grad * 2", "(grad * 2)"),
    ("-grad", "(-grad)"),
    ("grad * 1.0f", "(grad * 1.0)"),
    ("grad * 1.f", "(grad * 1.0)"),
    ("self.pow(-1)", "self.pow((-1))"),
    ("grad.defined() ? grad : other", "(grad if (grad is not None) else other)"),
    ("!grad.defined()", "(not (grad is not None))"),
    ("grads[0].defined() && grads[1].defined()", "((grads[0] is not None) and (grads[1] is not None))"),
    ("alpha == 1 || alpha != 2", "((alpha == 1) or (alpha != 2))"),
    ("at::sum_symint(grad, dim)", "torch.sum(grad, dim)"),
    ("zeros_like(self)", "torch.zeros_like(self)"),
    ("self.sym_sizes()", "self.shape"),
    ("self.sizes()", "self.shape"),
    ("self.sym_size(-1)", "self.size((-1))"),
    ("self.scalar_type()", "self.dtype"),
    ("at::zeros(self.sym_sizes(), self.options())", "torch.zeros(self.shape, **_options(self))"),
    ("std::nullopt", "None"),
    ("grad.expand_symint(self.sym_sizes())", "grad.expand(self.shape)"),
    ("std::get<1>(result)", "result[1]"),
    ("static_cast<double>(alpha)", "float(alpha)"),
    ("std::vector<c10::SymInt>{0, self.sym_size(-1)}", "[0, self.size((-1))]"),
    ("{grad, other}", "[grad, other]"),
    ("my_helper(grad, {{1, 1}}, {{0, 0, 0}})", "_formulas.my_helper(grad, [1, 1], [0, 0, 0])"),  # ArrayRef{{1, 1}}
    ("softsign_backward(grad, self)", "torch.ops.ns.softsign_backward(grad, self)"),
    ("my_helper(grad, grad_input_mask)", "_formulas.my_helper(grad, grad_input_mask)"),
    ("handle_r_to_c(self.scalar_type(), grad)", "_handle_r_to_c(self.dtype, grad)"),
    ('not_implemented("x")', '_not_implemented("x")'),
    ("grad * lambda", "(grad * lambda_)"),
    ("alpha.toDouble()", "float(alpha)"),
    ("self.mT()", "self.mT"),
    ('grad.div(other, /*rounding_mode=*/"trunc")', 'grad.div(other, rounding_mode="trunc")'),  # keyword-only
    ("grad.sum(dim, true, self.scalar_type())", "grad.sum(dim, True, dtype=self.dtype)"),
    ("grad.to(self.dtype())", "grad.to(self.dtype)"),
    ("M_PI * grad", "(math.pi * grad)"),
    ("grad.slice_symint(dim, 0, 1, 1)", "_cpp_slice(grad, dim, 0, 1, 1)"),  # no Python method: aten's, or ArrayRef's
    ("grad.index(other)", "_cpp_index(grad, other)"),
    ("grad.expand_symint(other, true)", "grad.expand(other, implicit=True)"),  # keyword-only in Python
    ("grad.sum(dim.value_or(IntArrayRef({})), true)", "grad.sum(([] if dim is None else dim), True)"),  # an optional
    ("my_helper(grad, Tensor())", "_formulas.my_helper(grad, None)"),  # an undefined tensor
    ("retain_variables ? result.clone() : result", "(result.clone() if True else result)"),
    ("self.sym_size(dim.back())", "self.size(dim[-1])"),  # a list's last element
    ("dim.front()", "dim[0]"),
    ("grad.contiguous(c10::MemoryFormat::Contiguous)", "grad.contiguous(memory_format=torch.contiguous_format)"),
    (
        "grad.device().is_cpu() ? self.suggest_memory_format() : at::MemoryFormat::Preserve",
        '(_suggest_memory_format(self) if _on_device(grad.device, "cpu") else torch.preserve_format)',
    ),
    ("self.is_xpu()", '_on_device(self, "xpu")'),
]


@pytest.mark.parametrize(("cpp", "python"), SPELLINGS)
def test_spelling(cpp: str, python: str) -> None:
    assert translate_formula(cpp, SCOPE) == python


def test_integer_division_rounds_toward_zero_as_cpp() -> None:
    """Found on the whole 2.13 yaml: channel_shuffle's ``grad.sym_size(1) / groups`` divided two integers with
    Python's ``/``, and the float reached the op's ``SymInt groups``.  C++ divides integers (sizes, ``int``
    and ``SymInt`` arguments, integer literals) rounding toward zero; a tensor or a float divides as before."""
    from vtgen_build.translate.python_prelude import prelude

    scope = Scope(frozenset(("grad", "groups", "p")), "aten", integers=frozenset(("groups",)))
    assert translate_formula("grad.sym_size(1) / groups", scope) == "(_cpp_div(grad.size(1), groups))"
    assert translate_formula("grad / groups", scope) == "(grad / groups)"
    assert translate_formula("1 / (1.0 - p)", scope) == "(1 / (1.0 - p))"
    helpers: dict[str, object] = {}
    exec(prelude("_cpp_div(1, 1)"), {"torch": SimpleNamespace()}, helpers)
    grad = SimpleNamespace(size=lambda d: (4, 6)[d])
    for cpp, value in [
        ("grad.sym_size(1) / groups", 2),
        ("-7 / 2", -3),
        ("7 / -groups", -2),
        ("(groups * 2 + 1) / 2", 3),
    ]:
        found = eval(translate_formula(cpp, scope), {**helpers, "grad": grad, "groups": 3})
        assert found == value and isinstance(found, int), (cpp, found)


def test_tangent_reading_helpers_get_the_tangents() -> None:
    """cat_jvp(tensors, dim) reads its tensors' forward gradients in C++: the Python passes their tangents, at
    any depth of the formula; another helper, or a name with no tangent bound, keeps its argument."""
    module = SimpleNamespace(namespace="aten", library_ops=frozenset(), user_functions=frozenset(
        ("cat_jvp", "stack_jvp", "my_helper")), entries=())  # fmt: skip
    values = frozenset(("tensors", "tensors_t", "dim", "other"))
    where = Location("derivatives.yaml", 1)

    def python(text: str) -> str:
        return forward_python(text, values, where, text, module)

    assert python("cat_jvp(tensors, dim)") == "_formulas.cat_jvp(tensors_t, dim)"
    assert python("2 * stack_jvp(tensors, dim)") == "(2 * _formulas.stack_jvp(tensors_t, dim))"
    assert python("my_helper(tensors, dim)") == "_formulas.my_helper(tensors, dim)"
    assert python("cat_jvp(other, dim)") == "_formulas.cat_jvp(other, dim)"


REFUSED = [
    ("grad +", 6, "expected a value, found the end of the formula"),
    ("[&](int x){ return x; }(grad)", 0, "a lambda"),
    ("softsign_backwrd(grad, self)", 0, "unknown helper 'softsign_backwrd'"),
    ("grad * selff", 7, "unknown name 'selff'; did you mean 'self'?"),
    ("grad.item<float>(1)", 5, "template member 'item<float>'"),
    ("at::native::foo(grad)", 0, "the C++ function 'at::native::foo'"),
    ("grad = 1", 5, "an assignment"),
    ("&grad", 0, "taking an address"),
    ("grad ? self", 11, "expected ':'"),
    ("grad $ 1", 5, "unexpected character '$'"),
]


@pytest.mark.parametrize(("cpp", "offset", "message"), REFUSED)
def test_refused_at_offset(cpp: str, offset: int, message: str) -> None:
    with pytest.raises(ExprError) as info:
        translate_formula(cpp, SCOPE)
    assert message in info.value.message
    assert info.value.offset == offset


# --- property: precedence and semantics against a reference evaluator -------------------------

_PREC = {"||": 1, "&&": 2, "==": 6, "!=": 6, "<": 7, ">": 7, "+": 9, "-": 9, "*": 10}
_LEAF = st.integers(min_value=-3, max_value=3)


def _trees(depth: int = 4) -> st.SearchStrategy[object]:
    return st.recursive(
        _LEAF.map(lambda n: ("lit", n)),
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(sorted(_PREC)), inner, inner).map(lambda t: ("bin", *t)),
            st.tuples(st.sampled_from(["-", "!"]), inner).map(lambda t: ("un", *t)),
            st.tuples(inner, inner, inner).map(lambda t: ("cond", *t)),
        ),
        max_leaves=12,
    )


def _cpp(t: object, need: int = 0) -> str:
    """C++ text with only the parentheses C++ precedence needs (``need``: the context's level)."""
    assert isinstance(t, tuple)
    if t[0] == "lit":
        text, level = (str(t[1]) if t[1] >= 0 else f"({t[1]})"), 20
    elif t[0] == "un":
        text, level = f"{t[1]}{_cpp(t[2], 15)}", 15
    elif t[0] == "bin":
        level = _PREC[t[1]]
        text = f"{_cpp(t[2], level)} {t[1]} {_cpp(t[3], level + 1)}"
    else:
        text, level = f"{_cpp(t[1], 1)} ? {_cpp(t[2], 0)} : {_cpp(t[3], 0)}", 0
    return f"({text})" if level < need else text


def _eval(t: object) -> int:
    """C++ semantics over ints (booleans are 0/1)."""
    assert isinstance(t, tuple)
    if t[0] == "lit":
        return int(t[1])
    if t[0] == "un":
        v = _eval(t[2])
        return -v if t[1] == "-" else int(not v)
    if t[0] == "cond":
        return _eval(t[2]) if _eval(t[1]) else _eval(t[3])
    a, b = _eval(t[2]), _eval(t[3])
    ops = {"+": a + b, "-": a - b, "*": a * b, "<": int(a < b), ">": int(a > b), "==": int(a == b)}
    ops.update({"!=": int(a != b), "&&": int(bool(a) and bool(b)), "||": int(bool(a) or bool(b))})
    return ops[t[1]]


@settings(max_examples=300, deadline=None)
@given(_trees())
def test_translation_keeps_cpp_meaning(tree: object) -> None:
    text = _cpp(tree)
    python = translate_formula(text, SCOPE)
    assert int(eval(python, {})) == _eval(tree), (text, python)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet='ab(){}[],.?:!&|+-*/<>=0123456789 "', max_size=24))
def test_any_text_is_parsed_or_refused_at_an_offset_inside_it(text: str) -> None:
    try:
        parse_expression(text)
    except ExprError as exc:
        assert 0 <= exc.offset <= len(text)


# --- the formulas of the repository's libraries ---------------------------------------------


def _called(node: object, found: set[str]) -> None:
    if isinstance(node, Call) and isinstance(node.func, Name) and "::" not in node.func.text:
        found.add(node.func.text)
    for value in getattr(node, "__dict__", {}).values():
        for child in value if isinstance(value, tuple) else (value,):
            if hasattr(child, "offset"):
                _called(child, found)


LIBRARIES = {
    "sample_project": (ROOT / "sample_project", "vtsample"),
    "setuptools_ops": (ROOT / "tests/packages/setuptools_ops/ops", "setuptools_ops"),
    "py_autograd": (PACKAGE, "pyag"),
}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_every_formula_translates(library: str) -> None:
    """Helpers written in C++ there count as functions of a formulas module (their Python twins)."""
    root, ns = LIBRARIES[library]
    model = load_model(Inputs(str(root / "native_functions.yaml"), str(root / "derivatives.yaml"), None, ns))
    helpers: set[str] = set()
    for entry in model.derivatives:
        for s in entry.formula_sets:
            for f in s.formulas:
                _called(parse_expression(f.expression), helpers)
    module = autograd_module(model)
    module = type(module)(module.namespace, module.library_ops, module.entries, "f", frozenset(helpers))
    count = 0
    for per_key in build_infos(model).values():
        for info in per_key:
            count += len(python_formulas(info, module))
    assert count >= 3


def test_op_library_views_and_mutating_formulas_translate(tmp_path: Path) -> None:
    """tests/packages/op_library's formulas, appended to the sample's as tests/conftest.py does."""
    for name in ("native_functions.yaml", "derivatives.yaml"):
        text = (ROOT / "sample_project" / name).read_text() + (
            ROOT / f"tests/packages/op_library/extra_{name}"
        ).read_text()
        (tmp_path / name).write_text(text)
    model = load_model(
        Inputs(str(tmp_path / "native_functions.yaml"), str(tmp_path / "derivatives.yaml"), None, "vtsample")
    )
    helpers: set[str] = set()
    for entry in model.derivatives:
        for s in entry.formula_sets:
            for f in s.formulas:
                _called(parse_expression(f.expression), helpers)
    module = autograd_module(model)
    module = type(module)(module.namespace, module.library_ops, module.entries, "f", frozenset(helpers))
    translated = [p for per_key in build_infos(model).values() for i in per_key for _, p in python_formulas(i, module)]
    assert any("torch.constant_pad_nd" in p for p in translated)  # narrow_last's at:: call
    assert any("grads[1]" in p and "is not None" in p for p in translated)  # mix_


# --- errors at the yaml line and column, through the generator ------------------------------


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "py_autograd"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("_autograd.py", "__pycache__"))
    return dest


def _generate(pkg: Path) -> None:
    inputs = Inputs(str(pkg / "native_functions.yaml"), str(pkg / "derivatives.yaml"), None, "pyag")
    write_python_autograd(
        plan_inputs(inputs, load_policy()), str(pkg / "pyag/_autograd.py"), str(pkg / "pyag/formulas.py")
    )


@pytest.mark.parametrize(
    ("replacement", "message", "column"),
    [
        ("handle_r_to_c(self.scalar_type(), softsign_backwrd(grad, self))", "did you mean 'softsign_backward'?", 43),
        ("handle_r_to_c(self.scalar_type(), [&](int x){ return x; }(grad))", "a lambda", 43),
        ("handle_r_to_c(self.scalar_type(), grad.data_ptr<float>())", "no Python spelling", 48),
    ],
)
def test_untranslatable_formula_is_an_error_at_its_line_and_column(
    tmp_path: Path, replacement: str, message: str, column: int
) -> None:
    pkg = _copy(tmp_path)
    yaml = pkg / "derivatives.yaml"
    original = "handle_r_to_c(self.scalar_type(), grad)"
    yaml.write_text(yaml.read_text().replace(original, replacement, 1))
    line = next(i for i, t in enumerate(yaml.read_text().splitlines(), 1) if replacement in t)
    with pytest.raises(VtgenError) as info:
        _generate(pkg)
    assert info.value.location is not None and info.value.location.line == line
    assert message in info.value.message and f"(column {column})" in info.value.message
    if "did you mean" in message:  # the suggestion is a fix, placed at the word the column names
        fix = from_error(info.value).fix
        assert fix is not None and (fix.line, fix.column, fix.old, fix.new) == (
            line, column, "softsign_backwrd", "softsign_backward",
        )  # fmt: skip
    else:
        assert info.value.fix is None


def test_module_is_deterministic_and_written_only_when_changed(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    _generate(pkg)
    target = pkg / "pyag/_autograd.py"
    first, mtime = target.read_text(), target.stat().st_mtime_ns
    _generate(pkg)
    assert target.read_text() == first and target.stat().st_mtime_ns == mtime
    other = _copy(tmp_path / "elsewhere")
    _generate(other)
    assert (other / "pyag/_autograd.py").read_text() == first
    compile(first, str(target), "exec")


def test_formulas_module_must_sit_beside_the_generated_module(tmp_path: Path) -> None:
    pkg = _copy(tmp_path)
    inputs = Inputs(str(pkg / "native_functions.yaml"), str(pkg / "derivatives.yaml"), None, "pyag")
    with pytest.raises(VtgenError, match="must sit beside"):
        write_python_autograd(
            plan_inputs(inputs, load_policy()), str(pkg / "_autograd.py"), str(pkg / "pyag/formulas.py")
        )


def test_inspect_shows_the_python_of_each_formula(run_cli: CliRunner) -> None:
    args = ["--native-functions", str(PACKAGE / "native_functions.yaml"), "--derivatives"]
    args += [str(PACKAGE / "derivatives.yaml"), "--namespace", "pyag", "--op", "affine", "--op", "softsign_"]
    result = run_cli("inspect", *args, "--python-formulas", str(PACKAGE / "pyag" / "formulas.py"))
    out = result.out
    assert result.code == 0, result.err
    assert "-> _formulas.affine_backward(grad, input, weight, grad_input_mask)" in out
    assert "Python autograd: Function of a mutating op" in out
    assert "-> torch.ops.pyag.softsign_backward(grad, self)" in out
    result = run_cli("inspect", *args)  # the classic plan only
    assert result.code == 0 and "Python autograd" not in result.out
    result = run_cli("inspect", *args, "--python-autograd")  # no formulas module: the helper is unknown, said so
    assert result.code == 0 and "untranslatable:" in result.out and "unknown helper 'affine_backward'" in result.out
