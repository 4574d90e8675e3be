"""``check --gradcheck --watch``: the check again on every save of its inputs, through a warm worker.

The files are compared by content (a save that changes nothing runs nothing); their content is read
*before* each run, so an edit made while a run goes on is seen by the next look and checked again:
the last verdict printed is always the verdict of the files as they are.

The watching process runs the vtgen_build it started with (what it imported), and its worker was started
for that version.  Before each run it compares vtgen_build's files with that version: when they changed
(an upgrade, a checkout), a run would mix the old code it holds with new modules it imports later, so
watching stops, says why, and is started again by the user.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..base.errors import VtgenError
from ..diagnostics import Findings, from_error, from_os_error, render
from ..worker import Versions, find, start, stop
from ..worker.manage import PACKAGE

__all__ = ["POLL", "watch"]

POLL = 0.3  # seconds between looks at the files


def _contents(files: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for name in files:
        try:
            digest.update(name.encode() + b"\0" + Path(name).read_bytes())
        except OSError:  # deleted or mid-save: its absence is a state of its own
            digest.update(name.encode() + b"\0missing")
    return digest.hexdigest()


def watch(
    files: Sequence[str], out: Path, python: str, run: Callable[[], int], use_worker: bool, versions: Versions
) -> int:
    """Run ``run`` now and after every change of ``files``, until Ctrl-C (130) or a change of vtgen_build's
    own files (1); a worker started here is stopped.  ``versions``: the loop's, which ``run`` uses too."""
    _ = versions.package  # the version this process runs: read before anything else
    started = use_worker and find(out, python, versions) is None
    last = ""
    try:
        while True:
            now = _contents(files)
            if now != last:
                if versions.package_changed():
                    print(f"vtgen-build: error: watch: vtgen_build's own files ({PACKAGE}) changed since this watch "
                          "started; this process runs the version it started with: watching stops (start it again)",
                          file=sys.stderr, flush=True)  # fmt: skip
                    return 1
                last = now
                code = _once(run, out if use_worker else None, python, versions)
                verdict = "OK" if code == 0 else f"FAILED (exit {code})"
                print(f"vtgen-build: watch: {verdict}; waiting for a change of {len(files)} files (Ctrl-C stops)",
                      file=sys.stderr, flush=True)  # fmt: skip
            time.sleep(POLL)
    except KeyboardInterrupt:  # Ctrl-C ends watching: 130, as a shell says (and the README lists)
        return 130
    finally:
        if started:
            stop(out)


def _once(run: Callable[[], int], warm: Path | None, python: str, versions: Versions) -> int:
    """One run, through the worker of ``warm`` (started first, or again when it was stopped as stale);
    an error (bad yaml, a compiler gone) is printed and watching goes on."""
    try:
        if warm is not None and find(warm, python, versions) is None:
            print(f"vtgen-build: starting the gradcheck worker of {warm}", file=sys.stderr, flush=True)
            start(warm, python, versions=versions)
        return run()
    except VtgenError as exc:
        sys.stderr.write(render(Findings((from_error(exc),), False), "text"))
    except OSError as exc:
        sys.stderr.write(render(Findings((from_os_error(exc),), False), "text"))
    return 1
