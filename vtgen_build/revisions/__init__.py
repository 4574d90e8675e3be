"""``--changed-since REV``: the ops whose yaml entries (or helpers) differ from a git revision.

``git.py`` asks git (what changed, a file's text at REV); ``selection.py`` compares
the entries of native_functions.yaml and derivatives.yaml at REV with the working
tree and names the ops to check, or everything when a whole file changed.

May import: ``base``, ``inputs``, ``model``, ``plan``, ``emit`` (``output_index``), ``stubs``.
"""

from __future__ import annotations

from .git import work_tree
from .selection import Changes, changes_since

__all__ = ["Changes", "changes_since", "work_tree"]
