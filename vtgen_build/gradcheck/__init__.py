"""``vtgen-build check --gradcheck``: are the edited formulas right, not just compilable?

The chosen ops' generated kernels and Nodes are built into one shared library
against an installed torch (``torchlib``), which a child Python loads over torch's
own Autograd kernels to run PyTorch's OpInfo gradient checks; every kernel counts
its entries, so a check passes only when our code ran.  Failures are reported at
the formula's derivatives.yaml line.

May import: every room below it: ``base`` ... ``engine``, ``revisions``, ``compile``, ``check``,
``torchlib``.
"""

from __future__ import annotations

import argparse
import sys

from ..base.errors import VtgenError
from ..engine.generate import GenerateOptions
from ..inputs.files import Inputs
from ..revisions import Changes
from .report import Report
from .run import GradcheckOptions, run_gradcheck
from .shard import parse_shard

__all__ = ["GradcheckOptions", "Report", "run_from_args", "run_gradcheck"]


def run_from_args(
    args: argparse.Namespace, inputs: Inputs, gen_options: GenerateOptions, manual: str | None, since: Changes | None
) -> Report:
    """The CLI's ``check --gradcheck``: run, print the failures and the summary; the report, whose
    ``status`` is the exit status: 1 on a failed check, ``verdict.UNVERIFIED`` (3) when a selected op
    with a formula was verified by no passing check (unless ``--allow-unverified``), else 0."""
    if args.no_pch:
        raise VtgenError("--no-pch: --gradcheck builds no precompiled headers; leave the option out")
    if args.library and args.shard:
        raise VtgenError("--shard: parts of a run of PyTorch's yaml (or an op set) only, not of --library")
    if args.library:
        from pathlib import Path

        from .schema_run import run_library

        _library_options(args)
        work = Path(gen_options.out_dir).resolve() / ".vtgen-gradcheck"
        report = run_library(
            inputs, args.library, tuple(args.op), tuple(args.hints), work, args.python, args.timeout,
            gen_options.release, gen_options.policy_root, args.batched_grad,
        )  # fmt: skip
        report.accept_unverified = args.allow_unverified
        print(report.render(verbose=args.verbose), file=sys.stdout if report.ok else sys.stderr)
        return report
    options = GradcheckOptions(
        ops=tuple(op.removeprefix(f"{inputs.namespace}::") for op in args.op),  # mylib::op or op
        changed=args.changed,
        python=args.python,
        cxx=args.cxx,
        jobs=args.jobs,
        include_dirs=tuple(args.include_dirs),
        manual_header_file=manual,
        max_samples=args.max_samples,
        timeout=args.timeout,
        bind_hidden=args.bind_hidden,
        pytorch_root=args.pytorch_root,
        std=args.std,
        launcher=args.launcher,
        cache=not args.no_cache,
        torch_include=args.torch_include,
        torch_version=args.torch_version,
        since=since,
        hints=tuple(args.hints),
        allow_unverified=args.allow_unverified,
        coverage=args.coverage,
        batched=args.batched_grad,
        shard=parse_shard(args.shard) if args.shard else None,
        use_worker=args.use_worker,
        all_checks=args.all_checks,
        reach_limit=1 if args.coverage else 2,  # every op: the most specific entry reaching each
    )
    if args.coverage and args.changed:
        raise VtgenError("--coverage reports on every op or on the --op ones: leave out --changed")
    report = run_gradcheck(inputs, gen_options, options)
    print(report.render(verbose=args.verbose), file=sys.stdout if report.ok else sys.stderr)
    return report


def _library_options(args: argparse.Namespace) -> None:
    """An option ``--library`` would ignore is an error, not a silent no-op: these shape the OpInfo run
    or the library ``--gradcheck`` builds, and ``--library`` checks a built library on schema samples."""
    given = (
        ("--coverage", args.coverage, "it reports which formulas OpInfo samples ran, and --library runs none"),
        ("--max-samples", args.max_samples, "it limits OpInfo samples; --library runs samples made from the schemas"),
        ("--changed", args.changed, "it selects by the library --gradcheck builds; name the ops with --op"),
        ("--changed-since", args.changed_since, "it selects by the library --gradcheck builds; name the ops with --op"),
        ("--no-bind-hidden", not args.bind_hidden, "it shapes the library --gradcheck builds; --library loads yours"),
    )
    for option, value, why in given:
        if value:
            raise VtgenError(f"{option} cannot be used with --library: {why}")
