"""`generate` killed (SIGKILL) at random points: the next run repairs everything and no file is ever torn.

``tests/faulty.py --kill-after N`` makes the generator SIGKILL itself at its N-th write point (before and
after every rename, after the outputs, after the cache); a timer kill covers the moments between.
After each kill every output file holds either its old or its new content, and the next run's
output equals a clean generation byte for byte.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests import faulty
from tests.test_incremental import Workspace, clean_files, on_disk
from vtgen_build.engine.generate import GenerateOptions, generate

pytestmark = pytest.mark.torch


def _cli(ws: Workspace, kill_after: int | None = None, *, shards: int = 10) -> subprocess.Popen[bytes]:
    args = [*ws.cli_args(), "--shards", str(shards)]
    if kill_after is not None:  # generate ...: under the fault harness
        args = faulty.command(args[3:], kill_after)
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _assert_not_torn(out: Path, old: dict[str, str], new: dict[str, str]) -> None:
    for rel, text in on_disk(out).items():
        if rel.endswith(".tmp"):
            continue  # a killed run's temporary file; the next run removes it
        assert text == old.get(rel) or text == new.get(rel), f"{rel} is torn"


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory, real_yaml) -> tuple[Workspace, Path]:  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("faults")
    ws = Workspace(root, real_yaml)
    return ws, ws.seed()


def test_killed_incremental_runs_leave_old_or_new_files_and_the_next_run_repairs(seeded) -> None:  # type: ignore[no-untyped-def]
    ws, base = seeded
    rng = random.Random(5)
    ws.reset(base)
    options = GenerateOptions(str(ws.out))
    original = ws.text("derivatives")
    old = clean_files(ws.inputs, options)
    assert isinstance(old, dict)
    edited = original.replace("self: grad * self.cos().conj()", "self: grad * self.cos().conj() * 2", 1)
    ws.write("derivatives", edited)
    new = clean_files(ws.inputs, options)
    assert isinstance(new, dict)
    for i in range(10):  # kill at a write point, then repair
        ws.write("derivatives", original)
        # the first time the directory already holds `original`'s output; later, the repaired `new`
        # (with its cache): one formula back is an incremental run
        assert generate(ws.inputs, options).mode == ("up-to-date" if i == 0 else "incremental")
        ws.write("derivatives", edited)
        proc = _cli(ws, rng.randint(1, 12))
        proc.communicate(timeout=120)
        assert proc.returncode in (0, -signal.SIGKILL)
        _assert_not_torn(ws.out, old, new)
        generate(ws.inputs, options)
        assert on_disk(ws.out) == new
        assert not list(ws.out.rglob("*.tmp"))


def test_killed_clean_runs_at_random_moments_are_repaired(seeded) -> None:  # type: ignore[no-untyped-def]
    ws, base = seeded
    rng = random.Random(7)
    ws.reset(base)
    old = clean_files(ws.inputs, GenerateOptions(str(ws.out)))
    new = clean_files(ws.inputs, GenerateOptions(str(ws.out), shards=7))
    assert isinstance(old, dict) and isinstance(new, dict)
    for attempt in range(4):  # a shard-count change rewrites everything: kill in the middle of it
        if attempt % 2:
            proc = _cli(ws, rng.randint(1, 1500), shards=7)
        else:
            proc = _cli(ws, shards=7)
            time.sleep(rng.uniform(0.3, 3.0))
            proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=120)
        _assert_not_torn(ws.out, old, new)
        proc = _cli(ws, shards=7)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert on_disk(ws.out) == new
        generate(ws.inputs, GenerateOptions(str(ws.out)))  # back to 10 shards for the next attempt
        assert on_disk(ws.out) == old
