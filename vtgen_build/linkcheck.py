"""``python -m vtgen_build.linkcheck NativeKernels.h -- <link command>``: a link launcher.

Runs the link command.  When it fails because a kernel declared in the generated
``NativeKernels.h`` is not defined by any source (the linker's "undefined reference to
`ns::kernel(...)'"), it adds ``native_functions.yaml:<line>: error: ...`` for each such kernel,
at the yaml line that names it (the header's comment above the declaration).  CMake sets it as
the target's ``RULE_LAUNCH_LINK`` when ``vtgen_generate(... REGISTER_BACKENDS ...)`` is used.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KernelSite", "kernel_sites", "main", "missing_kernels"]

_COMMENT = re.compile(r"^// (?P<where>.+:\d+): (?P<role>.+)$")
_NAME = re.compile(r"(?P<name>\w+)\(")
_NAMESPACE = re.compile(r"^namespace (?P<ns>\w+) \{$")
# GNU ld / gold: undefined reference to `ns::f(...)'; lld: undefined symbol: ns::f(...)
_UNDEFINED = re.compile(r"(?:undefined reference to [`']|undefined symbol: )(?P<name>[\w:]+)\(")


@dataclass(frozen=True)
class KernelSite:
    name: str  # qualified: vtsample::affine
    where: str  # native_functions.yaml:<line>
    role: str


def kernel_sites(header_text: str) -> dict[str, KernelSite]:
    """Qualified kernel name → where the yaml names it, from the generated header's comments."""
    sites: dict[str, KernelSite] = {}
    namespace = ""
    pending: tuple[str, str] | None = None
    for line in header_text.splitlines():
        ns = _NAMESPACE.match(line)
        if ns:
            namespace = ns["ns"]
            continue
        if line.startswith("#line"):  # --line-directives: the declaration's own line follows
            continue
        comment = _COMMENT.match(line)
        if comment:
            pending = (comment["where"], comment["role"])
            continue
        if pending is not None:
            head = line.split("(", 1)[0] + "("
            found = _NAME.search(head)
            if found:
                name = f"{namespace}::{found['name']}"
                sites.setdefault(name, KernelSite(name, *pending))
            pending = None
    return sites


def missing_kernels(link_output: str, sites: dict[str, KernelSite]) -> list[KernelSite]:
    names = dict.fromkeys(m["name"] for m in _UNDEFINED.finditer(link_output))
    return [sites[n] for n in names if n in sites]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m vtgen_build.linkcheck NativeKernels.h -- <link command>", file=sys.stderr)
        return 1
    header, command = Path(args[0]), args[2:]
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        try:
            sites = kernel_sites(header.read_text(encoding="utf-8"))
        except OSError:
            sites = {}
        for site in missing_kernels(proc.stdout, sites):
            print(
                f"{site.where}: error: kernel '{site.name}' ({site.role}) is declared in {header.name} "
                "but no source of the library defines it"
            )
    sys.stdout.flush()
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
