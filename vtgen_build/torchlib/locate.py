"""Find the torch of a Python interpreter by asking that interpreter (never importing torch here)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError
from ..worker import Worker, run_python

__all__ = ["TorchInstall", "locate_torch", "torch_of_answer"]

PROBE = Path(__file__).resolve().with_name("probe.py")  # run by the Python asked: prints one JSON line


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


def locate_torch(python: str | None = None, worker: Worker | None = None) -> TorchInstall:
    """The torch installed for ``python`` (default: the running interpreter), asked of a child ``worker``
    forks when given (its torch is that Python's: ``worker.find``), else of a new process."""
    exe = python or sys.executable
    try:
        # From an empty directory of our own: where a PyTorch checkout is the working directory, a
        # Python started there could import the checkout's torch/.
        with tempfile.TemporaryDirectory(prefix="vtgen-probe-") as neutral:
            said = Path(neutral) / "answer.txt"
            code = _ask(exe, worker, said, neutral)
            text = said.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise VtgenError(f"--python {exe}: cannot run it ({exc})") from None
    if code != 0:
        last = (text.strip().splitlines() or ["(no output)"])[-1]
        raise VtgenError(f"--python {exe}: torch cannot be imported there: {last}")
    install = torch_of_answer(exe, text.strip().splitlines()[-1] if text.strip() else "")
    if not (install.include_dirs[0] / "ATen").is_dir():
        raise VtgenError(f"torch {install.version} at {install.root} has no C++ headers (include/ATen)")
    missing = [str(p) for p in install.libraries if not p.is_file()]
    if missing:
        raise VtgenError(f"torch {install.version} at {install.root} lacks {', '.join(missing)}")
    return install


def torch_of_answer(python: str, line: str) -> TorchInstall:
    """The torch a probe's JSON line describes (``probe.probe``'s fields): what ``python`` answered, whoever
    asked it (this module's probe, or a child that imported torch anyway and said so)."""
    try:
        data = json.loads(line)
        return TorchInstall(
            python,
            str(data["version"]),
            Path(data["root"]),
            tuple(Path(d) for d in data["include_dirs"]),
            Path(data["lib_dir"]),
            bool(data["cxx11_abi"]),
            tuple(str(m) for m in data.get("missing", [])),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        raise VtgenError(f"--python {python}: unexpected answer from the torch probe: {line[:200]!r}") from None


def _ask(python: str, worker: Worker | None, said: Path, cwd: str) -> int:
    return run_python(worker, python, [str(PROBE)], said, dict(os.environ), cwd, timeout=300)
