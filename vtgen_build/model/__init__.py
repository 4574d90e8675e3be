"""Model layer: frozen records built from the loaded YAML.

Native functions, schemas, derivatives (``load_model`` builds them from ``inputs``), and in
``cpp_api`` their pure translations to C++ API signatures, which ``plan`` and ``emit`` share.

May import: ``base``, ``inputs``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import VtgenError
from ..inputs.files import Inputs
from ..inputs.load import Entry, load_entries
from .derivatives import DerivativeEntry
from .expand import add_generated_variants
from .native import NativeFunction, parse_tags

__all__ = ["Inputs", "Model", "build_model", "load_model"]


@dataclass(frozen=True)
class Model:
    """Everything read from the inputs: native functions (declared + derived) and derivatives."""

    entry_count: int
    native_functions: tuple[NativeFunction, ...]
    derivatives: tuple[DerivativeEntry, ...]
    tags: frozenset[str]


def load_model(inputs: Inputs) -> Model:
    """Read and check the three files."""
    tag_entries = load_entries(inputs.tags) if inputs.tags else ()
    return build_model(
        load_entries(inputs.native_functions), load_entries(inputs.derivatives), tag_entries, inputs.namespace
    )


def build_model(
    native: tuple[Entry, ...], derivatives: tuple[Entry, ...], tags: tuple[Entry, ...], namespace: str = "aten"
) -> Model:
    valid_tags = parse_tags(tags)
    functions = tuple(NativeFunction.parse(e, valid_tags, namespace) for e in native)
    _check_unique((f"{f.namespace}::{f.name}", f.location) for f in functions)
    entries = tuple(DerivativeEntry.parse(e) for e in derivatives)
    _check_unique((str(e.schema), e.location) for e in entries)
    return Model(len(native), add_generated_variants(functions), entries, valid_tags)


def _check_unique(keyed: object) -> None:
    seen: dict[str, object] = {}
    for key, location in keyed:  # type: ignore[attr-defined]
        if key in seen:
            raise VtgenError(f"duplicate entry for '{key}' (first at line {seen[key].line})", location)  # type: ignore[attr-defined]
        seen[key] = location
