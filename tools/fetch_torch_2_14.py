"""Unpack what tests/test_parity_2_14.py needs from the torch 2.14.1 wheel, once, outside the repo.

    python tools/fetch_torch_2_14.py [DEST]

DEST defaults to ``$VTGEN_TORCH_2_14``, else ``$XDG_CACHE_HOME/vtgen_build/torch-2.14.1``
(``~/.cache/...``).  A DEST that already holds the unpacked release is reused as it is.
Otherwise ``pip download --no-deps torch==2.14.1`` fetches the wheel (~500 MB) into a temporary
directory, ``torchgen/``, ``torch/include/`` and ``torch/version.py`` are unpacked from it
into ``DEST.partial``, which is then renamed to DEST (a killed run leaves no half release),
and the wheel is deleted.  Prints DEST.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WANTED = ("torchgen/", "torch/include/", "torch/version.py")
MARK = Path("torchgen") / "packaged" / "autograd" / "derivatives.yaml"


def default_dest() -> Path:
    named = os.environ.get("VTGEN_TORCH_2_14")
    if named:
        return Path(named)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "vtgen_build" / "torch-2.14.1"


def fetch(dest: Path) -> None:
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="vtgen-torch-2.14.1-") as tmp:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:"]
        subprocess.run([*command, "torch==2.14.1", "-d", tmp], check=True)
        (wheel,) = Path(tmp).glob("torch-2.14.1-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            members = [m for m in archive.namelist() if m.startswith(WANTED)]
            archive.extractall(partial, members)
    if not (partial / MARK).is_file():
        raise SystemExit(f"fetch_torch_2_14: the wheel lacks {MARK}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    os.replace(partial, dest)


def main(argv: list[str]) -> int:
    dest = Path(argv[0]) if argv else default_dest()
    if not (dest / MARK).is_file():
        if dest.exists() and any(dest.iterdir()):
            raise SystemExit(f"fetch_torch_2_14: {dest} holds something else than an unpacked torch 2.14.1")
        if dest.exists():
            dest.rmdir()
        fetch(dest)
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
