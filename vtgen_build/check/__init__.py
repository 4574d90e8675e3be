"""The compile check (``vtgen-build check``): generate, then compile the generated units.

``run`` generates incrementally, then compiles every translation unit (or one small unit
of the chosen ops) with ``-fsyntax-only`` through ``compile``, mapping each compiler error
back to its op and yaml line through ``emit.output_index``.  What other rooms use of it is
exported here: the lock of a check directory, choosing ops by ``--op`` name, each op's code digest.

May import: ``base``, ``inputs``, ``model``, ``plan``, ``emit``, ``stubs``, ``engine``,
``revisions``, ``compile``.
"""

from .run import (
    CHECK_LOCK,
    CheckOptions,
    CheckResult,
    check_generated,
    default_check_dir,
    op_digests,
    run_check,
    select_ops,
)
from .state import (
    changed_ops,
    files_text,
    free_calls,
    helper_files,
    helper_roots,
    read_state,
    with_helper_calls,
    with_helpers,
    write_state,
)

__all__ = [
    "CHECK_LOCK",
    "CheckOptions",
    "CheckResult",
    "changed_ops",
    "check_generated",
    "default_check_dir",
    "files_text",
    "free_calls",
    "helper_files",
    "helper_roots",
    "op_digests",
    "read_state",
    "run_check",
    "select_ops",
    "with_helper_calls",
    "with_helpers",
    "write_state",
]
