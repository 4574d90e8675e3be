"""``python -m vtgen_build`` and the ``vtgen-build`` console script: one entry point (``cli/entry.py``)."""

from __future__ import annotations

import sys

from .cli.entry import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
