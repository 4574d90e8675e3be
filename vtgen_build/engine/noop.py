"""The no-op record: what lets ``vtgen-build generate`` answer "up to date" before anything heavy is imported.

A ``generate`` run that succeeds leaves ``.vtgen-quick`` in its output
directory: the exact command line and working directory, and the stat
signature (size, mtime, ctime, inode) of every file the answer depends on:
the inputs (taken *before* they were read), the ``--pytorch-root`` layout
candidates, the generator's own files, every output and the manifest.  The
next run of the same command (``cli/entry.py``, the console entry point) asks
``up_to_date()``, which compares those signatures; when all match, it is done.
This module imports only ``os`` and ``base/store.py`` (``json``, ``hashlib``): the
record is a state file like the others, hash-checked and data only.  Anything
unexpected (no record, another command, one changed signature, a missing
file) falls through to the full CLI, which re-checks the manifest (content
hashes) and writes a fresh record.  A run deletes the record before it
starts (``discard()``, called by ``engine/generate.py``), so a killed run never
leaves one behind.  It imports nothing of the CLI: the engine never does.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from ..base import store

__all__ = ["RECORD", "discard", "generator_files", "record", "signatures", "up_to_date"]

RECORD = ".vtgen-quick"
_KIND = "quick"
_MAGIC = "vtgen-quick 2"
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generator_files() -> list[str]:
    """Files that decide the output besides the inputs: templates, the policy, the generator's code."""
    templates = os.path.join(_PACKAGE, "templates")
    files = [os.path.join(templates, name) for name in sorted(os.listdir(templates))]
    data = os.path.join(_PACKAGE, "data")
    files += [os.path.join(data, name) for name in sorted(os.listdir(data)) if name.endswith((".yaml", ".txt"))]
    code = [os.path.join(_PACKAGE, name) for name in os.listdir(_PACKAGE) if name.endswith(".py")]
    for sub in os.scandir(_PACKAGE):
        if sub.is_dir() and not sub.name.startswith((".", "__")):
            code += [os.path.join(sub.path, name) for name in os.listdir(sub.path) if name.endswith(".py")]
    return files + sorted(code)


def signatures(paths: Iterable[str]) -> list[tuple[str, str]]:
    return [(os.path.abspath(p), store.stat_signature(p)) for p in paths]


def _out_dir(args: list[str]) -> str | None:
    """The ``--out`` value, when the command spells it exactly once (else no fast path)."""
    found = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--out"]
    found += [a[len("--out=") :] for a in args if a.startswith("--out=")]
    return found[0] if len(found) == 1 else None


def _header(args: Sequence[str], out_dir: str, touch: str, watched: int) -> list[str]:
    return [_MAGIC, os.getcwd(), os.path.abspath(out_dir), touch, str(watched), str(len(args)), *args]


def discard(out_dir: str) -> None:
    """Remove the record (a run starts by this, so a failed or killed run leaves none)."""
    try:  # noqa: SIM105 - contextlib is one import more on the path this module keeps light
        os.unlink(os.path.join(out_dir, RECORD))
    except OSError:
        pass


def record(
    args: Sequence[str], out_dir: str, touch: str, watched: list[tuple[str, str]], generator: list[tuple[str, str]]
) -> str | None:
    """Write the record of a successful run (best effort: without it the next run just checks in full);
    why it could not be written, or None.

    ``watched``: the signatures of the inputs (taken before the run read them) and of the
    outputs; ``generator``: those of ``generator_files()``, also taken before the run.
    Called under the run's lock; the temporary's name is unique all the same, and it is
    removed whatever interrupts the write (an error, Ctrl-C).
    """
    fields = _header(args, out_dir, touch, len(watched)) + [x for pair in (*watched, *generator) for x in pair]
    path = os.path.join(out_dir, RECORD)
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            handle.write(store.dumps(_KIND, list[store.JSON](fields)))
        os.replace(tmp, path)
    except BaseException as exc:
        try:  # noqa: SIM105 - as in discard()
            os.unlink(tmp)
        except OSError:
            pass
        discard(out_dir)
        if not isinstance(exc, OSError):
            raise
        return f"{exc.strerror or exc}: {exc.filename or path}"
    return None


def _fields(out_dir: str) -> list[str] | None:
    """The record's fields if it is an intact record of strings."""
    payload = store.read(os.path.join(out_dir, RECORD), _KIND)
    if not isinstance(payload, list) or not all(isinstance(x, str) for x in payload):
        return None
    return [x for x in payload if isinstance(x, str)]


def up_to_date(args: list[str]) -> bool:
    """True when the record in the output directory shows nothing changed since the last run."""
    out_dir = _out_dir(args)
    if not out_dir:
        return False
    fields = _fields(out_dir)
    if fields is None or len(fields) < 7 or not fields[4].isdigit():
        return False
    header = _header(args, out_dir, fields[3], int(fields[4]))
    pairs = fields[len(header) :]
    if fields[: len(header)] != header or len(pairs) % 2:
        return False
    paths, recorded = pairs[0::2], pairs[1::2]
    if paths[int(fields[4]) :] != [os.path.abspath(p) for p in generator_files()]:
        return False  # a generator file was added or removed
    if any(store.stat_signature(p) != s for p, s in zip(paths, recorded, strict=True)):
        return False
    return _touch(fields[3])


def _touch(path: str) -> bool:
    if not path:
        return True
    try:
        os.utime(path)
    except OSError:
        return False
    return True
