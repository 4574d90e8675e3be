"""PyTorch's OpInfo database for gradient checks, without two costs no gradient check reads; standalone
(stdlib and torch only).

- *scipy's references*: with scipy installed, PyTorch's OpInfo definitions import ``scipy.signal``
  (and through it ``scipy.stats``) to name reference implementations (``ref=``), which only its
  numerical-reference tests call.  Imported here, the test suite is told scipy is absent while it
  loads: the same entries, samples, dtypes and skips, with no references (``op_db``).  That was 1.0 of
  the 2.1 s of CPU its import took after torch, on the 2.13 wheel.  A process that already imported it
  (a worker's child) keeps its own.
- *sample tracking*: each ``OpInfo.sample_inputs`` call asks ``extract_test_fn`` for the running
  ``unittest`` test, through ``inspect.stack()``, which reads the source of every frame and looks
  each file up among all loaded modules: 50 ms a call in a worker's child (thousands of modules),
  most of a warm verdict.  ``quiet_tracking`` puts a walk of the frames first: with no
  ``unittest.TestCase`` on the stack (never, in a gradcheck child) the answer is None at once, as
  the original's would be; with one, the original answers.
"""

from __future__ import annotations

import sys
import unittest
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["op_db", "quiet_tracking"]

METHODS = "torch.testing._internal.common_methods_invocations"
_TRACKING = ("torch.testing._internal.common_utils", "torch.testing._internal.opinfo.core")
_MARK = "_vtgen_frames_first"


def op_db() -> list[Any]:
    """``op_db``, imported without scipy's references when not imported yet; sample tracking quiet."""
    if METHODS not in sys.modules:
        from torch.testing._internal import common_utils

        had = common_utils.TEST_SCIPY
        common_utils.TEST_SCIPY = False  # read once, at the definitions' import, to pick `ref=`
        try:
            __import__(METHODS)
        finally:
            common_utils.TEST_SCIPY = had
    quiet_tracking()
    return list(sys.modules[METHODS].op_db)


def quiet_tracking() -> None:
    """``extract_test_fn`` of the test suite's modules (each holds its own name of it) answers None
    without ``inspect.stack()`` when no ``unittest.TestCase`` is running; idempotent."""
    for name in _TRACKING:
        module: Any = sys.modules.get(name)
        original = getattr(module, "extract_test_fn", None)
        if module is not None and original is not None and not getattr(original, _MARK, False):
            module.extract_test_fn = _frames_first(original)


def _frames_first(original: Callable[[], Any]) -> Callable[[], Any]:
    def extract_test_fn() -> Any:
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if isinstance(frame.f_locals.get("self"), unittest.TestCase):
                return original()
            frame = frame.f_back
        return None

    setattr(extract_test_fn, _MARK, True)
    return extract_test_fn
