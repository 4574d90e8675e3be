"""Time how fast hostile inputs are refused: a YAML alias bomb, a recursive alias, deep nesting,
/dev/zero and a file over the size limit (tests/test_hardening_inputs.py checks the messages).

Each case runs ``vtgen_build.cli.commands.main(["inspect", ...])`` in this process; prints the best of
``--repeats`` per case; ``--check`` exits 1 when a case takes longer than ``--goal`` seconds.

    python bench/bench_hostile.py [--repeats 5] [--goal 0.5] [--check]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from vtgen_build.cli import commands as cli
from vtgen_build.inputs.load import MAX_INPUT_BYTES

NATIVE = "- func: sin(Tensor self) -> Tensor\n  variants: function, method\n  dispatch:\n    CPU: sin\n"
DERIVATIVES = "- name: sin(Tensor self) -> Tensor\n  self: grad * self.cos()\n"


def _bomb() -> str:
    text = "- func: sin(Tensor self) -> Tensor\n  tags: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 12):
        text += f"- a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 7) + "]\n"
    return text


def _cases(tmp: Path) -> dict[str, str]:
    """Case name → the native_functions.yaml path it loads."""
    huge = tmp / "huge.yaml"
    with open(huge, "wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse
    texts = {
        "alias bomb": _bomb(),
        "recursive alias": NATIVE + "- a: &r [1, *r]\n",
        "deep nesting": NATIVE + "- func: cos(Tensor self) -> Tensor\n  tags: " + "[" * 600 + "]" * 600 + "\n",
    }
    paths = {}
    for name, text in texts.items():
        path = tmp / f"{name.replace(' ', '_')}.yaml"
        path.write_text(text, encoding="utf-8")
        paths[name] = str(path)
    return {**paths, "/dev/zero": "/dev/zero", "over the size limit": str(huge)}


def _time(native: str, derivatives: str) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(["inspect", "--native-functions", native, "--derivatives", derivatives])
    elapsed = time.perf_counter() - start
    if code != 1:
        raise SystemExit(f"bench_hostile: {native} was not refused (exit {code})")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5, help="runs per case (default 5)")
    parser.add_argument("--goal", type=float, default=0.5, help="seconds per refusal (default 0.5)")
    parser.add_argument("--check", action="store_true", help="exit with status 1 when a case misses --goal")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        derivatives = tmp / "derivatives.yaml"
        derivatives.write_text(DERIVATIVES, encoding="utf-8")
        slow = []
        for name, native in _cases(tmp).items():
            best = min(_time(native, str(derivatives)) for _ in range(args.repeats))
            print(f"{name:22} {best * 1000:8.1f} ms")
            slow += [name] * (best > args.goal)
    if slow:
        print(f"over {args.goal} s: {', '.join(slow)}", file=sys.stderr)
    return 1 if slow and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
