"""The pre-commit hook: ``vtgen-build-pre-commit [CHECK-OPTIONS...]`` (or ``python -m vtgen_build.precommit``).

pre-commit stashes what is not staged before running a hook, so the working tree
holds exactly the staged edits: the hook runs ``vtgen-build check --changed-since
HEAD``, the fast check (stub headers) of only the ops the staged edits touch.  With
no options it checks the project in the current directory: an op library configured
by ``[tool.vtgen_build]`` in ``pyproject.toml``, else a PyTorch checkout
(``--pytorch-root .``).  The hook is declared in the repository's ``.pre-commit-hooks.yaml``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from .base.errors import VtgenError
from .inputs.paths import find_pytorch_layout

__all__ = ["check_options", "main"]


def check_options(project: Path) -> list[str]:
    """``check`` options for the project in ``project``: its ``[tool.vtgen_build]``, else a PyTorch checkout."""
    from .setuptools_hook import check_command, load_settings

    settings = load_settings(project)
    if settings is not None:
        command = check_command(settings, project)
        return command[command.index("check") + 1 :]
    find_pytorch_layout(str(project))  # not a checkout either: its error says what was looked for
    return ["--pytorch-root", str(project)]


def main(argv: Sequence[str] | None = None) -> int:
    from .cli.commands import main as cli_main
    from .setuptools_hook import ConfigError

    given = list(sys.argv[1:] if argv is None else argv)
    try:
        options = given or check_options(Path("."))
    except VtgenError as exc:
        print(f"vtgen-build pre-commit: {exc}", file=sys.stderr)
        return 1
    except ConfigError as exc:  # a bad [tool.vtgen_build]: `pyproject.toml:<line>: error: ...`
        print(str(exc), file=sys.stderr)
        return 1
    return cli_main(["check", *options, "--changed-since", "HEAD"])


if __name__ == "__main__":
    sys.exit(main())
