"""Cached virtual environments holding one PyTorch release each, for the stable-ABI release matrix.

    python tools/torch_envs.py [--root DIR] [--current-ok] VERSION...

prints ``VERSION PYTHON`` per release: the interpreter of ``DIR/torch-<VERSION>`` (default
``$VTGEN_TORCH_ENVS``, else ``$XDG_CACHE_HOME/vtgen_build/envs``, i.e. ``~/.cache/...``).  An
environment is verified before use (its python imports torch and reports VERSION); a missing or
damaged one is (re)built: ``python -m venv DIR/torch-<VERSION>.partial``, ``pip install
torch==VERSION numpy expecttest`` (the CUDA wheels of the index run on a CPU-only machine with their
dependencies, ~5 GB each), verified, then renamed into place, so a killed run leaves no half
environment.  ``--current-ok``: a release equal to the running interpreter's torch is that
interpreter (nothing installed).  A lock file serialises two runs on one root.  The tests never
modify these environments: they install what they test with ``pip install --target`` elsewhere.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["default_root", "ensure", "installed_version"]

EXTRAS = ("numpy", "expecttest")  # what torch.library.opcheck and torch.compile import besides torch


def default_root() -> Path:
    named = os.environ.get("VTGEN_TORCH_ENVS")
    if named:
        return Path(named)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "vtgen_build" / "envs"


def installed_version(python: Path) -> str | None:
    """The torch version ``python`` imports (local suffix dropped), or None when it cannot."""
    if not python.is_file():
        return None
    try:
        out = subprocess.run(
            [str(python), "-c", "import torch; print(torch.__version__)"],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[-1].split("+")[0] if out.returncode == 0 and lines else None


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(env: Path, version: str) -> None:
    partial = env.with_name(env.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(partial)], check=True)
    pip = [str(partial / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, f"torch=={version}", *EXTRAS], check=True)
    found = installed_version(partial / "bin" / "python")
    if found != version:
        raise SystemExit(f"torch_envs: {partial} imports torch {found}, not {version}")
    shutil.rmtree(env, ignore_errors=True)
    os.replace(partial, env)


def ensure(version: str, root: Path, current_ok: bool = False) -> tuple[Path, float]:
    """The interpreter of a verified environment with torch ``version``, and the seconds spent installing."""
    if current_ok and installed_version(Path(sys.executable)) == version:
        return Path(sys.executable), 0.0
    env = root / f"torch-{version}"
    python = env / "bin" / "python"
    with _locked(root):
        if installed_version(python) == version:
            return python, 0.0
        if env.exists():
            print(f"torch_envs: {env} is damaged (does not import torch {version}); rebuilding", file=sys.stderr)
        start = time.perf_counter()
        _build(env, version)
        return python, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", metavar="VERSION")
    parser.add_argument("--root", type=Path, default=None, help="where the environments live")
    parser.add_argument("--current-ok", action="store_true", help="use the running interpreter for its own torch")
    args = parser.parse_args(argv)
    root = args.root or default_root()
    for version in args.versions:
        python, seconds = ensure(version, root, args.current_ok)
        if seconds:
            print(f"torch_envs: installed torch {version} in {seconds:.0f} s", file=sys.stderr)
        print(version, python)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
