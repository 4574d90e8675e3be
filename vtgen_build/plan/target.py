"""The PyTorch release generated code is built for, and where that answer came from.

Generated kernels and Nodes follow the semantics of the torch they are compiled
against (2.14 fires node-creation hooks, for one).  The release comes from, in
order: an explicit ``--torch-version``; the ``torch/version.h`` of
``--torch-include``; the torch package (``torch/version.py``) beside the
torchgen package ``--pytorch-root`` names, or a checkout's ``version.txt``; the release
whose operator lists ``--pytorch-root``'s generator sources hold; for a setuptools build, the
torch installed in its environment (its metadata); else the default release (with a warning when
``--pytorch-root`` was given).  A command resolves it once (``resolve_target``) and hands the
``Target`` down; ``check --gradcheck`` then builds for the torch that runs it (``running_target``).
Files are read as text, never imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from ..base.errors import VtgenError
from .policy import DEFAULT_RELEASE, SUPPORTED_RELEASES, load_policy, read_policy_sources

__all__ = [
    "DEFAULT_TARGET",
    "Target",
    "release_of_include",
    "release_of_root",
    "resolve_target",
    "running_target",
    "supported_release",
]


@dataclass(frozen=True)
class Target:
    release: str  # a supported release, e.g. "2.14"
    found: str  # the version as found, e.g. "2.14.1+cu130"
    source: str  # where: "--torch-version", a file path, the generator sources, or "default"
    warning: str | None = None  # set when the release is a guess the user should confirm


DEFAULT_TARGET = Target(DEFAULT_RELEASE, DEFAULT_RELEASE, "default")  # no option and no file names one


_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?(?:[+.\-a-z0-9]*)$", re.I)


def supported_release(version: str, source: str) -> str:
    """The supported release whose semantics ``version`` gets: the newest one not after it."""
    m = _VERSION.match(version.strip())
    if m is None:
        raise VtgenError(f"{source}: '{version}' is not a PyTorch version (e.g. 2.14 or 2.14.1)")
    wanted = (int(m.group(1)), int(m.group(2)))
    known = [r for r in SUPPORTED_RELEASES if tuple(map(int, r.split("."))) <= wanted]
    if not known:
        raise VtgenError(f"{source}: PyTorch {version} is older than every supported release ({SUPPORTED_RELEASES[0]})")
    return known[-1]


_HEADER_DEFINE = re.compile(r"^\s*#\s*define\s+TORCH_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)\s*$", re.M)
_VERSION_HEADERS = ("torch/headeronly/version.h", "torch/csrc/api/include/torch/version.h", "torch/version.h")


def release_of_include(include: str) -> tuple[str, str] | None:
    """(version ``X.Y.Z``, header) from the ``torch/version.h`` under a torch include directory.

    The one reader of that header: the target release and the compile room's default standard ask it.
    """
    for rel in _VERSION_HEADERS:
        header = Path(include) / rel
        try:
            text = header.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        parts = dict(_HEADER_DEFINE.findall(text))
        if "MAJOR" in parts and "MINOR" in parts:
            return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', '0')}", str(header)
    return None


_PY_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.M)


def release_of_root(root: str) -> tuple[str, str] | None:
    """(version, file) of the PyTorch a ``--pytorch-root`` (torchgen package or checkout) belongs to."""
    base = Path(root)
    for candidate in (base.parent / "torch" / "version.py", base / "torch" / "version.py"):
        try:
            found = _PY_VERSION.search(candidate.read_text(encoding="utf-8"))
        except OSError:
            continue
        if found:
            return found.group(1), str(candidate)
    try:
        return (base / "version.txt").read_text(encoding="utf-8").strip(), str(base / "version.txt")
    except OSError:
        return None


def resolve_target(
    explicit: str | None,
    torch_include: str | None,
    pytorch_root: str | None,
    installed: tuple[str, str] | None = None,
    explicit_source: str = "--torch-version",
) -> Target:
    """The release to generate for (see the module docstring for the order).  ``installed``: (version,
    where) of a torch a build environment holds (the setuptools hook reads its metadata), asked after the
    files; ``explicit_source`` names the option ``explicit`` came from."""
    if explicit:
        return Target(supported_release(explicit, explicit_source), explicit, explicit_source)
    for found in (
        release_of_include(torch_include) if torch_include else None,
        release_of_root(pytorch_root) if pytorch_root else None,
        installed,
    ):
        if found is not None:
            version, where = found
            return Target(supported_release(version, where), version, where)
    if pytorch_root:
        return _release_of_sources(pytorch_root)
    return DEFAULT_TARGET


def running_target(target: Target, version: str, python: str) -> Target:
    """The release of the torch that runs the code (``check --gradcheck`` loads its library into it): that
    torch's own version decides.  ``target`` is what the command resolved; an explicit ``--torch-version``
    naming another release is an error (a release read from files only differs, said by the caller)."""
    running = Target(supported_release(version, f"the torch of {python}"), version, f"the torch of {python}")
    if target.source == "--torch-version" and target.release != running.release:
        raise VtgenError(
            f"--torch-version {target.found}: --gradcheck builds for the torch that runs the checks "
            f"({version}, of {python}); leave the option out or give --python a torch of that release"
        )
    return running


def _release_of_sources(root: str) -> Target:
    """No version file: the release whose operator lists the generator sources under ``root`` hold,
    or the default release with a warning when they match none."""
    parsed = read_policy_sources(root)
    if parsed is not None:
        for release in reversed(SUPPORTED_RELEASES):
            if replace(parsed, source="") == replace(load_policy(release=release), source=""):
                return Target(release, release, f"the generator sources under {root} (PyTorch {release}'s lists)")
    sources = "no generator sources" if parsed is None else "generator sources matching no known release"
    warning = (
        f"--pytorch-root {root}: no torch/version.py or version.txt, and {sources} "
        f"({', '.join(SUPPORTED_RELEASES)}): generating for PyTorch {DEFAULT_RELEASE}; say which with "
        "--torch-version"
    )
    return Target(DEFAULT_RELEASE, DEFAULT_RELEASE, "default (a guess)", warning)
