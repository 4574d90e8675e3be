"""The C++ standard a target torch's headers need.

PyTorch's headers state their own minimum: ``ATen/ATen.h`` stops with ``#error C++17
or later compatible compiler is required to use ATen.`` behind ``__cplusplus <
201703L`` (2.13).  Releases from 2.14 need C++20.  The default standard of a check
is therefore the headers' own guard when it can be read, else the one the release
in ``torch/version.h`` needs, whichever is newer; else C++17.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..plan.target import release_of_include

__all__ = ["DEFAULT_STD", "default_std", "torch_version"]

DEFAULT_STD = "c++17"
_CXX20_FROM = (2, 14)  # the first torch release whose headers need C++20
_GUARD = re.compile(r"__cplusplus\s*<\s*(\d{6})L")
_STANDARDS = {"201703": "c++17", "202002": "c++20", "202302": "c++23"}


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return ""


def torch_version(include: Path) -> tuple[int, int] | None:
    """(major, minor) from the torch headers at ``include`` (``<torch>/include``), or None.

    The headers are read by ``plan.target.release_of_include``, the one reader of ``torch/version.h``."""
    found = release_of_include(str(include))
    if found is None:
        return None
    major, minor, _ = found[0].split(".")
    return int(major), int(minor)


def default_std(include: Path | None) -> str:
    """The standard to compile with against ``include`` (None: the stub headers)."""
    if include is None:
        return DEFAULT_STD
    found = [_STANDARDS[v] for v in _GUARD.findall(_read(include / "ATen" / "ATen.h")) if v in _STANDARDS]
    version = torch_version(include)
    if version is not None and version >= _CXX20_FROM:
        found.append("c++20")
    return max(found, key=lambda s: int(s[3:]), default=DEFAULT_STD)
