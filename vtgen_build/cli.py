"""Command line: ``vtgen-build {inspect,generate,check}``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__, get_cmake_dir
from .errors import VtgenError
from .generate import GenerateOptions, generate, touch, write_depfile
from .model import Inputs, load_model
from .paths import find_pytorch_layout

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input prints ``path:line: error: message`` and returns 1."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.cmakedir:
        print(get_cmake_dir())
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args))
    except VtgenError as exc:
        print(f"vtgen-build: {exc}" if exc.location is None else str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vtgen-build", description=__doc__)
    parser.add_argument("--version", action="version", version=f"vtgen-build {__version__}")
    parser.add_argument("--cmakedir", action="store_true", help="print the CMake package directory and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    inspect = sub.add_parser("inspect", help="load the inputs and print a summary (or one op's plan)")
    _add_inputs(inspect)
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")
    inspect.add_argument("--op", action="append", default=[], help="print the plan of this op (repeatable)")
    inspect.set_defaults(run=_run_inspect)
    gen = sub.add_parser("generate", help="write VariableType_<k>.cpp, Functions_<k>.cpp and Node headers")
    _add_inputs(gen)
    _add_generate_options(gen)
    gen.set_defaults(run=_run_generate)
    return parser


def _add_generate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory")
    g.add_argument("--shards", type=int, default=10, metavar="N", help="number of shards (default: 10)")
    g.add_argument("--manual-header", action="append", default=[], metavar="H",
                   help="helper header formulas call, as it is #included (repeatable)")
    g.add_argument("--using-namespace", action="append", default=[], metavar="NS",
                   help="namespace of the manual helpers, brought into scope for formulas (repeatable)")
    g.add_argument("--depfile", metavar="PATH", help="write a Make-style depfile of every input read")
    g.add_argument("--stamp", metavar="PATH", help="touch this file after every successful run")
    g.add_argument("--explain", action="store_true", help="say which inputs changed")


def _add_inputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("inputs")
    g.add_argument("--native-functions", metavar="FILE", help="native_functions.yaml")
    g.add_argument("--derivatives", metavar="FILE", help="derivatives.yaml")
    g.add_argument("--tags", metavar="FILE", help="tags.yaml (optional)")
    g.add_argument("--pytorch-root", metavar="DIR", help="fill the three paths from a PyTorch checkout or torchgen")
    g.add_argument("--namespace", default="aten", metavar="NS",
                   help="operator namespace of entries written without 'ns::' (default: aten)")


def resolve_inputs(args: argparse.Namespace) -> Inputs:
    """The input paths from explicit flags, falling back to ``--pytorch-root``."""
    native, derivatives, tags = args.native_functions, args.derivatives, args.tags
    if args.pytorch_root:
        layout = find_pytorch_layout(args.pytorch_root)
        native = native or layout.native_functions
        derivatives = derivatives or layout.derivatives
        tags = tags or layout.tags
    if not native or not derivatives:
        raise VtgenError("give --native-functions and --derivatives, or --pytorch-root")
    return Inputs(native, derivatives, tags, args.namespace)


def _generate_options(args: argparse.Namespace) -> GenerateOptions:
    headers, namespaces = list(args.manual_header), list(args.using_namespace)
    if not headers and args.pytorch_root and find_pytorch_layout(args.pytorch_root).manual_header:
        headers = ["torch/csrc/autograd/FunctionsManual.h"]
        namespaces = namespaces or ["torch::autograd::generated::details"]
    return GenerateOptions(args.out, args.shards, args.namespace, tuple(headers), tuple(namespaces))


def _run_generate(args: argparse.Namespace) -> int:
    inputs = resolve_inputs(args)
    result = generate(inputs, _generate_options(args))
    if args.explain:
        for path in result.changed_inputs:
            print(f"changed: {path}")
    if args.depfile:
        write_depfile(args.depfile, args.stamp or str(Path(args.out) / "Functions.h"), inputs)
    if args.stamp:
        touch(args.stamp)
    print(result.summary())
    return 0


def _run_inspect(args: argparse.Namespace) -> int:
    model = load_model(resolve_inputs(args))
    summary = {
        "entries": model.entry_count,
        "native_functions": len(model.native_functions),
        "generated_native_functions": sum(f.generated for f in model.native_functions),
        "derivative_entries": len(model.derivatives),
        "tags": len(model.tags),
    }
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for key, value in summary.items():
            print(f"{key.replace('_', ' ')}: {value}")
    return 0
