"""The few git questions ``--changed-since`` asks, each a ``git`` process in the work tree."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import VtgenError

__all__ = ["FileChange", "Repository", "work_tree"]

_HUNK = re.compile(r"^@@ [^@]* @@ ?(?P<context>.*)$")


def work_tree(path: str) -> str | None:
    """The top of the git work tree holding ``path``; None without git or outside a work tree."""
    if shutil.which("git") is None:
        return None
    done = subprocess.run(
        ["git", "-C", path, "rev-parse", "--show-toplevel"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or None if done.returncode == 0 else None


@dataclass(frozen=True)
class FileChange:
    """A path (relative to the work tree) that differs from the revision; ``old`` differs on a rename."""

    status: str  # git's letter: A added, M modified, D deleted, R renamed, C copied, T type changed
    path: str
    old: str


@dataclass(frozen=True)
class Repository:
    root: Path  # the work tree
    commit: str  # the revision, resolved

    @classmethod
    def at(cls, path: str, rev: str) -> Repository:
        """The work tree holding ``path`` and ``rev`` resolved in it; errors say how to fix a missing REV."""
        if shutil.which("git") is None:
            raise VtgenError(f"--changed-since {rev}: git not found on PATH")
        top = work_tree(path)
        if top is None:
            raise VtgenError(f"--changed-since {rev}: {path} is not in a git work tree")
        root = Path(top)
        done = _run(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}", check=False)
        if done.returncode != 0:
            shallow = _run(root, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true"
            how = f"; this is a shallow clone: fetch it first (git fetch --depth=1 origin {rev})" if shallow else ""
            raise VtgenError(f"--changed-since {rev}: no such revision in {root}{how}")
        return cls(root, done.stdout.strip())

    def changed(self) -> list[FileChange]:
        """Tracked files whose working-tree content differs from the revision, and untracked new files."""
        out = _run(self.root, "diff", "--name-status", "-z", "-M", "--no-ext-diff", self.commit, "--").stdout
        fields = out.split("\0")
        changes: list[FileChange] = []
        i = 0
        while i < len(fields) - 1:
            status = fields[i][:1]
            if status in "RC":
                changes.append(FileChange(status, fields[i + 2], fields[i + 1]))
                i += 3
            else:
                changes.append(FileChange(status, fields[i + 1], fields[i + 1]))
                i += 2
        untracked = _run(self.root, "ls-files", "-z", "--others", "--exclude-standard").stdout
        changes += [FileChange("A", p, p) for p in untracked.split("\0") if p]
        return changes

    def text_at_revision(self, path: str) -> str | None:
        """The file's text at the revision; None when it did not exist there."""
        done = _run(self.root, "show", f"{self.commit}:{path}", check=False)
        return done.stdout if done.returncode == 0 else None

    def tracked_at_revision(self, path: str) -> bool:
        """Did ``path`` (relative to the work tree) exist at the revision?"""
        return _run(self.root, "cat-file", "-e", f"{self.commit}:{path}", check=False).returncode == 0

    def changed_hunks(self, path: str) -> list[tuple[str, list[str]]]:
        """Each hunk of ``path``'s diff: the context line git names for it, and the lines removed and added."""
        out = _run(self.root, "diff", "-U0", "--no-ext-diff", "--no-color", self.commit, "--", path).stdout
        hunks: list[tuple[str, list[str]]] = []
        for line in out.splitlines():
            m = _HUNK.match(line)
            if m is not None:
                hunks.append((m.group("context"), []))
            elif hunks and line[:1] in "+-":
                hunks[-1][1].append(line[1:])
        return hunks

    def relative(self, path: str) -> str | None:
        """``path`` relative to the work tree (POSIX spelling), or None outside it."""
        try:
            return Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return None


def _run(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "core.quotepath=off", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )
    if check and done.returncode != 0:
        raise VtgenError(f"git {' '.join(args)} failed in {root}: {done.stderr.strip()[-500:]}")
    return done
