"""The typed Python API cannot break its package (issue 35, items 9-11).

* The module's own globals (its imports, the ``torch.ops.<ns>`` handles) never collide with an op
  or a parameter: ops named ``torch``, ``cast``, ``overload``, ``Tensor``, ``_ops_<ns>`` work; a real
  torch process imports the module and calls every function.
* The generated module is valid Python or the yaml line is an error: a property test draws op
  libraries with hostile names and defaults, compiles each module, runs it against a recording
  ``torch`` and checks that every call reaches its op with its arguments.
* ``--python-api DIR`` refuses to replace a file it did not write, or to write through a symbolic
  link, and repairs a hand edit of the file it wrote.
"""

from __future__ import annotations

import ast
import builtins
import importlib.util
import inspect
import json
import keyword
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vtgen_build.base.errors import VtgenError
from vtgen_build.emit.python_api import ApiOp, python_api_module
from vtgen_build.inputs.load import load_text
from vtgen_build.model.native import NativeFunction

from .conftest import CliRunner, YamlWriter

# -- item 9: ops named like the module's own globals ----------------------------------------------
HOSTILE = """\
- func: torch(Tensor self, MemoryFormat memory_format=contiguous_format, Layout layout=strided) -> Tensor
- func: Tensor(Tensor self) -> Tensor
- func: str(Tensor self, str mode="torch") -> Tensor
- func: cast(Tensor self, int from, int from_, *, int torch=1, int cast=2, int lambda=3) -> Tensor
- func: overload(Tensor self) -> Tensor
- func: overload.two(Tensor self, Tensor other) -> Tensor
- func: _ops_hostile(Tensor self) -> Tensor
- func: Optional(Tensor? self) -> Tensor[]
- func: annotations(Tensor self, float x=0.5) -> Tensor
- func: builtins(Tensor self) -> ()
- func: Number(Tensor self, Scalar alpha=1) -> Tensor
- func: Any(Tensor self) -> Tensor
- func: Sequence(Tensor[] tensors) -> Tensor
- func: Union(Tensor self, SymInt n) -> Tensor
- func: list(Tensor self) -> (Tensor, Tensor)
"""

_HOSTILE_CALLS = """
import sys, typing
import torch
sys.path.insert(0, sys.argv[1])
schemas = [line[len("- func: "):] for line in open(sys.argv[2]).read().splitlines()]
seen = {}
lib = torch.library.Library("hostile", "DEF")


def kernel(name, schema):
    returns = schema.rsplit(" -> ", 1)[1]
    def impl(*args, **kwargs):
        seen[name] = (args, kwargs)
        x = torch.ones(1)
        return {"Tensor": x, "Tensor[]": [x], "()": None, "(Tensor, Tensor)": (x, x)}[returns]
    return impl


for schema in schemas:
    lib.define(schema)
    name = schema.split("(", 1)[0]
    lib.impl(name, kernel(name, schema), "CompositeExplicitAutograd")

import api

# (torch leaves out of a Python kernel's call the arguments that equal their default)
x = torch.zeros(2)
api.torch(x); api.torch(x, torch.preserve_format, torch.sparse_coo)
assert seen["torch"][0][1:] == (torch.preserve_format, torch.sparse_coo), seen["torch"]
api.Tensor(x); assert "Tensor" in seen
api.str(x); api.str(x, "other"); assert seen["str"][0][1] == "other"
api.cast(x, 5, 6, torch=7, lambda_=9); assert seen["cast"] == ((x, 5, 6), {"torch": 7, "lambda": 9}), seen["cast"]
api.overload(x); api.overload(x, x); assert "overload" in seen and "overload.two" in seen
api._ops_hostile(x); assert "_ops_hostile" in seen
assert len(api.Optional(None)) == 1
api.annotations(x, 1.5); assert seen["annotations"][0][1] == 1.5
assert api.builtins(x) is None and "builtins" in seen
api.Number(x); api.Any(x); api.Sequence([x, x]); api.Union(x, 3); first, second = api.list(x)
assert set(seen) == {s.split("(", 1)[0] for s in schemas}, sorted(seen)
for name in api.__all__:  # every annotation resolves in the module, to torch's types
    hints = typing.get_type_hints(getattr(api, name))
    assert all(v is not None for v in hints.values()), (name, hints)
assert typing.get_type_hints(api.cast)["self"] is torch.Tensor
assert typing.get_type_hints(api.str)["mode"] is str
print("HOSTILE-OK")
"""


def _module_bindings(text: str) -> set[str]:
    """The names the module binds at its top level other than its functions."""
    names: set[str] = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names - {"annotations", "__all__"}


def _parameters(text: str) -> set[str]:
    return {a.arg for node in ast.walk(ast.parse(text)) if isinstance(node, ast.FunctionDef) for a in node.args.args
            + node.args.kwonlyargs}  # fmt: skip


def test_ops_named_like_the_modules_globals(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    native = tmp_yaml("nf.yaml", HOSTILE)
    result = run_cli("generate", "--native-functions", native, "--derivatives", tmp_yaml("d.yaml", ""), "--namespace",
                     "hostile", "--out", str(tmp_path / "out"), "--python-api", str(tmp_path / "api"))  # fmt: skip
    assert result.code == 0, result.err
    text = (tmp_path / "api" / "__init__.py").read_text()
    ops = {line.split("(", 1)[0][len("- func: ") :].split(".")[0] for line in HOSTILE.splitlines()}
    assert not _module_bindings(text) & (ops | _parameters(text)), _module_bindings(text) & ops
    assert "import torch as _torch" in text and "from typing import Any as _Any" in text
    assert "__ops_hostile = _torch.ops.hostile" in text
    cast = "def cast(self: _Tensor, from__: int, from_: int, *, torch: int = 1, cast: int = 2, lambda_: int = 3)"
    assert cast in text
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_HOSTILE_CALLS), str(tmp_path), native],
                          capture_output=True, text=True, check=False, timeout=300,
                          env={**os.environ, "PYTHONPATH": ""})  # fmt: skip
    assert done.returncode == 0 and "HOSTILE-OK" in done.stdout, done.stdout + done.stderr[-3000:]


# -- item 10: valid Python or an error at the yaml line ----------------------------------------------
OCTAL = "(an integer with a leading zero: octal in C, an error in Python)"
AFTER = "(no default) after 'a' (a default)"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ("f(Tensor self, int dim=010) -> Tensor", f"the default '010' of 'dim' has no Python spelling {OCTAL}"),
        ("f(Tensor self, int[] dims=[1,010]) -> Tensor", "the default '[1,010]' of 'dims' has no Python spelling"),
        ("f(Tensor self, int a=1, int b) -> Tensor", f"cannot spell the positional argument 'b' {AFTER}"),
        ("__getattr__(Tensor self) -> Tensor", "'__getattr__' cannot be a Python function name"),
        ("__all__(Tensor self) -> Tensor", "'__all__' cannot be a Python function name"),
    ],
)
def test_what_python_cannot_spell_is_an_error_at_the_line(schema: str, message: str) -> None:
    with pytest.raises(VtgenError) as raised:
        _module([f"- func: g(Tensor self) -> Tensor\n- func: {schema}\n"])
    assert raised.value.location is not None and raised.value.location.line == 2
    assert message in raised.value.message, raised.value.message


def test_a_renamed_argument_differs_from_every_other_also_in_overload_stubs() -> None:
    text, _ = _module(["- func: f(Tensor self, int from, int from_) -> Tensor\n",
                       "- func: f.two(Tensor self, *, int from_, int from, int from__) -> Tensor\n"])  # fmt: skip
    compile(text, "api.py", "exec")
    assert "@overload\ndef f(self: Tensor, from__: int, from_: int) -> Tensor: ..." in text
    assert "def f(self: Tensor, *, from_: int, from___: int, from__: int) -> Tensor: ..." in text


def test_an_op_named_getattr_leaves_the_builtin_to_an_overload_named_from() -> None:
    text, _ = _module(["- func: getattr(Tensor self) -> Tensor\n", "- func: f.from(Tensor self) -> Tensor\n"])
    assert "import builtins\n" in text and 'builtins.getattr(_ops_hyp.f, "from")(self)' in text


def _module(entries: list[str]) -> tuple[str, list[NativeFunction]]:
    loaded = load_text("".join(entries), "nf.yaml")
    functions = [NativeFunction.parse(e, frozenset(), "hyp") for e in loaded]
    return python_api_module(tuple(ApiOp(f, "Autograd: -.") for f in functions), "hyp"), functions


class _Recorder:
    """``torch.ops``: ``ops.<ns>.<op>(...)`` and ``ops.<ns>.<op>.<overload>(...)`` record their calls."""

    def __init__(self, calls: list[tuple[Any, ...]], path: tuple[str, ...] = ()) -> None:
        self._calls, self._path = calls, path

    def __getattr__(self, name: str) -> _Recorder:
        return _Recorder(self._calls, (*self._path, name))

    def __call__(self, /, *args: object, **kwargs: object) -> object:
        self._calls.append((self._path, args, kwargs))
        return self._calls


def _fake_import(calls: list[tuple[Any, ...]]) -> Callable[..., object]:
    """``__import__`` for the module under test: a recording ``torch``, everything else as usual."""
    torch = types.ModuleType("torch")
    torch.__getattr__ = lambda name: f"torch.{name}"  # type: ignore[method-assign]  # dtypes, layouts
    torch.ops = _Recorder(calls)  # type: ignore[attr-defined]
    torch_types = types.ModuleType("torch.types")
    torch_types.Number = "Number"  # type: ignore[attr-defined]
    fakes = {"torch": torch, "torch.types": torch_types}

    def fake(name: str, *args: Any, **kwargs: Any) -> object:
        return fakes[name] if name in fakes else builtins.__import__(name, *args, **kwargs)

    return fake


NAMES = ["self", "from", "from_", "from__", "lambda", "lambda_", "None", "__debug__", "async", "match", "_", "x",
         "torch", "_torch", "cast", "_cast", "Tensor", "Optional", "str", "list", "builtins", "Any", "_ops_hyp",
         "__ops_hyp", "overload", "Number", "annotations", "args", "kwargs", "getattr"]  # fmt: skip
TYPES = {
    "Tensor": ["None"],
    "Tensor?": ["None"],
    "int": ["0", "7", "-3", "2", "010"],
    "float": ["0.5", "1e-3", ".5", "-2.", "inf", "-inf", "007.5"],
    "str": ['"torch"', '"a\'b"', "'x'"],
    "int[]": ["[]", "[0,1]", "[3]"],
    "ScalarType?": ["None", "float", "long"],
    "Layout": ["strided"],
    "bool": ["True", "False"],
    "SymInt": ["0", "5"],
}


@st.composite
def _argument(draw: st.DrawFn, name: str) -> str:
    ty = draw(st.sampled_from(sorted(TYPES)))
    default = draw(st.none() | st.sampled_from(TYPES[ty]))
    return f"{ty} {name}" + ("" if default is None or (ty == "Tensor" and default == "None") else f"={default}")


@st.composite
def _schema(draw: st.DrawFn, name: str, overload: str) -> str:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=6))
    args = [draw(_argument(n)) for n in names]
    star = draw(st.integers(0, len(args)))
    if draw(st.integers(0, 3)):  # mostly as schemas are written: positional arguments with defaults last
        args[:star] = sorted(args[:star], key=lambda a: "=" in a)
    listed = args[:star] + (["*"] if star < len(args) else []) + args[star:]
    return f"{name}{'.' + overload if overload else ''}({', '.join(listed)}) -> Tensor"


@st.composite
def _library(draw: st.DrawFn) -> list[str]:
    callable_names = [n for n in NAMES if not keyword.iskeyword(n) and n != "__debug__"] + ["f", "__and__", "from"]
    names = draw(st.lists(st.sampled_from(callable_names), unique=True, min_size=1, max_size=5))
    entries = []
    for name in names:
        for overload in draw(st.sampled_from([[""], ["from"], ["", "two"], ["one", "two"]])):
            entries.append(f"- func: {json.dumps(draw(_schema(name, overload)))}\n")
    return entries


@settings(max_examples=200)
@given(_library())
def test_the_module_is_valid_python_and_every_call_reaches_its_op(entries: list[str]) -> None:
    """Any library of these names and defaults: an error at an op's line, or a module that compiles and
    whose every function calls its op (through its overload, or the packet for several) with its arguments."""
    try:
        text, functions = _module(entries)
    except VtgenError as exc:
        assert exc.location is not None and exc.location.file == "nf.yaml", exc.message
        return
    code = compile(text, "api.py", "exec")  # a SyntaxError here is the bug this test is for
    calls: list[tuple[Any, ...]] = []
    fake_builtins = {**vars(builtins), "__import__": _fake_import(calls)}
    namespace: dict[str, Any] = {"__name__": "api", "__builtins__": fake_builtins}
    exec(code, namespace)
    by_name: dict[str, list[NativeFunction]] = {}
    for f in functions:
        by_name.setdefault(f.name.name, []).append(f)
    assert sorted(namespace["__all__"]) == sorted(by_name)
    for name, overloads in by_name.items():
        f = overloads[0]
        values = {a.name: object() for a in f.func.arguments.all}
        schema_args = list(f.func.arguments.all)
        if len(overloads) == 1:
            params = list(inspect.signature(namespace[name]).parameters.values())
            assert len(params) == len(schema_args)
            positional = [values[a.name] for a in f.func.arguments.positional]
            keywords = {p.name: values[a.name] for p, a in zip(params, schema_args, strict=True)
                        if p.kind is inspect.Parameter.KEYWORD_ONLY}  # fmt: skip
            result = namespace[name](*positional, **keywords)
            path, args, kwargs = calls[-1]
            assert path == ("hyp", name, f.name.overload or "default"), (path, text)
            assert args == tuple(positional)
            assert kwargs == {a.name: values[a.name] for a in (*f.func.arguments.kwarg_only, *f.func.arguments.out)}
            assert result is calls
        else:
            assert namespace[name](1, k=2) is calls and calls[-1] == (("hyp", name), (1,), {"k": 2})


# -- item 11: --python-api DIR is the user's package ------------------------------------------------
LIBRARY = "- func: twist(Tensor self, int turns=1) -> Tensor\n"


def _api_run(run_cli: CliRunner, tmp_yaml: YamlWriter, tmp_path: Path, api: Path, *extra: str) -> tuple[int, str]:
    result = run_cli("generate", "--native-functions", tmp_yaml("nf.yaml", LIBRARY), "--derivatives",
                     tmp_yaml("d.yaml", ""), "--namespace", "lib", "--shards", "1", "--out", str(tmp_path / "out"),
                     "--python-api", str(api), *extra)  # fmt: skip
    return result.code, result.out + result.err


@pytest.mark.parametrize(("name", "content"), [("__init__.py", "from .core import *  # my package\n"),
                                               ("py.typed", "partial\n")])  # fmt: skip
def test_a_file_of_the_users_is_not_replaced(
    name: str, content: str, tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    api = tmp_path / "pkg" / "ops"
    api.mkdir(parents=True)
    (api / name).write_text(content)
    code, said = _api_run(run_cli, tmp_yaml, tmp_path, api)
    assert code == 1 and f"--python-api {api}: holds {name}, which vtgen-build did not write" in said, said
    assert "pass --allow-overwrite" in said and (api / name).read_text() == content
    assert not (api / ("py.typed" if name == "__init__.py" else "__init__.py")).exists()  # nothing written
    code, said = _api_run(run_cli, tmp_yaml, tmp_path, api, "--allow-overwrite")
    assert code == 0 and (api / name).read_text() != content, said


def test_nothing_is_written_through_a_symbolic_link(tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = tmp_path / "ops"
    link.symlink_to(elsewhere)
    for extra in ((), ("--allow-overwrite",)):
        code, said = _api_run(run_cli, tmp_yaml, tmp_path, link, *extra)
        assert code == 1 and f"--python-api {link}: a symbolic link (to {elsewhere})" in said, said
        assert list(elsewhere.iterdir()) == []
    api, victim = tmp_path / "real", tmp_path / "victim.py"
    api.mkdir()
    victim.write_text("keep = True\n")
    (api / "__init__.py").symlink_to(victim)
    code, said = _api_run(run_cli, tmp_yaml, tmp_path, api)
    assert code == 1 and "holds __init__.py, which vtgen-build did not write" in said, said
    code, said = _api_run(run_cli, tmp_yaml, tmp_path, api, "--allow-overwrite")
    assert code == 0 and not (api / "__init__.py").is_symlink() and victim.read_text() == "keep = True\n", said


def test_a_hand_edit_of_the_generated_module_is_repaired(
    tmp_yaml: YamlWriter, run_cli: CliRunner, tmp_path: Path
) -> None:
    api = tmp_path / "ops"
    assert _api_run(run_cli, tmp_yaml, tmp_path, api)[0] == 0
    module = api / "__init__.py"
    good = module.read_text()
    module.write_text(good.replace("turns: int = 1", "turns: int = 9"))  # same size: a stat check alone misses it
    code, said = _api_run(run_cli, tmp_yaml, tmp_path, api)
    assert code == 0 and "typed Python API repaired (1 files written)" in said, said
    assert module.read_text() == good
    code, said = _api_run(run_cli, tmp_yaml, tmp_path, api)
    assert code == 0 and "vtgen-build: up to date" in said, said  # and then nothing to do again
    module.unlink()
    assert _api_run(run_cli, tmp_yaml, tmp_path, api)[0] == 0 and module.read_text() == good
