"""The gradcheck children's import of PyTorch's OpInfo database (gradcheck_child/opinfo_import.py): scipy's
references left out, sample tracking without ``inspect.stack()``, the same answers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import unittest

import pytest

from vtgen_build.gradcheck_child import opinfo_import

FRESH = textwrap.dedent(
    """
    import sys
    from vtgen_build.gradcheck_child import opinfo_import
    from torch.testing._internal import common_utils
    db = opinfo_import.op_db()
    print(len(db), "scipy.signal" in sys.modules, common_utils.TEST_SCIPY == common_utils._check_module_exists("scipy"))
    print(sorted({o.name for o in db if o.name in ("sin", "nn.functional.elu", "signal.windows.hann")}))
    """
)


@pytest.mark.slow
def test_op_db_is_imported_without_scipy_signal_and_whole() -> None:
    """A fresh process (a one-shot child): the whole database, scipy.signal never imported (1.0 s of the
    2.1 s of CPU the import took), the suite's own flag as it was."""
    pytest.importorskip("scipy")
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    count, signal, restored = done.stdout.split("\n")[0].split()
    assert int(count) > 500 and signal == "False" and restored == "True", done.stdout
    assert done.stdout.split("\n")[1] == "['nn.functional.elu', 'signal.windows.hann', 'sin']", done.stdout


def test_sample_tracking_answers_as_before_without_reading_the_stack() -> None:
    """The test suite's ``extract_test_fn`` (common_utils; opinfo.core's own name of it, when loaded)."""
    pytest.importorskip("torch")
    from torch.testing._internal import common_utils

    modules = [sys.modules[n] for n in opinfo_import._TRACKING if n in sys.modules]
    originals = [m.extract_test_fn for m in modules]
    original = common_utils.extract_test_fn
    opinfo_import.quiet_tracking()
    quiet = common_utils.extract_test_fn
    try:
        assert quiet is not original and all(getattr(m.extract_test_fn, opinfo_import._MARK) for m in modules)
        assert quiet() is None is original()  # no unittest.TestCase running

        class Case(unittest.TestCase):
            def test_one(self) -> None:
                assert quiet() is type(self).test_one is original()

        result = unittest.TestResult()
        Case("test_one").run(result)
        assert result.wasSuccessful(), result.failures + result.errors
        opinfo_import.quiet_tracking()  # idempotent: not wrapped twice
        assert common_utils.extract_test_fn is quiet
    finally:
        for module, fn in zip(modules, originals, strict=True):
            module.extract_test_fn = fn
