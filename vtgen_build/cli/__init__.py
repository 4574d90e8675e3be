"""The command line: the console entry point and its commands.

``entry`` is ``vtgen-build`` and ``python -m vtgen_build``: it answers an unchanged
``generate`` from the engine's no-op record (``engine.noop``) and imports ``commands``
(the argparse parser and every command) only when that fails.  Keep ``entry`` light: it
imports ``engine.noop`` and, through it, ``base.store``, nothing else of vtgen_build.

May import: every room below it (``base`` … ``diagnostics``) and the build edges
``setuptools_hook`` and ``linkcheck``; nothing imports it but the entry points around
it (``__main__``, ``lintrunner``, ``precommit``).
"""
