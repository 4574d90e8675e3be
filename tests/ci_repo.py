"""A throwaway git repository laid out like a PyTorch checkout, holding the sample's small yaml."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .conftest import SAMPLE

NATIVE = "aten/src/ATen/native/native_functions.yaml"
DERIVATIVES = "tools/autograd/derivatives.yaml"
TAGS = "aten/src/ATen/native/tags.yaml"
HELPERS = "include/vtsample/helpers.h"


def git(repo: Path, *args: str) -> str:
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", "-C", str(repo), *env_args, *args], capture_output=True, text=True, check=True)
    return done.stdout


def make_checkout(repo: Path) -> Path:
    """A git repository laid out like a PyTorch checkout, holding the sample's yaml and helper header."""
    for rel, src in ((NATIVE, "native_functions.yaml"), (DERIVATIVES, "derivatives.yaml"), (TAGS, "tags.yaml")):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE / src, repo / rel)
    (repo / HELPERS).parent.mkdir(parents=True)
    shutil.copy(SAMPLE / "include/vtsample/helpers.h", repo / HELPERS)
    (repo / "tools/autograd/templates").mkdir()
    (repo / "tools/autograd/templates/VariableType.cpp").write_text("// template\n")
    (repo / "README.md").write_text("a checkout\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new), encoding="utf-8")


def checkout_options(repo: Path) -> list[str]:
    """``check`` options for the checkout: its yaml, in the sample's namespace with its helper header."""
    return [
        "--pytorch-root", str(repo), "--namespace", "vtsample", "--manual-header", "vtsample/helpers.h",
        "--using-namespace", "torch::autograd::generated::details", "-I", str(repo / "include"),
    ]  # fmt: skip
