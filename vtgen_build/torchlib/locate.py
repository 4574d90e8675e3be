"""Find the torch of a Python interpreter by asking that interpreter (never importing torch here)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError

__all__ = ["TorchInstall", "locate_torch"]

# Run in the child: prints one JSON object and nothing else.
_PROBE = """
import importlib, json, os, torch
missing = []
for name in ("numpy", "expecttest"):  # what PyTorch's OpInfo database imports (--gradcheck)
    try:
        importlib.import_module(name)
    except ImportError:
        missing.append(name)
root = os.path.dirname(torch.__file__)
inc = os.path.join(root, "include")
print(json.dumps({
    "version": torch.__version__,
    "root": root,
    "include_dirs": [inc, os.path.join(inc, "torch", "csrc", "api", "include")],
    "lib_dir": os.path.join(root, "lib"),
    "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
    "missing": missing,
}))
"""


@dataclass(frozen=True)
class TorchInstall:
    python: str
    version: str
    root: Path
    include_dirs: tuple[Path, ...]
    lib_dir: Path
    cxx11_abi: bool
    missing: tuple[str, ...] = ()  # modules the OpInfo checks import that this Python lacks

    @property
    def libraries(self) -> tuple[Path, ...]:
        """The libraries a library of autograd kernels links with."""
        return tuple(self.lib_dir / f"lib{name}.so" for name in ("torch_cpu", "c10", "torch"))

    def compile_flags(self) -> tuple[str, ...]:
        abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(self.cxx11_abi)}"
        return (abi, *(f"-isystem{d}" for d in self.include_dirs))

    def link_flags(self) -> tuple[str, ...]:
        return (f"-L{self.lib_dir}", f"-Wl,-rpath,{self.lib_dir}", "-ltorch_cpu", "-lc10", "-ltorch")


def locate_torch(python: str | None = None) -> TorchInstall:
    """The torch installed for ``python`` (default: the running interpreter)."""
    exe = python or sys.executable
    try:
        # `python -c` puts its working directory first on sys.path: from a PyTorch checkout it would
        # import the checkout's torch/. Ask from an empty directory of our own.
        with tempfile.TemporaryDirectory(prefix="vtgen-probe-") as neutral:
            done = subprocess.run(
                [exe, "-c", _PROBE], capture_output=True, text=True, timeout=300, check=False, cwd=neutral
            )
    except OSError as exc:
        raise VtgenError(f"--python {exe}: cannot run it ({exc})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise VtgenError(f"--python {exe}: torch cannot be imported there: {last}")
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise VtgenError(f"--python {exe}: unexpected answer from the torch probe: {done.stdout[:200]!r}") from None
    install = TorchInstall(
        exe,
        str(data["version"]),
        Path(data["root"]),
        tuple(Path(d) for d in data["include_dirs"]),
        Path(data["lib_dir"]),
        bool(data["cxx11_abi"]),
        tuple(str(m) for m in data.get("missing", [])),
    )
    if not (install.include_dirs[0] / "ATen").is_dir():
        raise VtgenError(f"torch {install.version} at {install.root} has no C++ headers (include/ATen)")
    missing = [str(p) for p in install.libraries if not p.is_file()]
    if missing:
        raise VtgenError(f"torch {install.version} at {install.root} lacks {', '.join(missing)}")
    return install
