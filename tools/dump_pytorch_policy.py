"""Write a release's policy lists as vtgen_build/data/pytorch_policy*.yaml.

The lists are read from the generator sources of a torchgen package or a PyTorch checkout,
parsed as data (``vtgen_build.plan.policy.read_policy_sources``; nothing is imported):

    python tools/dump_pytorch_policy.py ROOT RELEASE > vtgen_build/data/pytorch_policy_RELEASE.yaml

(2.13's file is ``pytorch_policy.yaml``), e.g. ``ROOT`` = the ``torchgen`` directory of torch 2.14.1.
"""

from __future__ import annotations

import sys

from vtgen_build.plan.policy import POLICY_LISTS, read_policy_sources


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root, release = argv
    policy = read_policy_sources(root)
    if policy is None:
        print(f"{root}: no autograd generator sources found", file=sys.stderr)
        return 1
    out = sys.stdout
    out.write(f"# Operator names PyTorch's autograd codegen treats specially (facts of PyTorch {release}).\n")
    out.write("# Regenerate with tools/dump_pytorch_policy.py.\n")
    for key in POLICY_LISTS:
        out.write(f"{key}:\n")
        for name in sorted(getattr(policy, key)):
            out.write(f"  - '{name}'\n")
    out.write("view_functions:\n")
    for name, arg in policy.view_functions:
        out.write(f"  '{name}': '{arg}'\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
