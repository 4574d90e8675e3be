"""``vtgen-build check --gradcheck``: are the edited formulas right, not just compilable?

Its options are typed records (``GradcheckOptions``, ``LibraryOptions``) the command line
builds; nothing here sees ``argparse``.  The chosen ops' generated kernels and Nodes are built into one shared library
against an installed torch (``torchlib``), which a child Python loads over torch's
own Autograd kernels to run PyTorch's OpInfo gradient checks; every kernel counts
its entries, so a check passes only when our code ran.  Failures are reported at
the formula's derivatives.yaml line.

May import: every room below it: ``base`` ... ``engine``, ``revisions``, ``compile``, ``check``,
``torchlib``.
"""

from __future__ import annotations

from .report import Report
from .run import GradcheckOptions, run_gradcheck
from .schema_run import LibraryOptions, run_library
from .shard import parse_shard

__all__ = ["GradcheckOptions", "LibraryOptions", "Report", "parse_shard", "run_gradcheck", "run_library"]
