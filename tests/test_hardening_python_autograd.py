"""Generated Python autograd that no name or formula text can break (issue 44, items 4, 5, 15-17).

Each case generates ``_autograd.py`` in this process, defines the ops with ``torch.library``
(Python CPU kernels, a namespace of their own), imports the module and runs backward: a right
gradient, or an error at the yaml line, never a module that does not compile or a wrong value.
The property test draws op, overload and argument names (keywords, builtins, the module's own
names, names differing only by ``.`` vs ``_``) and formula trees (depth, length, literal
spellings) and compares each gradient with the tree evaluated in Python; one slow test builds a
few drawn ops as a C++ library too (one compile) and checks both tiers give the same gradients.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, find, given, settings
from hypothesis import strategies as st

from vtgen_build.base.errors import VtgenError
from vtgen_build.cli import commands as cli
from vtgen_build.compile.compiler import find_compiler
from vtgen_build.engine.planned import plan_inputs
from vtgen_build.engine.python_autograd import write_python_autograd
from vtgen_build.inputs.files import Inputs
from vtgen_build.plan.policy import load_policy
from vtgen_build.torchlib import locate_torch
from vtgen_build.translate import formulas

torch = pytest.importorskip("torch")

_NAMESPACES = itertools.count()
_LIBRARIES: list[Any] = []  # the torch.library handles of the defined ops (kept alive for the session)


@dataclass(frozen=True)
class Op:
    schema: str  # name[.overload](args) -> Tensor
    formulas: tuple[tuple[str, str], ...]  # (argument, formula)


def _yaml(ops: list[Op]) -> tuple[str, str]:
    native = "".join(f"- func: {op.schema}\n" for op in ops)
    derivatives = "".join(
        f"- name: {op.schema}\n" + "".join(f"  {a}: {_quoted(f)}\n" for a, f in op.formulas) for op in ops
    )
    return native, derivatives


def _quoted(formula: str) -> str:
    return '"' + formula.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _generate(where: Path, ops: list[Op], derivatives_name: str = "d.yaml") -> tuple[str, str]:
    """(namespace, module text) of ``ops``; a VtgenError propagates."""
    ns = f"vthard{next(_NAMESPACES)}"
    where.mkdir(parents=True, exist_ok=True)
    native, derivatives = _yaml(ops)
    (where / "nf.yaml").write_text(native)
    (where / derivatives_name).write_text(derivatives)
    inputs = Inputs(str(where / "nf.yaml"), str(where / derivatives_name), None, ns)
    target = where / "_autograd.py"
    write_python_autograd(plan_inputs(inputs, load_policy()), str(target))
    return ns, target.read_text(encoding="utf-8")


def _define(ns: str, ops: list[Op], kernel: Any) -> None:
    lib = torch.library.Library(ns, "DEF")
    _LIBRARIES.append(lib)
    for op in ops:
        lib.define(op.schema)
        lib.impl(op.schema.split("(")[0], kernel, "CPU")


def _load(ns: str, text: str) -> None:
    module = types.ModuleType(f"{ns}_autograd")
    exec(compile(text, module.__name__, "exec"), module.__dict__)
    _LIBRARIES.append(module)


def _op(ns: str, qualified: str) -> Any:
    name, _, overload = qualified.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), name), overload or "default")


def _grads(ns: str, qualified: str, count: int, **kwargs: Any) -> list[list[float]]:
    inputs = [torch.tensor([1.5, -2.0, 0.5], dtype=torch.float64, requires_grad=True) * (i + 1) for i in range(count)]
    leaves = [t.detach().requires_grad_() for t in inputs]
    _op(ns, qualified)(*leaves, **kwargs).sum().backward()
    return [t.grad.tolist() if t.grad is not None else [] for t in leaves]


def _sum_kernel(*args: Any, **kwargs: Any) -> Any:
    return sum(a for a in args if isinstance(a, torch.Tensor))


# --- item 4: op names that differ by '.' vs '_' -------------------------------------------------


def test_ops_differing_by_dot_and_underscore_keep_their_own_gradients(tmp_path: Path) -> None:
    ops = [
        Op("foo.bar(Tensor self) -> Tensor", (("self", "grad * 2"),)),
        Op("foo_bar(Tensor self) -> Tensor", (("self", "grad * 3"),)),
        Op("foo_bar_autograd(Tensor self) -> Tensor", (("self", "grad * 5"),)),
    ]
    ns, text = _generate(tmp_path, ops)
    _define(ns, ops, _sum_kernel)
    _load(ns, text)
    assert _grads(ns, "foo.bar", 1) == [[2.0] * 3]
    assert _grads(ns, "foo_bar", 1) == [[3.0] * 3]
    assert _grads(ns, "foo_bar_autograd", 1) == [[5.0] * 3]


# --- item 15: names the module uses itself ----------------------------------------------------


@pytest.mark.parametrize("name", ["lib", "flatten", "unflatten", "need", "formulas", "differentiating"])
def test_an_op_named_like_a_global_of_the_module(tmp_path: Path, name: str) -> None:
    ops = [
        Op(f"{name}(Tensor self) -> Tensor", (("self", "grad * 2"),)),
        Op("other(Tensor self) -> Tensor", (("self", "grad * 3"),)),
    ]
    ns, text = _generate(tmp_path, ops)
    _define(ns, ops, _sum_kernel)
    _load(ns, text)
    assert _grads(ns, name, 1) == [[2.0] * 3]
    assert _grads(ns, "other", 1) == [[3.0] * 3]


@pytest.mark.parametrize("name", ["torch", "ctx", "needs", "layout", "flat", "tangents", "len", "math", "lambda"])
def test_an_argument_named_like_a_name_of_the_module(tmp_path: Path, name: str) -> None:
    """Positional and keyword-only (the dispatcher passes the latter by its schema name)."""
    ops = [
        Op(f"two(Tensor self, Tensor {name}) -> Tensor", (("self", f"grad * {name}"), (name, "grad * self * 2"))),
        Op(f"kw(Tensor self, *, Tensor {name}) -> Tensor", (("self", f"grad * {name}"), (name, "grad * self * 2"))),
    ]
    ns, text = _generate(tmp_path, ops)
    _define(ns, ops, lambda a, *rest, **kw: a * [*rest, *kw.values()][0])
    _load(ns, text)
    x, y = (torch.full((3,), v, dtype=torch.float64, requires_grad=True) for v in (2.0, 5.0))
    _op(ns, "two")(x, y).sum().backward()
    _op(ns, "kw")(x, **{name: y}).sum().backward()
    assert x.grad.tolist() == [10.0] * 3 and y.grad.tolist() == [8.0] * 3


def test_an_argument_starting_with_underscore_is_refused_at_its_line(tmp_path: Path) -> None:
    ops = [Op("f(Tensor self, Tensor _s_self) -> Tensor", (("self", "grad * _s_self"),))]
    with pytest.raises(VtgenError, match="names starting with '_' are the generated module's own") as info:
        _generate(tmp_path, ops)
    assert info.value.location is not None and info.value.location.line == 1


# --- item 5: an argument named like what the backward binds ------------------------------------


@pytest.mark.parametrize(
    ("args", "formula"),
    [
        ("Tensor self, Tensor grad", "grad * grad"),
        ("Tensor self, Tensor grads", "grads[0] * grads"),
        ("Tensor self, Tensor gen", "grad * gen"),
        ("Tensor self, Tensor grad_inputs", "grad * grad_inputs"),
        ("Tensor self, Tensor self_ix", "grad * self_ix"),
    ],
)
def test_a_formula_reading_an_argument_the_backward_binds_is_refused_at_its_line(
    tmp_path: Path, args: str, formula: str
) -> None:
    ops = [Op(f"f({args}) -> Tensor", (("self", formula),))]
    with pytest.raises(VtgenError, match="the generated backward binds") as info:
        _generate(tmp_path, ops)
    assert info.value.location is not None and info.value.location.line == 2


def test_an_argument_named_grad_no_formula_reads_is_accepted(tmp_path: Path) -> None:
    """PyTorch's own `_pdist_backward(Tensor grad, ...)`: `grad:` keys a formula; none reads it."""
    ops = [Op("f(Tensor grad, Tensor self) -> Tensor", (("grad", "self * 0 + 3"), ("self", "self * 0 + 2")))]
    ns, text = _generate(tmp_path, ops)
    _define(ns, ops, _sum_kernel)
    _load(ns, text)
    assert _grads(ns, "f", 2) == [[3.0] * 3, [2.0] * 3]


# --- items 16, 17: formula text and file names -------------------------------------------------


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("grad * 010", 8.0),
        ("grad * 0x10", 16.0),
        ("grad * 1.5f", 1.5),
        (" + ".join(["grad"] * 220), 220.0),
        (" + ".join(["grad"] * 2000), 2000.0),
        ("(" * 40 + "grad" + ")" * 40 + " * 2", 2.0),
        ("grad * (1 + " * 40 + "1" + ")" * 40, 41.0),
    ],
    ids=["octal", "hex", "float_suffix", "flat_sum_220", "flat_sum_2000", "parens_40", "nested_40"],
)
def test_formula_text_gives_a_module_with_its_cpp_value(tmp_path: Path, formula: str, expected: float) -> None:
    ops = [Op("f(Tensor self) -> Tensor", (("self", formula),))]
    ns, text = _generate(tmp_path, ops)
    _define(ns, ops, _sum_kernel)
    _load(ns, text)
    assert _grads(ns, "f", 1) == [[expected] * 3]


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ('grad * self.new_full({1}, "a\nb")', "a string literal cannot hold a line break"),
        ("grad * (1 + " * 150 + "1" + ")" * 150, "nests more than"),
        ("(" * 5000 + "grad" + ")" * 5000, "nests more than"),
        ("grad * 09", "not an octal number"),
        ("grad * \u0663", "unexpected character"),
        ('grad.div(self, "\\q")', "unknown escape sequence"),
        ("grad * 1e999", "out of the range"),
    ],
    ids=["string_line_break", "nested_150", "parens_5000", "octal_09", "arabic_digit", "escape", "overflow"],
)
def test_formula_text_python_cannot_hold_is_an_error_at_its_line(tmp_path: Path, formula: str, message: str) -> None:
    ops = [Op("f(Tensor self) -> Tensor", (("self", formula),))]
    with pytest.raises(VtgenError, match=message) as info:
        _generate(tmp_path, ops)
    assert info.value.location is not None and info.value.location.line == 2
    assert "(column " in str(info.value)


def test_a_string_literal_is_written_from_its_value(tmp_path: Path) -> None:
    ops = [Op("f(Tensor self) -> Tensor", (("self", 'grad.div(self, "\\"q\\"\\t\\101")'),))]
    _, text = _generate(tmp_path, ops)
    assert """grad.div(self, rounding_mode='"q"\\tA')""" in text  # div's rounding mode: keyword-only in Python


def test_python_that_does_not_compile_is_an_error_at_the_formula_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: the translation of a formula is compiled before anything is written."""
    monkeypatch.setattr(formulas, "translate", lambda node, scope: "grad +")
    ops = [Op("f(Tensor self) -> Tensor", (("self", "grad * 2"),))]
    with pytest.raises(VtgenError, match="does not compile") as info:
        _generate(tmp_path, ops)
    assert info.value.location is not None and info.value.location.line == 2
    assert not (tmp_path / "_autograd.py").exists()


def test_a_formulas_module_named_like_a_keyword_is_refused(tmp_path: Path) -> None:
    ops = [Op("f(Tensor self) -> Tensor", (("self", "grad * 2"),))]
    native, derivatives = _yaml(ops)
    (tmp_path / "nf.yaml").write_text(native)
    (tmp_path / "d.yaml").write_text(derivatives)
    (tmp_path / "import.py").write_text("def helper(g):\n    return g\n")
    inputs = Inputs(str(tmp_path / "nf.yaml"), str(tmp_path / "d.yaml"), None, "kwf")
    with pytest.raises(VtgenError, match="'import' is a Python keyword"):
        write_python_autograd(
            plan_inputs(inputs, load_policy()), str(tmp_path / "_autograd.py"), str(tmp_path / "import.py")
        )


def test_a_line_break_in_the_yaml_file_name_stays_in_a_comment(tmp_path: Path) -> None:
    ops = [Op("f(Tensor self) -> Tensor", (("self", "grad * 2"),))]
    name = 'd\nimport os; os.system("echo INJECTED")\n\u2028x\x0c#.yaml'
    ns, text = _generate(tmp_path, ops, derivatives_name=name)
    assert not any(line.startswith("import os") for line in text.splitlines())
    _define(ns, ops, _sum_kernel)
    _load(ns, text)
    assert _grads(ns, "f", 1) == [[2.0] * 3]


# --- property: any names and formula trees: a right module or an error at the yaml line ----------

_ORDINARY = st.sampled_from(("a", "b", "x", "self", "other", "input", "out_", "from", "lambda", "yield", "match"))
_RESERVED = st.sampled_from(("len", "max", "list", "isinstance", "torch", "math", "ctx", "needs", "layout", "flat"))
_DERIVED = st.sampled_from(("tangents", "lib", "flatten", "torch_", "ctx__", "a_t", "self_p", "lambda_"))
_REFUSED = st.sampled_from(("grads", "grad", "result", "gen", "_flatten", "_lib", "_s_a"))  # where read
_NAMES = st.one_of(_ORDINARY, _RESERVED, _ORDINARY, _DERIVED, _RESERVED, _ORDINARY, _DERIVED, _REFUSED)
_OP_NAMES = st.sampled_from(["foo", "foo_bar", "lib", "flatten", "unflatten", "lambda", "from", "len", "math", "f_2"])
_OVERLOADS = st.sampled_from(["", "", "bar", "Tensor", "out_"])


def _literal() -> st.SearchStrategy[tuple[str, float]]:
    """(C++ spelling, value): decimal, octal, hex, float forms."""
    small = st.integers(min_value=0, max_value=20)
    return st.one_of(
        small.map(lambda n: (str(n), float(n))),
        st.integers(min_value=1, max_value=20).map(lambda n: (f"0{n:o}", float(n))),
        small.map(lambda n: (f"0x{n:X}", float(n))),
        st.sampled_from([("1.5f", 1.5), (".5", 0.5), ("2.", 2.0), ("1e1", 10.0), ("2.5e-1", 0.25)]),
    )


def _trees() -> st.SearchStrategy[Any]:
    """A formula tree; ``("value", i)`` reads the i-th of grad and the op's arguments (modulo their count)."""
    leaf = st.one_of(st.integers(0, 3).map(lambda i: ("value", i)), _literal().map(lambda t: ("lit", *t)))
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*"]), inner, inner).map(lambda t: ("bin", *t)),
            inner.map(lambda t: ("neg", t)),
            inner.map(lambda t: ("paren", t)),
            st.tuples(inner, st.integers(min_value=2, max_value=230)).map(lambda t: ("run", "+", *t)),
        ),
        max_leaves=8,
    )


_TREES = _trees()


def _cpp(tree: Any, values: list[str]) -> str:
    kind = tree[0]
    if kind == "value":
        return values[tree[1] % len(values)]
    if kind == "lit":
        return str(tree[1])
    if kind == "neg":
        return f"-({_cpp(tree[1], values)})"
    if kind == "paren":
        return f"({_cpp(tree[1], values)})"
    if kind == "run":
        return "(" + f" {tree[1]} ".join([f"({_cpp(tree[2], values)})"] * tree[3]) + ")"
    return f"({_cpp(tree[2], values)} {tree[1]} {_cpp(tree[3], values)})"


def _evaluate(tree: Any, env: list[Any]) -> Any:
    kind = tree[0]
    if kind == "value":
        return env[tree[1] % len(env)]
    if kind == "lit":
        return tree[2]
    if kind in ("neg", "paren"):
        inner = _evaluate(tree[1], env)
        return -inner if kind == "neg" else inner
    if kind == "run":
        return _evaluate(tree[2], env) * tree[3]  # a flat sum of one term
    a, b = _evaluate(tree[2], env), _evaluate(tree[3], env)
    return a + b if tree[1] == "+" else a - b if tree[1] == "-" else a * b


Plan = tuple[str, list[str], list[Any]]  # (name.overload, argument names, formula tree of each)


def _draw_op(draw: st.DrawFn, qualified: str, args: list[str]) -> tuple[Op, Plan]:
    trees = [draw(_TREES) for _ in args]
    schema = f"{qualified}({', '.join(f'Tensor {a}' for a in args)}) -> Tensor"
    values = ["grad", *args]
    op = Op(schema, tuple((a, f"grad * {_cpp(t, values)}") for a, t in zip(args, trees, strict=True)))
    return op, (qualified, args, trees)


@st.composite
def _libraries(draw: st.DrawFn) -> tuple[list[Op], list[Plan]]:
    ops: list[Op] = []
    plans: list[Plan] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        name, overload = draw(_OP_NAMES), draw(_OVERLOADS)
        qualified = f"{name}.{overload}" if overload else name
        if qualified in used:
            continue
        used.add(qualified)
        op, plan = _draw_op(draw, qualified, draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True)))
        ops.append(op)
        plans.append(plan)
    return ops, plans


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_libraries())
def test_any_names_and_formulas_give_a_right_module_or_an_error_at_a_yaml_line(
    tmp_path_factory: pytest.TempPathFactory, library: tuple[list[Op], list[Plan]]
) -> None:
    ops, plans = library
    where = tmp_path_factory.mktemp("prop")
    try:
        ns, text = _generate(where, ops)
    except VtgenError as exc:  # refused: at a line of one of the two yaml files
        event(f"refused: {exc.message[:40]}")
        assert exc.location is not None and Path(exc.location.file).name in ("nf.yaml", "d.yaml"), exc
        assert exc.location.line >= 1
        return
    compile(text, "_autograd.py", "exec")
    _define(ns, ops, _sum_kernel)
    _load(ns, text)
    for qualified, args, trees in plans:
        leaves = [torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64) * (i + 1) for i in range(len(args))]
        inputs = [t.clone().requires_grad_() for t in leaves]
        _op(ns, qualified)(*inputs).sum().backward()
        env = [torch.ones(3, dtype=torch.float64), *leaves]  # grad, then the arguments
        for arg, tree, given_input in zip(args, trees, inputs, strict=True):
            expected = env[0] * _evaluate(tree, env)
            assert given_input.grad is not None, (qualified, arg)
            assert torch.allclose(given_input.grad, expected), (qualified, arg, given_input.grad, expected)


# --- the two tiers agree: one C++ build of a few drawn ops -------------------------------------

_KEYWORDS = st.sampled_from(("lambda", "from", "yield", "match"))


@st.composite
def _tier_libraries(draw: st.DrawFn) -> tuple[list[Op], list[Plan]]:
    """``foo.bar`` and ``foo_bar`` of one signature (an argument a Python keyword), then two to four ops
    of the property's names."""
    args = [draw(_KEYWORDS), *draw(st.lists(_NAMES, min_size=0, max_size=2, unique=True))]
    args = list(dict.fromkeys(args))
    drawn = [_draw_op(draw, "foo.bar", args), _draw_op(draw, "foo_bar", args)]
    used = {"foo.bar", "foo_bar"}
    while len(drawn) < draw(st.integers(min_value=4, max_value=6)):
        name, overload = draw(_OP_NAMES), draw(_OVERLOADS)
        qualified = f"{name}.{overload}" if overload else name
        if qualified not in used:
            used.add(qualified)
            drawn.append(_draw_op(draw, qualified, draw(st.lists(_NAMES, min_size=1, max_size=3, unique=True))))
    return [op for op, _ in drawn], [plan for _, plan in drawn]


def _int_overflow(tree: Any) -> bool:
    """A subtree of integer literals alone leaves a C++ ``int`` (Python's integers never overflow)."""
    found: list[int] = []

    def value(t: Any) -> int | None:
        kind = t[0]
        if kind == "value":
            return None
        if kind == "lit":
            return int(t[2]) if t[1].startswith("0x") or t[1].isdigit() else None
        inner = [value(x) for x in t[1:] if isinstance(x, tuple)]
        if any(v is None for v in inner):
            return None
        v = inner[0] or 0
        if kind == "neg":
            v = -v
        elif kind == "run":
            v = v * t[3]
        elif kind == "bin":
            a, b = inner[0] or 0, inner[1] or 0
            v = a + b if t[1] == "+" else a - b if t[1] == "-" else a * b
        found.append(v)
        return v

    value(tree)
    return any(abs(v) >= 2**31 for v in found)


def _reads_an_argument(tree: Any, count: int) -> bool:
    if tree[0] == "value":
        return tree[1] % (count + 1) != 0
    return any(_reads_an_argument(t, count) for t in tree[1:] if isinstance(t, tuple))


def _tier_example(where: Path) -> tuple[list[Op], list[Plan]]:
    """The first drawn library (fixed seed) whose ops both tiers can hold (no name either refuses, no
    ``int`` overflow) and whose formulas read arguments, not only ``grad``."""

    def usable(library: tuple[list[Op], list[Plan]]) -> bool:
        ops, plans = library
        if any(_int_overflow(tree) for _, _, trees in plans for tree in trees):
            return False
        if sum(_reads_an_argument(tree, len(args)) for _, args, trees in plans for tree in trees) < 2:
            return False  # the Node must save inputs, not only scale grad
        attempt = where / f"try{next(_NAMESPACES)}"
        try:
            _generate(attempt, ops)
        except VtgenError:
            return False
        return _generate_classic(attempt / "cpp", "vttiertry", ops)

    chosen = settings(database=None, phases=[Phase.generate], max_examples=500, derandomize=False)
    return find(_tier_libraries(), usable, settings=chosen, random=random.Random(44))


def _generate_classic(where: Path, ns: str, ops: list[Op]) -> bool:
    """``ops`` generated as a classic op library into ``where/out`` (one shard); False if refused."""
    native, derivatives = _yaml(ops)
    where.mkdir(parents=True)
    (where / "nf.yaml").write_text(native)
    (where / "d.yaml").write_text(derivatives)
    inputs = ["--native-functions", str(where / "nf.yaml"), "--derivatives", str(where / "d.yaml")]
    return cli.main(["generate", *inputs, "--namespace", ns, "--out", str(where / "out"), "--shards", "1"]) == 0


def _build_classic(where: Path, ns: str, ops: list[Op]) -> Path:
    """``ops`` generated as a classic op library (C++ Nodes and Autograd kernels, one shard), compiled as one
    unit against the installed torch; the library's path."""
    assert _generate_classic(where, ns, ops)
    unity = where / "out" / "unity.cpp"
    unity.write_text("".join(f'#include "{p.name}"\n' for p in sorted((where / "out").glob("*.cpp"))))
    torch_install, library = locate_torch(), where / f"lib{ns}.so"
    command = [find_compiler(None), "-std=c++17", "-O0", "-shared", "-fPIC", *torch_install.compile_flags()]
    command += [f"-I{where / 'out'}", str(unity), "-o", str(library), *torch_install.link_flags()]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return library


def _tier_values(ns: str, plans: list[Plan]) -> dict[str, list[Any]]:
    """Each op's forward value and the gradient of each input, on the same inputs in every tier."""
    found = {}
    for qualified, args, _ in plans:
        base = torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64)
        inputs = [(base * (i + 1)).requires_grad_() for i in range(len(args))]
        result = _op(ns, qualified)(*inputs)
        result.sum().backward()
        found[qualified] = [result.detach(), *(t.grad for t in inputs)]
    return found


def _disagreeing(ours: dict[str, list[Any]], theirs: dict[str, list[Any]]) -> list[str]:
    def same(a: Any, b: Any) -> bool:
        return a is not None and b is not None and bool(torch.allclose(a, b))

    return [op for op, values in ours.items() if not all(map(same, values, theirs[op]))]


@pytest.mark.slow
def test_the_cpp_nodes_and_the_python_autograd_of_drawn_ops_agree(tmp_path: Path) -> None:
    """One C++ build (~20-30 s) of four to six ops drawn from the property's strategies (a fixed seed:
    the same ops on every run): each op's forward value and gradients through the C++ Node equal those
    through the generated Python autograd of the same yaml, and a Python tier generated from a yaml
    with one formula changed is told apart (so a disagreement cannot pass)."""
    ops, plans = _tier_example(tmp_path)
    assert {"foo.bar", "foo_bar"} <= {q for q, _, _ in plans} and len(ops) >= 4
    cpp_ns = f"vttiercpp{next(_NAMESPACES)}"
    torch.ops.load_library(str(_build_classic(tmp_path / "cpp", cpp_ns, ops)))
    cpu = torch.library.Library(cpp_ns, "IMPL")  # the C++ tier's forward: the same Python kernel as below
    _LIBRARIES.append(cpu)
    for op in ops:
        cpu.impl(op.schema.split("(")[0], _sum_kernel, "CPU")
    cpp = _tier_values(cpp_ns, plans)

    def python_tier(where: Path, tier_ops: list[Op]) -> dict[str, list[Any]]:
        ns, text = _generate(where, tier_ops)
        _define(ns, tier_ops, _sum_kernel)
        _load(ns, text)
        return _tier_values(ns, plans)

    assert _disagreeing(cpp, python_tier(tmp_path / "py", ops)) == []
    (arg, formula), *rest = ops[2].formulas
    planted = [*ops[:2], Op(ops[2].schema, ((arg, f"{formula} + grad"), *rest)), *ops[3:]]
    assert _disagreeing(cpp, python_tier(tmp_path / "planted", planted)) == [plans[2][0]]
