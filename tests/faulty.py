"""Run the vtgen-build CLI with a fault hook installed: ``python tests/faulty.py [--kill-after N]
[--pause WHERE:FILE] -- ARGS...`` (the test suite's crash and race harness, never the product's).

``--kill-after N``: the process SIGKILLs itself at its N-th fault point (``base.write.fault_point``:
before and after every rename, after the outputs, after the cache).  ``--pause WHERE:FILE``: at the
first point named WHERE it creates FILE and waits until FILE is removed (a test drives a race step by
step).  A bug in the incremental path raises (as in the test processes).  The CLI runs without its
no-op fast path (``cli.commands.main``): a run under test always reaches its fault points.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's vtgen_build, as the tests import

FAULTY = str(Path(__file__).resolve())


def command(args: list[str], kill_after: int | None = None, pause: str | None = None) -> list[str]:
    """The command line running ``vtgen-build ARGS`` under this harness."""
    options = (["--kill-after", str(kill_after)] if kill_after else []) + (["--pause", pause] if pause else [])
    return [sys.executable, FAULTY, *options, "--", *args]


def _hook(kill_after: int | None, pause: tuple[str, str] | None):  # type: ignore[no-untyped-def]
    passed: list[str] = []
    paused: list[str] = []

    def hook(where: str) -> None:
        if pause is not None and pause[0] == where and not paused:
            paused.append(where)
            with open(pause[1], "w"):
                pass
            while os.path.exists(pause[1]):
                time.sleep(0.01)
        if kill_after is None:
            return
        passed.append(where)
        if len(passed) >= kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _strict(exc: Exception) -> None:
    """An incremental-path bug raises here too, as in the test processes (tests/conftest.py)."""
    raise exc


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, args = argv[:split], argv[split + 1 :]
    kill_after = int(options[options.index("--kill-after") + 1]) if "--kill-after" in options else None
    pause = None
    if "--pause" in options:
        where, _, path = options[options.index("--pause") + 1].partition(":")
        pause = (where, path)
    from vtgen_build.base.write import install_fault_hook
    from vtgen_build.cli.commands import main as cli_main
    from vtgen_build.engine.generate import install_incremental_failure_hook

    install_fault_hook(_hook(kill_after, pause))
    install_incremental_failure_hook(_strict)
    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
