"""What the bench scripts share: where the real yaml is, and timing one command."""

from __future__ import annotations

import os
import subprocess
import time

__all__ = ["default_root", "timed"]


def default_root() -> str:
    """The installed torchgen package (``--pytorch-root`` of the real yaml)."""
    import torchgen

    return os.path.dirname(torchgen.__file__)


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``cmd`` to completion; its wall time in seconds and its result."""
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done
