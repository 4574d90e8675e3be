"""The rooms of ``vtgen_build`` and the one rule between them (docs/design/rooms.md).

A module may import its own room and the rooms of *lower* layers, never a room of its own
layer or of a higher one; the package root (``vtgen_build/__init__.py``: the version and
``get_cmake_dir``) is below every room.  Imports are read with ``ast``, wherever they
stand: at module level, inside a function, under ``if TYPE_CHECKING:``.  Every module
belongs to a declared room, and no chain of imports between modules comes back to where
it started.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vtgen_build"

# The layer order, lowest first: the one place it is declared.  A room is a subpackage
# of vtgen_build, or one of the modules left at the package root (the entry points other
# tools name by module path).  Rooms of one layer do not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    # errors, identifier rules, atomic writes, hash-checked state files; the child processes of
    # --gradcheck (they run in another Python: nothing of vtgen_build but their own package)
    ("base", "gradcheck_child"),
    ("inputs",),  # finding the yaml, digests, yaml -> located records
    ("model",),  # frozen records of native functions, schemas, derivatives; C++ API spellings
    ("plan",),  # one frozen KernelPlan per op; the release policy and target
    ("translate",),  # a derivatives.yaml formula -> Python: its tree, translation, reserved names, helpers
    ("emit", "stubs"),  # plans -> C++ text; reading generated text back; stub ATen declarations
    (
        "engine",
        "revisions",
        "compile",
        "worker",
    ),  # generate (incremental, caches, no-op record); git; compiler; warm worker
    ("check", "torchlib"),  # the compile check; building against a real torch
    ("gradcheck",),  # gradchecking the generated formulas
    ("diagnostics",),  # one record and its output formats
    ("setuptools_hook", "linkcheck"),  # build-system integrations: setuptools, CMake's link launcher
    ("cli",),  # the command line and its no-op fast path
    ("__main__", "lintrunner", "precommit"),  # entry points around the command line
)
LAYER = {room: i for i, rooms in enumerate(LAYERS, start=1) for room in rooms}  # 0: the package root


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every vtgen_build module ``path`` imports, relative imports resolved."""
    package = _module(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "vtgen_build"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module.split(".") if node.module and not node.level else []
            if node.level:
                base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            if base[:1] != ["vtgen_build"]:
                continue
            # `from pkg import name`: name is a module when it is a file or a package of its own
            subs = [".".join([*base, a.name]) for a in node.names if _is_module([*base, a.name])]
            found += [(node.lineno, m) for m in subs] or [(node.lineno, ".".join(base))]
    return found


def _is_module(parts: list[str]) -> bool:
    where = ROOT.joinpath(*parts)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _room(module: str) -> str:
    """The room of a module: its first component under vtgen_build ('' for the package root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_violations() -> list[str]:
    """Every import from a module to a room of its own layer or a higher one."""
    wrong = []
    for module, path in _modules().items():
        room = _room(module)
        for line, target in _imports(path):
            other = _room(target)
            if other in ("", room):
                continue
            if LAYER[other] >= LAYER[room]:
                where = f"{path.relative_to(ROOT)}:{line}"
                wrong.append(
                    f"{where}: {module} (room {room!r}, layer {LAYER[room]}) imports {target} "
                    f"(room {other!r}, layer {LAYER[other]}): a room imports only lower layers"
                )
    return wrong


def test_every_module_is_in_a_declared_room() -> None:
    undeclared = sorted({_room(m) for m in _modules()} - {"", *LAYER})
    assert not undeclared, f"rooms missing from LAYERS (tests/test_layers.py): {undeclared}"


def test_the_package_root_imports_no_room() -> None:
    assert _imports(PACKAGE / "__init__.py") == []


def test_no_room_imports_a_room_of_its_layer_or_above() -> None:
    wrong = layer_violations()
    assert not wrong, "\n".join(wrong)


def test_the_gradcheck_child_package_imports_only_itself() -> None:
    """It runs in the Python whose torch is checked, which may hold no vtgen_build (``launch.py`` loads it
    under a name of its own): not even the package root."""
    child = "vtgen_build.gradcheck_child"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for module, path in _modules().items()
        if module == child or module.startswith(child + ".")
        for line, target in _imports(path)
        if target != child and not target.startswith(child + ".")
    ]
    assert not found, "\n".join(found)
    assert any(t.startswith(child + ".") for t in (t for _, t in _imports(PACKAGE / "gradcheck_child" / "child.py")))


def test_no_import_circle_between_modules() -> None:
    graph = {m: {t for _, t in _imports(p) if t in _modules() and t != m} for m, p in _modules().items()}
    circles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


@pytest.mark.parametrize("room", sorted(r for r in LAYER if (PACKAGE / r).is_dir()))
def test_every_room_says_what_it_holds_and_may_import(room: str) -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / room / "__init__.py").read_text())) or ""
    assert "May import:" in doc, f"vtgen_build/{room}/__init__.py: its docstring says what it may import"


def test_the_design_map_names_every_room() -> None:
    rooms_md = (ROOT / "docs" / "design" / "rooms.md").read_text()
    missing = [room for room in LAYER if f"`{room}" not in rooms_md]
    assert not missing, f"docs/design/rooms.md does not name: {missing}"


def test_the_translator_is_used_through_its_public_api() -> None:
    """Its users (emit's Python autograd and autocast, the gradcheck tiers) import ``vtgen_build.translate``,
    the names its ``__all__`` lists, never one of its modules."""
    room = "vtgen_build.translate"
    inside = [
        f"{path.relative_to(ROOT)}:{line}: {target}"
        for module, path in _modules().items()
        if _room(module) != "translate"
        for line, target in _imports(path)
        if target.startswith(room + ".")
    ]
    assert not inside, "\n".join(inside)
    tree = ast.parse((PACKAGE / "translate" / "__init__.py").read_text())
    listed = next(n for n in tree.body if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "__all__")
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert set(ast.literal_eval(listed.value)) == imported - {"annotations"}


def test_every_child_command_line_is_built_by_the_child_packages_command() -> None:
    """The parent spells a gradcheck child's command line in one place (``gradcheck_child.command``): no
    module outside the child package names its launcher script, and the command is what the parent calls."""
    named, calls = [], 0
    for module, path in _modules().items():
        if _room(module) == "gradcheck_child":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "LAUNCH":
                named.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            calls += (
                isinstance(node, ast.Attribute)
                and node.attr == "command"
                and ast.unparse(node.value) == "child_package"
            )
    assert not named, "a child command line built by hand:\n" + "\n".join(named)
    assert calls >= 6  # OpInfo, reach, schema samples, schemas, reference, the Python tier
