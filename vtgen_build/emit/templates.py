"""Template files: ``${name}`` placeholders, and a missing value is an error, never blank text."""

from __future__ import annotations

import os
import string

from ..base.errors import VtgenError

__all__ = ["render", "template_text"]


_TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")


def template_text(name: str) -> str:
    """A template file of the package (a plain file: the generator digests and stats them too)."""
    with open(os.path.join(_TEMPLATES, name), encoding="utf-8") as handle:
        return handle.read()


def render(name: str, text: str, values: dict[str, str]) -> str:
    """Fill ``text`` (the template ``name``); every placeholder must have a value."""
    try:
        return string.Template(text).substitute(values)
    except KeyError as exc:
        raise VtgenError(f"template {name}: no value for ${{{exc.args[0]}}}") from None
