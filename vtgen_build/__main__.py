"""``python -m vtgen_build``: the same CLI as ``vtgen-build``."""

from __future__ import annotations

import sys

from .engine.noop import main

if __name__ == "__main__":
    sys.exit(main())
