"""Operator names that get special treatment, per PyTorch release.

PyTorch hand-maintains lists of operators its autograd codegen treats
specially (manually registered kernels, ops that need no derivative, the
complex-autograd allowlist, view functions, ...).  They are facts about
PyTorch, kept as data, one file per supported release
(``data/pytorch_policy.yaml`` for 2.13, ``data/pytorch_policy_<release>.yaml``
for later ones); an op library of your own simply matches none of them.

When ``--pytorch-root`` names a torchgen package or a PyTorch checkout, the lists are
read from that release's own generator sources instead, parsed as data with
:mod:`ast` (the sources are never imported nor executed), so a checkout newer than
our data still gets its own lists.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import Location, VtgenError

__all__ = [
    "DEFAULT_RELEASE",
    "POLICY_LISTS",
    "SUPPORTED_RELEASES",
    "Policy",
    "fires_node_creation_hooks",
    "load_policy",
    "policy_for",
    "policy_source_files",
    "read_policy_sources",
]

#: Releases whose semantics (and lists) vtgen_build knows, oldest first.
SUPPORTED_RELEASES = ("2.13", "2.14")
DEFAULT_RELEASE = "2.13"
#: From this release on, a kernel hands the Node it created to torch's node-creation hooks, once the
#: Node is fully populated (for an in-place op: the one ``rebase_history`` attaches).
NODE_CREATION_HOOKS_SINCE = "2.14"


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def fires_node_creation_hooks(release: str) -> bool:
    """Whether code built for the supported ``release`` fires node-creation hooks."""
    return _release_key(release) >= _release_key(NODE_CREATION_HOOKS_SINCE)


@dataclass(frozen=True)
class Policy:
    manual_backend: frozenset[str]
    manual_autograd_and_tracer: frozenset[str]
    dont_require_derivative: frozenset[str]
    gradient_implemented_for_complex: frozenset[str]
    reset_grad_accumulator: frozenset[str]
    dont_enforce_same_tensor_impl_or_storage: frozenset[str]
    dont_enforce_tensor_impl_use_count: frozenset[str]
    dont_enforce_storage_impl_use_count: frozenset[str]
    returns_views_of_input: frozenset[str]
    foreach_with_inplace_ref: frozenset[str]
    foreach_with_tensor_overload: frozenset[str]
    foreach_skip_argument_len_check: frozenset[str]
    view_functions_with_metadata_change: frozenset[str]  # replayed by their view function, never as_strided
    pytorch_tags: frozenset[str]  # the at::Tag enum of the torch the output is built for
    view_functions: tuple[tuple[str, str], ...]
    source: str = "built-in"  # where the lists were read, as `inspect` reports it

    @property
    def manual_autograd(self) -> frozenset[str]:
        """Ops whose Autograd kernel is written by hand (never generated nor registered)."""
        return self.manual_backend | self.manual_autograd_and_tracer

    def view_of(self, base_name: str) -> str | None:
        """The argument a view op's output aliases, if ``base_name`` is a view op."""
        for name, arg in self.view_functions:
            if name == base_name:
                return arg
        return "self" if base_name in self.returns_views_of_input else None

    def debug_alias(self, base_name: str) -> str | None:
        """The input a view's output shares storage with, as debug builds check it."""
        if base_name == "_unsafe_view":
            return "self"
        return next((arg for name, arg in self.view_functions if name == base_name), None)


_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
POLICY_LISTS = tuple(f for f in Policy.__dataclass_fields__ if f not in ("view_functions", "source"))


def _data_file(release: str) -> str:
    name = "pytorch_policy.yaml" if release == DEFAULT_RELEASE else f"pytorch_policy_{release}.yaml"
    return os.path.join(_DATA, name)


def load_policy(text: str | None = None, *, release: str = DEFAULT_RELEASE) -> Policy:
    """The built-in policy of ``release``, or one read from ``text``."""
    source = "text"
    if text is None:
        if release not in SUPPORTED_RELEASES:
            raise VtgenError(f"no built-in policy for PyTorch {release} (known: {', '.join(SUPPORTED_RELEASES)})")
        path = _data_file(release)
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        source = f"built-in lists of PyTorch {release} ({os.path.basename(path)})"
    import yaml  # here: a command that reads no lists (a no-op run) does not load it

    raw = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    views = raw.pop("view_functions", {}) or {}
    lists = {key: frozenset(raw.get(key) or ()) for key in POLICY_LISTS}
    return Policy(**lists, view_functions=tuple(sorted(views.items())), source=source)


# -- reading a release's own generator sources --------------------------------------------------

# policy field -> (generator module, the module-level name holding the list)
_SOURCE_NAMES = {
    "manual_backend": ("gen_trace_type", "MANUAL_BACKEND"),
    "manual_autograd_and_tracer": ("gen_trace_type", "MANUAL_AUTOGRAD_AND_TRACER"),
    "dont_require_derivative": ("gen_variable_type", "DONT_REQUIRE_DERIVATIVE"),
    "gradient_implemented_for_complex": ("gen_variable_type", "GRADIENT_IMPLEMENTED_FOR_COMPLEX"),
    "reset_grad_accumulator": ("gen_variable_type", "RESET_GRAD_ACCUMULATOR"),
    "dont_enforce_same_tensor_impl_or_storage": ("gen_variable_type", "DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE"),
    "dont_enforce_tensor_impl_use_count": ("gen_variable_type", "DONT_ENFORCE_TENSOR_IMPL_USE_COUNT"),
    "dont_enforce_storage_impl_use_count": ("gen_variable_type", "DONT_ENFORCE_STORAGE_IMPL_USE_COUNT"),
    "returns_views_of_input": ("gen_inplace_or_view_type", "RETURNS_VIEWS_OF_INPUT"),
    "view_functions_with_metadata_change": ("gen_inplace_or_view_type", "VIEW_FUNCTIONS_WITH_METADATA_CHANGE"),
    "view_functions": ("gen_inplace_or_view_type", "VIEW_FUNCTIONS"),
    "foreach_with_inplace_ref": ("api_autograd", "_foreach_with_inplace_ref"),
    "foreach_with_tensor_overload": ("api_autograd", "_foreach_with_tensor_overload"),
    "foreach_skip_argument_len_check": ("api_autograd", "_skip_argument_len_check"),
}

# where each generator module lives: in a PyTorch checkout, in a torchgen package, above one
_MODULE_PATHS = {
    "gen_trace_type": ("tools/autograd/gen_trace_type.py", "packaged/autograd/gen_trace_type.py"),
    "gen_variable_type": ("tools/autograd/gen_variable_type.py", "packaged/autograd/gen_variable_type.py"),
    "gen_inplace_or_view_type": (
        "tools/autograd/gen_inplace_or_view_type.py",
        "packaged/autograd/gen_inplace_or_view_type.py",
    ),
    "api_autograd": ("torchgen/api/autograd.py", "api/autograd.py"),
}


def _module_path(root: Path, module: str) -> Path | None:
    checkout, package = _MODULE_PATHS[module]
    for candidate in (root / checkout, root / package, root / "torchgen" / package):
        if candidate.is_file():
            return candidate
    return None


def policy_source_files(root: str) -> list[str]:
    """Every path whose content :func:`read_policy_sources` reads (or would read) under ``root``."""
    base = Path(root)
    paths = [p for m, (c, pkg) in _MODULE_PATHS.items() for p in (base / c, base / pkg, base / "torchgen" / pkg)]
    return [str(p) for p in paths] + [str(base / rel) for rel in _TAGS_PATHS]


def read_policy_sources(root: str) -> Policy | None:
    """The lists of the release under ``root``, parsed from its generator sources (None: no sources)."""
    base = Path(root)
    found = {m: _module_path(base, m) for m in _MODULE_PATHS}
    if any(p is None for p in found.values()):
        return None
    values: dict[str, dict[str, object]] = {}
    for module, path in found.items():
        assert path is not None
        values[module] = _module_values(path, frozenset(n for m, n in _SOURCE_NAMES.values() if m == module))
    fields: dict[str, object] = {}
    for field, (module, name) in _SOURCE_NAMES.items():
        value = values[module].get(name)
        path = found[module]
        if field == "view_functions":
            if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
                raise VtgenError(f"{path}: cannot read {name} as a dict of names")
            fields[field] = tuple(sorted((str(k), str(v)) for k, v in value.items()))
        elif isinstance(value, set | frozenset | list | tuple) and all(isinstance(v, str) for v in value):
            fields[field] = frozenset(str(v) for v in value)
        else:
            raise VtgenError(f"{path}: cannot read {name} as a set of names")
    fields["pytorch_tags"] = _read_tags(base)
    return Policy(**fields, source=f"parsed from the generator sources under {root}")  # type: ignore[arg-type]


_TAGS_PATHS = (
    "aten/src/ATen/native/tags.yaml",
    "packaged/ATen/native/tags.yaml",
    "torchgen/packaged/ATen/native/tags.yaml",
)


def _read_tags(root: Path) -> frozenset[str]:
    """The ``at::Tag`` names the release declares (its tags.yaml), or none when it has no tags.yaml."""
    import yaml

    for rel in _TAGS_PATHS:
        path = root / rel
        if path.is_file():
            try:
                loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
                entries = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
            except (OSError, yaml.YAMLError) as e:
                raise VtgenError(f"{path}: cannot read the tags: {e}") from None
            if not isinstance(entries, list):
                raise VtgenError(f"{path}: expected a list of tag entries")
            return frozenset(str(e["tag"]) for e in entries if isinstance(e, dict) and "tag" in e)
    return frozenset()


def policy_for(pytorch_root: str | None, release: str) -> Policy:
    """The lists of ``pytorch_root``'s own sources when it has them, else the built-in ``release``'s."""
    if pytorch_root:
        parsed = read_policy_sources(pytorch_root)
        if parsed is not None:
            return parsed
    return load_policy(release=release)


class _Unknown(Exception):
    """An expression that is not plain data over names already known."""


def _module_values(path: Path, tracked: frozenset[str] = frozenset()) -> dict[str, object]:
    """Module-level names bound to plain data (sets, lists, dicts of strings), in statement order.

    Besides assignments, the few statements PyTorch uses to extend a list are followed:
    ``NAME.update(expr)`` and ``for k in NAME: OTHER[k] = "constant"``.  A statement that changes
    a ``tracked`` name (one of the lists we read) and is not followed is an error at its line:
    skipping it would leave that list silently partial.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, ValueError) as e:
        raise VtgenError(f"{path}: cannot parse: {e}") from None
    env: dict[str, object] = {}
    unknown: dict[str, int] = {}  # tracked name -> the line of the last statement changing it we could not follow
    for stmt in tree.body:
        try:
            followed = _follow(stmt, env)
        except (_Unknown, TypeError):  # not plain data (e.g. unhashable items)
            followed = False
        for name in _changed_names(stmt) & tracked:
            if not followed:
                unknown[name] = stmt.lineno
                env.pop(name, None)  # its value is no longer known: nothing may extend a stale one
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                unknown.pop(name, None)  # bound afresh to a value we know
    if unknown:
        name, line = min(unknown.items(), key=lambda item: item[1])
        raise VtgenError(
            f"cannot evaluate this statement, which changes {name} (a list vtgen_build reads from the "
            "generator sources): the list would be incomplete; give --torch-version without "
            "--pytorch-root's sources, or report this form",
            Location(str(path), line),
        )
    return env


def _changed_names(stmt: ast.stmt) -> set[str]:
    """Names a module-level statement may bind or change (functions and classes change nothing here)."""
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Import | ast.ImportFrom):
        return set()
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.value.id if isinstance(node.value, ast.Name) else "")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            names.add("" if node.func.attr in _READING_METHODS else node.func.value.id)
    return names - {""}


_READING_METHODS = frozenset({"copy", "keys", "values", "items", "union", "get", "difference", "intersection"})


def _follow(stmt: ast.stmt, env: dict[str, object]) -> bool:
    """Apply ``stmt`` to ``env``; False when it is not a statement of plain data we follow."""
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        value = _value(stmt.value, env)
        env.update((t.id, value) for t in stmt.targets if isinstance(t, ast.Name))
        return True
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        env[stmt.target.id] = _value(stmt.value, env)
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "update" and isinstance(func.value, ast.Name):
            target = env.get(func.value.id)
            added = _value(call.args[0], env) if len(call.args) == 1 else None
            if isinstance(target, set):
                target.update(_iterable(added))
                return True
            if isinstance(target, dict) and isinstance(added, dict):
                target.update(added)
                return True
        return False
    if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Name) and len(stmt.body) == 1:
        return _follow_loop(stmt, env)
    return False


def _follow_loop(stmt: ast.For, env: dict[str, object]) -> bool:
    (body,) = stmt.body
    assert isinstance(stmt.target, ast.Name)
    if not (isinstance(body, ast.Assign) and len(body.targets) == 1 and isinstance(body.targets[0], ast.Subscript)):
        return False
    sub = body.targets[0]
    if not (isinstance(sub.value, ast.Name) and isinstance(sub.slice, ast.Name) and sub.slice.id == stmt.target.id):
        return False
    target, items, value = env.get(sub.value.id), _value(stmt.iter, env), _value(body.value, env)
    if isinstance(target, dict) and isinstance(items, set | list | tuple | frozenset):
        target.update((item, value) for item in items)
        return True
    return False


def _value(node: ast.expr, env: dict[str, object]) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise _Unknown
        value = env[node.id]
        return value.copy() if isinstance(value, set | dict | list) else value
    if isinstance(node, ast.Set | ast.List | ast.Tuple):
        items: list[object] = []
        for elt in node.elts:
            if isinstance(elt, ast.Starred):
                items.extend(_iterable(_value(elt.value, env)))
            else:
                items.append(_value(elt, env))
        return set(items) if isinstance(node, ast.Set) else items
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_value(k, env): _value(v, env) for k, v in zip(node.keys, node.values, strict=True) if k is not None}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return set(_iterable(_value(node.left, env))) | set(_iterable(_value(node.right, env)))
    if isinstance(node, ast.Call):
        return _call(node, env)
    raise _Unknown


def _call(node: ast.Call, env: dict[str, object]) -> object:
    args = [_value(a, env) for a in node.args]
    if node.keywords:
        raise _Unknown
    if isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset", "list", "tuple") and len(args) <= 1:
        return set(_iterable(args[0])) if args else set()
    if isinstance(node.func, ast.Attribute):
        owner = _value(node.func.value, env)
        if node.func.attr == "keys" and isinstance(owner, dict) and not args:
            return set(owner)
        if node.func.attr == "union" and isinstance(owner, set):
            return owner.union(*(_iterable(a) for a in args))
    raise _Unknown


def _iterable(value: object) -> list[object]:
    if isinstance(value, set | frozenset | list | tuple | dict):
        return list(value)
    raise _Unknown
