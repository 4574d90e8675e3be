"""The Python autograd of an op library (``generate --python-autograd FILE``): plan, render, write.

``FILE`` (a module inside the library's package, e.g. ``src/mypkg/_autograd.py``) registers the
Autograd kernel of every op of the library that has a derivatives entry (see
``emit/python_autograd.py``).  ``--python-formulas FILE`` names the author's module of helper
functions, which must sit beside it (the generated module imports it relatively); its top-level
functions are read with ``ast``, never imported.  Written atomically and only when changed; the
text depends on the yaml, the policy, those names and the autocast keys only.  ``generate`` keeps
``AUTOGRAD_RECORD`` in ``--out``: where it last wrote the module, the content hash of that text, of
the inputs and settings its run's manifest recorded and of the formulas module it read, and the
autocast keys; a run that finds the yaml up to date and the record verified (``autograd_intact``)
neither loads nor plans the yaml for it.
"""

from __future__ import annotations

import ast
import keyword
import os
from dataclasses import dataclass
from pathlib import Path

from ..base import store
from ..base.errors import Location, VtgenError
from ..base.write import write_atomic
from ..emit.python_autocast import python_autocast
from ..emit.python_autograd import AutogradModule, python_autograd_module
from ..model import Model
from ..plan.autocast import plan_autocast, registered_keys
from ..plan.request import CLI, formulas_problem
from .manifest import inputs_digest
from .planned import RunPlan

__all__ = ["AUTOGRAD_RECORD", "autograd_intact", "autograd_module", "formulas_functions", "write_python_autograd"]

AUTOGRAD_RECORD = ".vtgen-python-autograd"  # in --out: what the module was last written from (``_Record``)
_RECORD_KIND = "python_autograd"
_RECORD_KEYS = ("module", "sha256", "inputs", "formulas", "formulas_sha256", "autocast")


def formulas_functions(path: str) -> frozenset[str]:
    """The public top-level functions of the formulas module at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        tree = ast.parse(text, path)
    except OSError as exc:
        raise VtgenError(f"--python-formulas: cannot read {path}: {exc.strerror}") from None
    except SyntaxError as exc:
        raise VtgenError(f"--python-formulas: {exc.msg}", Location(path, exc.lineno or 1)) from None
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    exported = _exported(tree)
    if exported is not None:  # PyTorch names some helpers with a leading underscore: __all__ says they are public
        return frozenset(functions & exported)
    return frozenset(n for n in functions if not n.startswith("_"))


def _exported(tree: ast.Module) -> frozenset[str] | None:
    """The names a literal ``__all__ = [...]`` lists (None: the module has none)."""
    for node in tree.body:
        named = any(isinstance(t, ast.Name) and t.id == "__all__" for t in getattr(node, "targets", ()))
        if named and isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            items = node.value.elts
            return frozenset(e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return None


def autograd_module(model: Model, formulas: str | None = None, target: str | None = None) -> AutogradModule:
    """What the module is generated from besides the plans (the library: its one namespace)."""
    namespaces = sorted({f.namespace for f in model.native_functions if f.namespace != "aten"})
    if len(namespaces) != 1:
        found = ", ".join(namespaces) or "none"
        raise VtgenError(f"the Python autograd needs one op-library namespace (found: {found}; --namespace?)")
    ns = namespaces[0]
    ops = frozenset(f.name.name for f in model.native_functions if f.namespace == ns)
    module_name, functions = None, frozenset[str]()
    if formulas is not None:
        if target is not None and (problem := formulas_problem(target, formulas, CLI)) is not None:
            raise VtgenError(problem)
        module_name, functions = Path(formulas).stem, formulas_functions(formulas)
        if not module_name.isidentifier() or keyword.iskeyword(module_name):
            why = "a Python keyword" if keyword.iskeyword(module_name) else "not a Python module name"
            raise VtgenError(f"--python-formulas: '{module_name}' is {why} (the generated module imports it)")
    library = tuple(f for f in model.native_functions if f.namespace == ns)
    return AutogradModule(ns, ops, model.derivatives, module_name, functions, library)


def write_python_autograd(
    run: RunPlan,
    path: str,
    formulas: str | None = None,
    *,
    beside: bool = True,
    autocast_backends: tuple[str, ...] = (),
    record_in: str | None = None,
) -> bool:
    """Write the module to ``path`` (when changed) from the run's model and plan; True if it was written.

    ``beside``: check that ``formulas`` sits beside ``path`` (a wheel build writes the module
    elsewhere first and places it beside the formulas module in the wheel).  ``autocast_backends``:
    the backend keys a stable-ABI build registers; the module then also registers the ops' Autocast
    kernels in Python (``emit/python_autocast.py``; a classic build has them in C++: none).  ``record_in``: the
    ``--out`` directory keeping AUTOGRAD_RECORD."""
    model = run.model
    read = _formulas_sha256(formulas)  # before the read: an edit during the run reads as a change next time
    text = python_autograd_module(run.plan.kernels, autograd_module(model, formulas, path if beside else None))
    if autocast_backends:
        functions = model.native_functions
        text += python_autocast(plan_autocast(functions, registered_keys(functions, autocast_backends)))
    written = write_atomic(Path(path), text)
    if record_in is not None:
        record = _Record(os.path.abspath(path), store.sha256_hex(text.encode("utf-8")), inputs_digest(Path(record_in)),
                         _place(formulas), read, autocast_backends)  # fmt: skip
        store.write(Path(record_in) / AUTOGRAD_RECORD, _RECORD_KIND, record.to_json())
    return written


def autograd_intact(path: str, formulas: str | None, autocast_backends: tuple[str, ...], record_in: str) -> bool:
    """Does ``path`` hold exactly what the run that kept ``record_in``'s record wrote there, from the same
    formulas module (by content) and autocast keys?  A missing, damaged or foreign record reads as no."""
    record = _Record.read(Path(record_in) / AUTOGRAD_RECORD)
    if record is None or not record.inputs or Path(path).is_symlink():
        return False
    now = _Record(os.path.abspath(path), record.sha256, inputs_digest(Path(record_in)), _place(formulas),
                  _formulas_sha256(formulas), autocast_backends)  # fmt: skip
    return record == now and store.file_sha256(path) == record.sha256


@dataclass(frozen=True)
class _Record:
    """What the last run wrote the module from: its place and text's SHA-256, the run's inputs and settings
    (``manifest.inputs_digest``), the formulas module's place and SHA-256 (``""``: none) and the autocast keys."""

    module: str
    sha256: str
    inputs: str
    formulas: str
    formulas_sha256: str
    autocast: tuple[str, ...]

    def to_json(self) -> store.JSON:
        return {"module": self.module, "sha256": self.sha256, "inputs": self.inputs, "formulas": self.formulas,
                "formulas_sha256": self.formulas_sha256, "autocast": list(self.autocast)}  # fmt: skip

    @classmethod
    def read(cls, path: Path) -> _Record | None:
        try:
            f = store.obj(store.read(path, _RECORD_KIND), _RECORD_KEYS)
            return cls(store.text(f["module"]), store.text(f["sha256"]), store.text(f["inputs"]),
                       store.text(f["formulas"]), store.text(f["formulas_sha256"]),
                       store.texts(f["autocast"]))  # fmt: skip
        except store.Malformed:
            return None


def _place(formulas: str | None) -> str:
    return os.path.abspath(formulas) if formulas is not None else ""


def _formulas_sha256(formulas: str | None) -> str:
    """The formulas module's content hash ("": none given, "-": unreadable)."""
    if formulas is None:
        return ""
    return store.file_sha256(formulas) or "-"
