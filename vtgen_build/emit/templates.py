"""Template files: ``${name}`` placeholders, and a missing value is an error, never blank text."""

from __future__ import annotations

import string
from importlib import resources

from ..errors import VtgenError

__all__ = ["render", "template_text"]


def template_text(name: str) -> str:
    return resources.files("vtgen_build").joinpath("templates", name).read_text(encoding="utf-8")


def render(name: str, text: str, values: dict[str, str]) -> str:
    """Fill ``text`` (the template ``name``); every placeholder must have a value."""
    try:
        return string.Template(text).substitute(values)
    except KeyError as exc:
        raise VtgenError(f"template {name}: no value for ${{{exc.args[0]}}}") from None
