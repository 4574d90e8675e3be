"""PyTorch's own bugs that vtgen_build works around, reproduced without vtgen_build.

Each test asserts PyTorch's correct behaviour and is expected to fail (strict xfail) on the
releases that have the bug: the day it passes, the workaround named in its reason can go.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.torch]

ISSUES = Path(__file__).resolve().parent / "pytorch_issues"


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,  # the child crashing (RuntimeError) is a failure, not PyTorch's bug
    reason="PyTorch 2.13: Inductor lowers a custom op to its Tag.out overload wrongly; vtgen_build registers "
    "out= operators without the tag and with a generated Functionalize kernel (vtgen_build/plan/functionalize.py)",
)
def test_inductor_lowers_a_custom_op_to_its_tagged_out_overload(tmp_path: Path) -> None:
    """Both shapes fail on 2.13: ``static: vtsample::cubic() expected at most 3 argument(s) but
    received 4 ...`` and ``dynamic: LoweringException: AssertionError: ...``."""
    pytest.importorskip("torch")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path)}  # its key ignores the ops' tags
    done = subprocess.run([sys.executable, str(ISSUES / "out_tag_lowering.py")], capture_output=True, text=True,
                          env=env, check=False, timeout=600)  # fmt: skip
    if done.returncode != 0 or len(done.stdout.splitlines()) != 2:
        raise RuntimeError(done.stdout + done.stderr[-3000:])
    assert done.stdout.splitlines() == ["static: OK", "dynamic: OK"], done.stdout
