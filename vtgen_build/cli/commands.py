"""Command line: ``vtgen-build {inspect,generate,check}``."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__, get_cmake_dir
from ..base.errors import VtgenError, did_you_mean
from ..base.write import is_output_name, write_atomic
from ..diagnostics import (
    FORMATS,
    Diagnostic,
    Findings,
    from_compiler_output,
    from_error,
    from_gradcheck_report,
    from_os_error,
    render,
)
from ..engine import noop
from ..engine.generate import (
    MANIFEST,
    GenerateOptions,
    GenerateResult,
    check_options,
    default_shards,
    depfile_inputs,
    generate,
    input_paths,
    run_plan,
    touch,
    write_depfile,
)
from ..inputs.files import Inputs
from ..inputs.paths import find_pytorch_layout, layout_candidates
from ..plan.request import CLI, BuildRequest, make_request

if TYPE_CHECKING:
    from ..check import CheckOptions
    from ..engine.planned import RunPlan
    from ..gradcheck import GradcheckOptions, LibraryOptions, Report
    from ..gradcheck.python_tier_run import LibraryTier, Reach, TierReport
    from ..model import Model
    from ..model.schema import OpSelector
    from ..plan.kernel import KernelPlan, Plan
    from ..plan.policy import Policy
    from ..plan.target import Target
    from ..revisions import Changes

__all__ = ["check_files", "main", "resolve_inputs"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input prints ``path:line: error: message`` and returns 1 (usage errors too)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version (0); a usage error (argparse says 2): 1, as every error
        return 0 if exc.code in (0, None) else 1
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: `engine/noop` records it
    if args.cmakedir:
        print(get_cmake_dir())
        return 0
    if args.command is None:
        parser.print_help(sys.stderr)
        return 1
    fmt = getattr(args, "format", "text")
    found: list[Diagnostic] = []
    args.found = found  # the run's diagnostics (``--format``); in text they were printed as found
    from ..worker import Versions

    args.versions = Versions()  # what tells a current gradcheck worker: read once for the run (watch: its loop)
    machine = fmt != "text"  # stdout holds only the document; what people read goes to stderr
    interrupted = False
    try:
        with contextlib.redirect_stdout(sys.stderr) if machine else contextlib.nullcontext():
            code = int(args.run(args))
    except VtgenError as exc:
        code = _failed(found, from_error(exc), machine)
    except OSError as exc:  # the machine said no (disk full, permissions, ...): say so, without a traceback
        code = _failed(found, from_os_error(exc), machine)
    except KeyboardInterrupt:  # Ctrl-C: 130, as a shell says; a document still says what was found
        code, interrupted = 130, True
        args.summary = f"interrupted (Ctrl-C) before the {args.command} finished: the findings are incomplete"
    if machine:
        summary = getattr(args, "summary", "")
        unique = tuple(dict.fromkeys(found))  # one formula's error, compiled in several kernels, is one finding
        anchor = getattr(args, "anchor", None)  # the derivatives.yaml, once the inputs are known
        findings = Findings(unique, code == 0, summary, _repository_root(), __version__, anchor, interrupted)
        sys.stdout.write(render(findings, fmt))
    return code


def _failed(found: list[Diagnostic], diagnostic: Diagnostic, machine: bool) -> int:
    """An error that ended the run: printed now (text) or kept for the document."""
    found.append(diagnostic)
    if not machine:
        sys.stderr.write(render(Findings((diagnostic,), False), "text"))
    return 1


def _repository_root() -> str:
    """The git work tree holding the working directory (paths in github/sarif output are relative to it)."""
    from ..revisions import work_tree

    return work_tree(".") or "."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vtgen-build", description=__doc__)
    parser.add_argument("--version", action="version", version=f"vtgen-build {__version__}")
    parser.add_argument("--cmakedir", action="store_true", help="print the CMake package directory and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    inspect = sub.add_parser("inspect", help="load the inputs and print a summary (or one op's plan)")
    _add_inputs(inspect)
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")
    inspect.add_argument("--op", action="append", default=[], help="print the plan of this op (repeatable)")
    inspect.add_argument(
        "--python-autograd",
        action="store_true",
        help="with --op: also print the Python each formula becomes (generate --python-autograd)",
    )
    inspect.add_argument(
        "--python-formulas",
        metavar="FILE",
        help="with --op: the formulas module helpers resolve to in the Python each formula becomes",
    )
    inspect.add_argument(
        "--stable-abi",
        metavar="X.Y",
        help="with --op: describe the ops as a stable-ABI library has them (generate --stable-abi): no C++ "
        "autograd, the Python autograd of derivatives.yaml",
    )
    inspect.set_defaults(run=_run_inspect)
    gen = sub.add_parser("generate", help="write VariableType_<k>.cpp, Functions_<k>.cpp and Node headers")
    _add_inputs(gen)
    _add_generate_options(gen)
    _add_format(gen)
    gen.set_defaults(run=_run_generate)
    _add_check_parser(sub)
    _add_coverage_parser(sub)
    _add_audit_parser(sub)
    _add_worker_parser(sub)
    return parser


def _add_coverage_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cov = sub.add_parser("coverage", help="formula coverage reports of check --gradcheck --coverage")
    actions = cov.add_subparsers(dest="action", metavar="ACTION", required=True)
    merge = actions.add_parser("merge", help="join the coverage JSONs of the N parts of a --shard K/N run")
    merge.add_argument("parts", nargs="+", metavar="PART.json", help="the parts' --coverage JSON files")
    merge.add_argument("-o", "--output", required=True, metavar="JSON", help="the merged report (as one run writes)")
    cov.set_defaults(run=_run_coverage_merge)


def _run_coverage_merge(args: argparse.Namespace) -> int:
    from ..gradcheck.coverage import merge, render, to_json

    parts: list[tuple[str, str]] = []
    for path in args.parts:
        try:
            parts.append((path, Path(path).read_text(encoding="utf-8")))
        except OSError as exc:
            raise VtgenError(f"{path}: cannot read it: {exc.strerror}") from exc
    entries, run = merge(parts)
    write_atomic(Path(args.output), to_json(entries, None, run))
    print(render(entries) + f"\n  per entry: {args.output} (merged from {len(parts)} parts)")
    return 0


def _add_audit_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser(
        "abi-audit",
        help="fail unless every undefined symbol of a stable-ABI library is a stable C-shim function or C/C++ runtime",
    )
    audit.add_argument("library", help="the linked shared library")
    audit.add_argument("--kernels", required=True, metavar="H", help="its generated NativeKernels.h (names the ops)")
    audit.add_argument("--torch-include", required=True, metavar="DIR", help="torch's include directory")
    audit.add_argument("--objects", nargs="*", default=[], metavar="O", help="the object files linked into it")
    audit.add_argument(
        "--keep", action="store_true", help="leave a failing library in place (default: renamed to <library>.rejected)"
    )
    audit.add_argument("--allow", action="append", default=[], metavar="GLOB",
                       help="also allow undefined symbols matching GLOB (mangled or demangled; repeatable): "
                            "a library the op library depends on")  # fmt: skip
    audit.add_argument("--allow-library", action="append", default=[], metavar="LIB",
                       help="also allow every symbol this shared library exports (one of the op library's own "
                            "dependencies, never libtorch's; repeatable)")  # fmt: skip
    audit.set_defaults(run=_run_audit)


def _run_audit(args: argparse.Namespace) -> int:
    from ..torchlib.abi_audit import Allowed, audit_library

    library = Path(args.library)
    if not library.is_file():
        raise VtgenError(f"abi-audit: no such library: {library}")
    objects = [Path(o) for o in args.objects]
    allow = Allowed(tuple(args.allow), tuple(Path(p) for p in args.allow_library))
    checked, findings = audit_library(library, objects, Path(args.kernels), Path(args.torch_include), allow)
    for f in findings:
        for location, role in f.kernels or ((None, ""),):
            where = f"{location}: " if location is not None else f"{library}: "
            pulled = f"; pulled in by the {role}" if role else "; reached from no kernel of NativeKernels.h"
            print(f"{where}error: {f.message()}{pulled}", file=sys.stderr)
    if findings:
        if not args.keep:  # as a failed link leaves no library: the next build relinks and audits again
            library.replace(library.with_name(library.name + ".rejected"))
        torch = sum(f.kind == "torch" for f in findings)
        why = [f"{torch} are libtorch's outside its stable C shim (a kernel uses libtorch's C++ API: use "
               "torch/csrc/stable/ instead)"] if torch else []  # fmt: skip
        kernels = sum(f.kind == "kernel" for f in findings)
        why += [f"{kernels} are kernels no linked source defines"] if kernels else []
        why += [f"{n} are another library's (allowed by --allow)"] if (n := len(findings) - torch - kernels) else []
        raise VtgenError(f"abi-audit: {library.name}: of its {checked} undefined symbols, {'; '.join(why)}")
    allowed = " or allowed" if args.allow or args.allow_library else ""
    args.summary = (
        f"abi-audit: {library.name}: all {checked} undefined symbols are stable C-shim functions or C/C++ runtime"
        f"{allowed}"
    )
    print(args.summary)
    return 0


def _add_code_options(g: argparse._ArgumentGroup) -> None:
    """Options that shape the generated code (``generate`` and ``check`` share them)."""
    g.add_argument(
        "--shards",
        type=int,
        default=None,
        metavar="N",
        help="number of shards, 1..1024 (default: one per 32 entries of native_functions.yaml, 1..10: "
        "the rule of CMake's vtgen_generate() and the setuptools hook)",
    )
    g.add_argument("--manual-header", action="append", default=[], metavar="H",
                   help="helper header formulas call, as it is #included (repeatable)")  # fmt: skip
    g.add_argument("--using-namespace", action="append", default=[], metavar="NS",
                   help="namespace of the manual helpers, brought into scope for formulas (repeatable)")  # fmt: skip
    g.add_argument("--allow-overwrite", action="store_true",
                   help="replace same-named files vtgen-build did not write (--out with no manifest, "
                   "--python-api)")  # fmt: skip


def _add_generate_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory")
    _add_code_options(g)
    g.add_argument(
        "--stub-decls",
        action="store_true",
        help="also write vtgen_decls/*.inc, needed to compile against vtgen_build's stub headers",
    )
    g.add_argument(
        "--line-directives",
        action="store_true",
        help="formulas carry #line to their derivatives.yaml line (its absolute path): a compiler error in a "
        "formula names the yaml line (CMake and setuptools builds turn this on)",
    )
    g.add_argument(
        "--register-backends",
        metavar="KEYS",
        help="also generate the backend registrations of the kernels dispatch: names: NativeKernels.h and one "
        "Register<Key>.cpp per listed dispatch key (comma-separated, e.g. CPU,Meta; 'all': every key the yaml uses)",
    )
    g.add_argument(
        "--fake-module",
        metavar="MODULE",
        help="the Python module that registers the ops' fake kernels (torch.library.register_fake): "
        "RegisterSchema.cpp names it, so PyTorch's missing-fake-kernel error says what to import",
    )
    g.add_argument(
        "--python-api",
        metavar="DIR",
        help="also write DIR/__init__.py (a typed Python function per op of the library) and DIR/py.typed",
    )
    g.add_argument(
        "--python-autograd",
        metavar="FILE",
        help="also write FILE (e.g. src/mypkg/_autograd.py): a Python module registering each op's autograd "
        "from derivatives.yaml, for libraries whose kernels carry none (the stable ABI)",
    )
    g.add_argument(
        "--python-formulas",
        metavar="FILE",
        help="with --python-autograd: the author's module of helper functions the formulas call, beside FILE",
    )
    g.add_argument(
        "--stable-abi",
        metavar="X.Y",
        help="a LibTorch stable-ABI library loading into every PyTorch from X.Y (>= 2.10) on: STABLE_TORCH_LIBRARY "
        "registrations of boxed kernels on torch::stable types, no C++ autograd (needs --register-backends; compile "
        "with -DTORCH_TARGET_VERSION as NativeKernels.h says; --line-directives is a no-op there)",
    )
    g.add_argument("--depfile", metavar="PATH", help="write a Make-style depfile of every input read")
    g.add_argument("--stamp", metavar="PATH", help="touch this file after every successful run")
    g.add_argument("--explain", action="store_true", help="say which inputs changed")


def _add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="text",
                   help="how diagnostics are printed: text (default), json, github (workflow commands), sarif "
                   "(SARIF 2.1.0); the document goes to stdout, everything else to stderr")  # fmt: skip


def _add_inputs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("inputs")
    g.add_argument("--native-functions", metavar="FILE", help="native_functions.yaml")
    g.add_argument("--derivatives", metavar="FILE", help="derivatives.yaml")
    g.add_argument("--tags", metavar="FILE", help="tags.yaml (optional)")
    g.add_argument("--pytorch-root", metavar="DIR", help="fill the three paths from a PyTorch checkout or torchgen")
    g.add_argument("--torch-version", metavar="X.Y",
                   help="PyTorch release to generate for (default: the one in the torch/version.h of "
                        "--torch-include, where the command has it; else the torch/version.py or version.txt of "
                        "the PyTorch --pytorch-root belongs to; else the release whose operator lists "
                        "--pytorch-root's generator sources hold; else 2.13, with a warning when --pytorch-root "
                        "was given: read from files, never from an installed torch, once per command); "
                        "check --gradcheck builds for the torch of --python, and a value naming another "
                        "release is an error")  # fmt: skip
    g.add_argument(
        "--namespace",
        default="aten",
        metavar="NS",
        help="operator namespace of entries written without 'ns::' (default: aten)",
    )


def _resolve_target(args: argparse.Namespace) -> Target:
    """The release the command generates for, resolved once per command and handed down; a guess is
    said once, as a warning."""
    from ..plan.target import resolve_target

    target = resolve_target(args.torch_version, getattr(args, "torch_include", None), args.pytorch_root)
    if target.warning:
        print(f"vtgen-build: warning: {target.warning}", file=sys.stderr)
    return target


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


_PYTORCH_MANUAL = "torch/csrc/autograd/FunctionsManual.h"
_PYTORCH_HELPERS = "torch::autograd::generated::details"


def _default_shards(args: argparse.Namespace) -> int:
    """No --shards: the count the build integrations give a yaml of this size (default_shards)."""
    path = resolve_inputs(args).native_functions
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise VtgenError(f"cannot read {path} ({exc.strerror or exc})") from None
    return default_shards(text)


def _request(args: argparse.Namespace) -> BuildRequest:
    """The build request of ``args``, made and checked once (the rules of vtgen_build.plan.request), with the
    release resolved once (``_resolve_target``)."""
    target = _resolve_target(args)
    headers, namespaces = list(getattr(args, "manual_header", ())), list(getattr(args, "using_namespace", ()))
    if not headers and args.pytorch_root and find_pytorch_layout(args.pytorch_root).manual_header:
        headers = ["torch/csrc/autograd/FunctionsManual.h"]
        namespaces = namespaces or [_PYTORCH_HELPERS]
    elif not namespaces and any(Path(h).as_posix().endswith(_PYTORCH_MANUAL) for h in headers):
        namespaces = [_PYTORCH_HELPERS]  # PyTorch's own helper header: its helpers' namespace
    return make_request(
        CLI,
        namespace=args.namespace,
        register_backends=getattr(args, "register_backends", None) or (),
        stable_abi=getattr(args, "stable_abi", None),
        target=target,
        manual_headers=headers,
        using_namespaces=namespaces,
        stub_decls=getattr(args, "stub_decls", False),
        python_autograd=getattr(args, "python_autograd", None),
        python_formulas=getattr(args, "python_formulas", None),
        fake_module=getattr(args, "fake_module", None),  # checked with the other names (check_options)
        python_api=getattr(args, "python_api", None),
    )


def _generate_options(args: argparse.Namespace, request: BuildRequest) -> GenerateOptions:
    return GenerateOptions(
        out_dir=args.out or "",
        shards=args.shards if args.shards is not None else _default_shards(args),
        request=request,
        line_directives=getattr(args, "line_directives", False),
        policy_root=args.pytorch_root,
        allow_overwrite=args.allow_overwrite,
    )


def _run_generate(args: argparse.Namespace) -> int:
    if args.out:
        noop.discard(args.out)
    inputs = resolve_inputs(args)
    args.anchor = inputs.derivatives
    request = _request(args)
    options = _generate_options(args, request)
    check_options(options)
    target = args.stamp or str(Path(args.out) / "Functions.h")
    if args.depfile:
        _check_depfile(args.depfile, args.out, [target, *depfile_inputs(inputs)])
    read = input_paths(inputs) + (_root_files(args.pytorch_root) if args.pytorch_root else [])
    before, generator = noop.signatures(read), noop.signatures(noop.generator_files())  # before anything is read
    api_written: list[str] = []

    def finish(result: GenerateResult) -> None:
        """Under the run's lock: everything else the run writes, and the no-op record of exactly its outputs."""
        if args.depfile:
            write_depfile(args.depfile, target, inputs)
        if args.stamp:
            touch(args.stamp)
        outputs = [str(Path(args.out) / rel) for rel in (*result.outputs, MANIFEST)] + [args.depfile] * bool(
            args.depfile
        )
        # one model and plan for both Python writers: the run's, or (an up-to-date run) made at the first need
        planned = functools.cache(functools.partial(run_plan, inputs, options, result))
        if args.python_api:
            outputs += _python_api(args, request, planned, result, api_written)
        if args.python_autograd:
            outputs += _python_autograd(args, request, planned, result)
        stamp = os.path.abspath(args.stamp) if args.stamp else ""
        failed = noop.record(args.argv, args.out, stamp, noop.signatures(outputs) + before, generator)
        if failed:  # never wrong, only slower: the next run checks every input in full
            print(f"vtgen-build: note: the no-op record was not written ({failed}): the next run checks in full",
                  file=sys.stderr)  # fmt: skip

    result = generate(inputs, options, finish)
    for warning in result.warnings:
        print(warning, file=sys.stderr)
    if args.explain:
        for line in result.explanations:
            print(f"regenerated {line}")
    args.summary = result.summary()
    if api_written and result.plan is None:
        args.summary = f"vtgen-build: typed Python API repaired ({len(api_written)} files written); the rest up to date"
    elif api_written:
        args.summary += f"; typed Python API: {len(api_written)} files written"
    print(args.summary)
    return 0


def _python_api(
    args: argparse.Namespace,
    request: BuildRequest,
    planned: Callable[[], RunPlan],
    result: GenerateResult,
    written: list[str],
) -> list[str]:
    """Write the typed Python API when the inputs changed or a file of it is not what the last run wrote
    (missing or edited), adding the files written to ``written``; its paths."""
    from ..engine.python_api import API_FILES, api_intact, write_python_api

    paths = [str(Path(args.python_api) / name) for name in API_FILES]
    if result.mode != "up-to-date" or not api_intact(args.python_api, args.out):
        # the shims the library defines: an op library's (classic: AOTIShims.cpp, the rule of
        # emit.files.library_files; stable: its Register<Key>.cpp)
        keys = request.register_backends if request.op_library else ()
        written += write_python_api(
            planned(),
            args.python_api,
            allow_overwrite=args.allow_overwrite,
            record_in=args.out,
            register_backends=keys,
            batching_rules=request.stable is None,  # the stable mode's are its Python autograd module's
        )
    return paths


def _python_autograd(
    args: argparse.Namespace, request: BuildRequest, planned: Callable[[], RunPlan], result: GenerateResult
) -> list[str]:
    """Write the Python autograd module when the inputs changed or the module is not what the last run wrote
    from the formulas module as it is (``autograd_intact``); the paths the no-op record watches."""
    from ..engine.python_autograd import autograd_intact, write_python_autograd

    # a stable-ABI library's Autocast kernels are Python, in this module (a classic one's are C++)
    keys = request.register_backends if request.stable is not None else ()
    if result.mode != "up-to-date" or not autograd_intact(args.python_autograd, args.python_formulas, keys, args.out):
        write_python_autograd(planned(), args.python_autograd, args.python_formulas, autocast_backends=keys,
                              record_in=args.out)  # fmt: skip
    return [args.python_autograd] + ([args.python_formulas] if args.python_formulas else [])


MAX_JOBS = 1024
MAX_TIMEOUT = 86400  # a day per entry: beyond it, a typo
# OpInfo samples per check of the Python tier's whole-yaml coverage unless --max-samples says: the
# question is which kernels a passing check verifies; every sample of every OpInfo took 13.5 min there
PYTHON_COVERAGE_SAMPLES = 2


def _check_ranges(args: argparse.Namespace) -> None:
    """``check``'s numbers in range, and the ``--gradcheck`` options only with ``--gradcheck``."""
    if not 0 <= args.jobs <= MAX_JOBS:
        raise VtgenError(f"-j/--jobs must be between 0 (one per core) and {MAX_JOBS}, got {args.jobs}")
    if args.max_samples is not None and args.max_samples < 0:
        raise VtgenError(f"--max-samples must be 0 (every sample) or more, got {args.max_samples}")
    if not 1 <= args.timeout <= MAX_TIMEOUT:
        raise VtgenError(f"--timeout must be between 1 and {MAX_TIMEOUT} seconds, got {args.timeout}")
    if not args.gradcheck:
        given = [f for f, v in (("--python", args.python), ("--max-samples", args.max_samples),
                                ("--timeout", args.timeout != 300),
                                ("--no-bind-hidden", not args.bind_hidden), ("--library", args.library),
                                ("--hints", args.hints), ("--coverage", args.coverage),
                                ("--allow-unverified", args.allow_unverified),
                                ("--no-batched-grad", not args.batched_grad),
                                ("--shard", args.shard), ("--watch", args.watch), ("--all-checks", args.all_checks),
                                ("--no-worker", not args.use_worker),
                                ("--tier", args.tier != "compiled")) if v]  # fmt: skip
        if given:
            raise VtgenError(f"{given[0]} applies to --gradcheck only")


def _check_depfile(depfile: str, out: str, named: list[str]) -> None:
    """The depfile must not be one of the run's outputs or records, nor name a path Make cannot spell."""
    real_out, real = os.path.realpath(out), os.path.realpath(depfile)
    rel = os.path.relpath(real, real_out)
    if not rel.startswith(".." + os.sep) and rel != ".." and (is_output_name(rel) or rel.startswith(".vtgen")):
        raise VtgenError(f"--depfile {depfile}: that is a file the generator writes in --out")
    for path in [depfile, *named]:
        if "\n" in path or "\r" in path:
            raise VtgenError(f"--depfile: a depfile cannot name a path holding a line break: {path!r}")


def _root_files(root: str) -> list[str]:
    """What a run reads of ``--pytorch-root`` besides the yaml: its layout, its policy lists, its version."""
    from ..plan.policy import policy_source_files

    base = Path(root)
    versions = [base.parent / "torch" / "version.py", base / "torch" / "version.py", base / "version.txt"]
    return layout_candidates(root) + policy_source_files(root) + [str(p) for p in versions]


def _policy(args: argparse.Namespace, release: str) -> Policy:
    from ..plan.policy import policy_for

    return policy_for(args.pytorch_root, release)


def _print_plans(
    model: Model, plan: Plan, ops: list[str], python_autograd: bool, formulas: str | None, stable: bool = False
) -> int:
    from ..emit.describe import describe_kernel, describe_stable_kernel

    known = {k.op for k in plan.kernels}
    python = _python_description(model, formulas) if python_autograd or stable else _nothing
    describe = describe_stable_kernel if stable else describe_kernel
    for op in ops:
        kernels = plan.by_op(op)
        if not kernels:
            names = {str(f.name) for f in model.native_functions}
            why = "has no Autograd kernel (composite or hand-written)" if op in names else "is not an operator"
            raise VtgenError(f"'{op}' {why}{did_you_mean(op, known | names)}")
        print("\n\n".join("\n".join([describe(k), *python(k)]) for k in kernels))
    return 0


def _nothing(k: KernelPlan) -> list[str]:
    return []


def _python_description(model: Model, formulas: str | None) -> Callable[[KernelPlan], list[str]]:
    """For an op library (one namespace besides aten): the Python each formula becomes."""
    from ..emit.python_autograd import describe_python
    from ..engine.python_autograd import autograd_module

    if len({f.namespace for f in model.native_functions if f.namespace != "aten"}) != 1:
        return lambda k: []
    module = autograd_module(model, formulas)
    return lambda k: describe_python(k, module)


def _run_inspect(args: argparse.Namespace) -> int:
    from ..model import load_model  # not imported for `generate`: its no-op path reads no YAML
    from ..plan.aoti_shims import aten_name_clashes
    from ..plan.kernel import build_plan

    model = load_model(resolve_inputs(args))
    target = _resolve_target(args)
    policy = _policy(args, target.release)
    plan = build_plan(model, policy)  # the checks `generate` runs, for every entry
    stable = make_request(CLI, stable_abi=args.stable_abi, target=target, describe_only=True).stable
    if args.op:
        python = args.python_autograd or args.python_formulas is not None
        return _print_plans(model, plan, args.op, python, args.python_formulas, stable is not None)
    summary: dict[str, object] = {
        "entries": model.entry_count,
        "native_functions": len(model.native_functions),
        "generated_native_functions": sum(f.generated for f in model.native_functions),
        "derivative_entries": len(model.derivatives),
        "tags": len(model.tags),
        "torch_release": f"{target.release} ({target.found}, from {target.source})",
        "policy": policy.source,
    }
    warnings = [s.warning() for s in aten_name_clashes(model.native_functions)]  # whatever the build's devices
    if stable is not None:
        summary["mode"] = f"stable-abi {stable}: no C++ autograd; the Python autograd of derivatives.yaml"
    if args.json:
        print(json.dumps({**summary, "warnings": warnings}, indent=2, sort_keys=True))
    else:
        for key, value in summary.items():
            print(f"{key.replace('_', ' ')}: {value}")
        for warning in warnings:
            print(warning, file=sys.stderr)
    return 0


def _add_check_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = sub.add_parser("check", help="generate, then compile every kernel and Node with a C++ compiler")
    _add_inputs(check)
    g = check.add_argument_group("generated code (as for generate)")
    g.add_argument("--out", metavar="DIR", help="check build directory (default: a cache directory per input set)")
    _add_code_options(g)
    c = check.add_argument_group("compiling")
    c.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="include directory of the manual headers (repeatable)",
    )
    c.add_argument(
        "--std", help="C++ standard (default: what --torch-include's torch needs, from its headers; else c++17)"
    )
    c.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="parallel compiles (default: all cores)")
    c.add_argument("--cxx", metavar="COMPILER", help="C++ compiler (default: $CXX, else g++ or clang++)")
    c.add_argument("--launcher", metavar="CMD", help="compiler launcher: ccache, sccache, distcc, ...")
    c.add_argument("--no-cache", action="store_true", help="compile every unit, even those that passed unchanged")
    c.add_argument("--no-pch", action="store_true", help="no precompiled headers")
    c.add_argument(
        "--op",
        action="append",
        default=[],
        metavar="NAME",
        help="check only this op (add.Tensor, or every overload of add); repeatable",
    )
    c.add_argument("--changed", action="store_true", help="check only the ops changed since the last successful check")
    c.add_argument("--changed-since", metavar="REV",
                   help="check only the ops whose yaml entries (or manual helpers) differ from git revision REV; "
                   "a change to tags.yaml, a template or a renamed input checks every op")  # fmt: skip
    c.add_argument(
        "--torch-include",
        metavar="DIR",
        help="check against a real PyTorch's include dir (<torch>/include) instead of the stubs",
    )
    r = check.add_argument_group("running (--gradcheck)")
    r.add_argument("--gradcheck", action="store_true",
                   help="build the ops against an installed torch and run its OpInfo gradient checks")  # fmt: skip
    r.add_argument("--python", metavar="PY", help="the Python whose torch is used (default: this one)")
    r.add_argument("--max-samples", type=int, default=None, metavar="N",
                   help=f"OpInfo samples per check (0: all; the default, except {PYTHON_COVERAGE_SAMPLES} for "
                        "--coverage --tier python|both's Python tier)")  # fmt: skip
    r.add_argument("--timeout", type=int, default=300, metavar="SECONDS",
                   help="time limit per entry (an OpInfo, or an op's schema samples), enforced from outside "
                        "the process: an entry past it (a kernel spinning in C++) is killed and fails "
                        "(default: 300)")  # fmt: skip
    r.add_argument("--no-bind-hidden", dest="bind_hidden", action="store_false",
                   help="leave out kernels calling helpers libtorch hides (default: call libtorch's)")  # fmt: skip
    r.add_argument("--library", metavar="SO|PACKAGE",
                   help="check an op library's own ops: the shared library its build produced, or a package that "
                        "loads it (schema-driven samples)")  # fmt: skip
    r.add_argument("--hints", action="append", default=[], metavar="FILE",
                   help="sample hints of constrained inputs (yaml, repeatable; docs/gradcheck-samples.md)")  # fmt: skip
    r.add_argument("--coverage", metavar="JSON",
                   help="every op: which derivatives.yaml formulas ran in a passing check (JSON here)")  # fmt: skip
    r.add_argument("--no-batched-grad", dest="batched_grad", action="store_false",
                   help="leave out the batched (vmap) part of the gradient checks (default: where PyTorch's "
                        "tests run it, and for schema and captured samples)")  # fmt: skip
    r.add_argument("--shard", metavar="K/N",
                   help="check only part K of N of the selected ops (balanced by cost; the --coverage JSONs of the "
                        "N parts join with `vtgen-build coverage merge`)")  # fmt: skip
    r.add_argument("--verbose", action="store_true",
                   help="list every op and sample checked (with --format: a note per op)")  # fmt: skip
    r.add_argument("--watch", action="store_true",
                   help="check again on every save of the yaml, the manual helpers and the hints, through a warm "
                        "worker (Ctrl-C stops)")  # fmt: skip
    r.add_argument("--all-checks", action="store_true",
                   help="run every check even after a failure (default: the verdict comes at the first failure "
                        "confirmed as ours; the cheapest checks run first: the op's own samples, float64)")  # fmt: skip
    r.add_argument("--no-worker", dest="use_worker", action="store_false",
                   help="start a new Python for each gradcheck process even when a worker is up for --out "
                        "(`vtgen-build worker start`)")  # fmt: skip
    r.add_argument("--tier", choices=("both", "python", "compiled"), default="compiled",
                   help="which tier checks PyTorch's yaml for the --op selection, or an op library's (--library): the "
                        "compiled one (default), the "
                        "Python tier (the formulas translated to Python on the installed torch, nothing compiled), or "
                        "both (the Python tier's verdict first, marked [python tier]; the exit status is the compiled "
                        "tier's)")  # fmt: skip
    r.add_argument("--python-formulas", metavar="FILE", dest="tier_formulas",  # the Python tier's, not generate's
                   help="with --library and --tier python|both: the library's module of Python equivalents of the "
                        "C++ helpers its formulas call (as generate --python-formulas)")  # fmt: skip
    r.add_argument("--allow-unverified", action="store_true",
                   help="exit 0 when a selected op is not verified (CUDA-only, sparse, random, ...)")  # fmt: skip
    _add_format(check)
    check.set_defaults(run=_run_check)


def _run_check(args: argparse.Namespace) -> int:
    from ..check import default_check_dir, run_check
    from ..model.schema import op_selection

    _check_ranges(args)
    inputs = resolve_inputs(args)
    args.anchor = inputs.derivatives
    args.ops = op_selection(args.op, inputs.namespace)  # the --op names, read once: the options hold these
    manual_file = find_pytorch_layout(args.pytorch_root).manual_header if args.pytorch_root else None
    # once: the default --out only names a directory
    gen_options = _generate_options(args, _request(args))
    if not args.out:
        args.out = default_check_dir(inputs, gen_options)
    gen_options = replace(gen_options, out_dir=args.out)
    since = _changes_since(args, inputs, manual_file) if args.changed_since else None
    manual_file = None if args.manual_header else manual_file  # the user's own headers: found through -I
    if args.watch:  # each run is this one without --watch: with --tier, the Python tier's verdict first
        return _watch_check(args, inputs, manual_file)
    if args.gradcheck:
        tier = _python_tier(args, inputs, gen_options)
        if args.tier == "python" and tier is not None:
            args.summary = tier.render().rsplit("\n", 1)[-1]
            return tier.status
        report = _run_gradcheck(args, inputs, gen_options, manual_file, since)
        args.summary = report.render().rsplit("\n", 1)[-1]
        args.found += from_gradcheck_report(report, verbose=args.verbose)
        if tier is not None and args.coverage:
            _coverage_per_tier(tier, args.coverage, report)
        return _both_tiers(tier, report)
    result = run_check(inputs, gen_options, _check_options(args, manual_file, since))
    args.summary = result.summary()
    args.found += [d for u in result.units for d in from_compiler_output(u.diagnostics, u.unit, not u.ok)]
    print(args.summary, file=sys.stdout if result.ok else sys.stderr)
    return 0 if result.ok else 1


def _tier_reach(library: bool, coverage: bool, op: bool) -> Reach:
    """The reach map the Python tier's captured checks read (the compiled tier's entries per op go with it):
    none for an op library's yaml; computed when not cached for ``--coverage`` of the whole yaml (its minutes
    pay off); a cached one only for ``--op`` runs."""
    from ..gradcheck.python_tier_run import Reach

    return Reach.NONE if library else Reach.COMPUTE if coverage and not op else Reach.CACHED


def _python_tier(args: argparse.Namespace, inputs: Inputs, gen_options: GenerateOptions) -> TierReport | None:
    """The Python tier's verdict, printed first (None: ``--tier compiled``); asked for where it cannot run
    (an op library, a run selecting ops by neither ``--op`` nor ``--coverage``), an error."""
    from ..gradcheck.python_tier_run import TierOptions, run_python_tier

    if args.tier_formulas and not (args.library and args.tier != "compiled"):
        raise VtgenError("--python-formulas applies to the Python tier of an op library: --library with --tier "
                         "python|both")  # fmt: skip
    if args.tier == "compiled":
        return None
    coverage = bool(args.coverage)  # the whole yaml (or the --op ones)
    library = _library_tier(args, gen_options) if args.library else None
    whole = [o for o, v in (("--coverage", coverage and library is not None),
                            ("--changed with --coverage", args.changed and coverage and library is None),
                            ("--changed-since", args.changed_since),
                            ("--shard", args.shard and not (coverage and library is None and args.tier == "python")))
             if v]  # fmt: skip
    selected = args.op or coverage or args.changed
    if whole or (library is None and (not selected or inputs.namespace != "aten")):  # said, never skipped
        why = (whole[0] if whole else "a run without --op, --changed or --coverage" if not selected
               else "an op library's yaml (--library?)")  # fmt: skip
        raise VtgenError(f"--tier {args.tier}: the Python tier checks PyTorch's yaml for the ops --op names, those "
                         f"changed (--changed) or --coverage, or an op library's (--library), not {why}")  # fmt: skip
    options = TierOptions(
        ops=_tier_ops(args, inputs, coverage and library is None), python=args.python,
        pytorch_root=args.pytorch_root, hints=tuple(args.hints), timeout=args.timeout, batched=args.batched_grad,
        allow_unverified=args.allow_unverified, all_checks=args.all_checks or coverage, use_worker=args.use_worker,
        max_samples=(PYTHON_COVERAGE_SAMPLES if coverage else 0) if args.max_samples is None else args.max_samples,
        library=library, changed=args.changed, versions=args.versions,
        reach=_tier_reach(library is not None, coverage, bool(args.op)), reach_limit=1 if coverage else 2,
    )  # fmt: skip
    try:
        tier = run_python_tier(inputs, Path(gen_options.out_dir).resolve(), gen_options.request.target.release, options)
    except VtgenError as exc:
        if args.tier == "python":
            raise
        print(
            f"vtgen-build: note: [python tier] did not run ({exc.message}); the compiled tier answers", file=sys.stderr
        )
        return None
    if coverage:
        _python_coverage(tier, _python_json(args), args.verbose, alone=args.tier == "python")
    else:
        print(tier.render(), file=sys.stdout if tier.status == 0 else sys.stderr, flush=True)
    return tier


def _library_tier(args: argparse.Namespace, gen_options: GenerateOptions) -> LibraryTier:
    """``--library`` through the Python tier: the library's Python helpers (``--python-formulas``), and the C++
    helper files they mirror (``--manual-header`` found through ``-I``: in the ``--changed`` digests)."""
    from ..check import helper_files
    from ..gradcheck.python_tier_run import LibraryTier

    if args.changed and args.tier == "both":
        raise VtgenError("--changed with --library: --tier python only (the compiled tier checks a built library)")
    if args.library != "torch" and os.sep in args.library and not Path(args.library).is_file():
        raise VtgenError(f"--library {args.library}: no such file (build the library first)")
    helpers = tuple(str(p) for p in helper_files(args.include_dirs, args.manual_header, None) if p.is_file())
    if args.tier_formulas and args.manual_header and not helpers:
        print(f"vtgen-build: note: [python tier] --manual-header {args.manual_header[0]} not found through -I: an "
              "edit of it is not seen until the library is rebuilt", file=sys.stderr)  # fmt: skip
    return LibraryTier(args.library, args.tier_formulas, helpers, gen_options.policy_root)


def _tier_ops(args: argparse.Namespace, inputs: Inputs, whole_yaml: bool) -> tuple[OpSelector, ...]:
    """The Python tier's selection: the --op ones, else (--coverage) every op with a derivatives.yaml entry;
    with --shard K/N (--tier python), part K of them."""
    from ..gradcheck import parse_shard
    from ..gradcheck.python_tier import entry_ops
    from ..gradcheck.python_tier_coverage import shard_ops
    from ..model.schema import op_selection

    ops: tuple[OpSelector, ...] = args.ops or (op_selection(entry_ops(inputs), inputs.namespace) if whole_yaml else ())
    if not args.shard:
        return ops
    mine = set(shard_ops([s.name for s in ops], *parse_shard(args.shard)))
    return tuple(s for s in ops if s.name in mine)


def _python_json(args: argparse.Namespace) -> str:
    """Where the Python tier's coverage JSON goes: --coverage's file (--tier python); beside it, named
    ``NAME.python.json``, when the compiled tier's report takes that file (--tier both)."""
    path = Path(args.coverage)
    return str(path.with_name(f"{path.stem}.python{path.suffix or '.json'}")) if args.tier == "both" else str(path)


def _python_coverage(tier: TierReport, path: str, verbose: bool, alone: bool) -> None:
    """``--coverage JSON --tier python``: the failures (every verdict with ``--verbose``), the per-tier counts,
    the JSON of which tier verifies each entry."""
    from ..base.write import write_atomic
    from ..gradcheck.python_tier_coverage import entry_tiers, render, to_json
    from ..gradcheck.records import FAILED

    entries = entry_tiers(tier)
    write_atomic(Path(path), to_json(tier, entries))
    shown = [str(v) for v in tier.verdicts if verbose or v.status == FAILED]
    text = "\n".join([*shown, render(tier, entries, path, alone), tier.render().rsplit("\n", 1)[-1]])
    print(text, file=sys.stdout if tier.status == 0 else sys.stderr, flush=True)


def _coverage_per_tier(tier: TierReport, path: str, report: Report) -> None:
    """``--coverage --tier both``: which tier verified each entry, read from the two coverage JSONs' entries."""
    from ..gradcheck.coverage import from_json
    from ..gradcheck.python_tier_coverage import both_tiers, entry_tiers
    from ..gradcheck.python_tier_run import disagreements

    compiled = from_json(Path(path).read_text(encoding="utf-8"), path).entries
    clashes = disagreements(tier, report.passed_ops, report.failed_ops)
    print(both_tiers(entry_tiers(tier), compiled, len(clashes)), flush=True)


def _both_tiers(tier: TierReport | None, report: Report) -> int:
    """The compiled tier's exit status; an error (1) when the tiers disagree on an op both judged."""
    from ..gradcheck.python_tier_run import disagreements

    clashes = disagreements(tier, report.passed_ops, report.failed_ops) if tier is not None else []
    for clash in clashes:
        print(clash, file=sys.stderr)
    return report.status or (1 if clashes else 0)


def _check_options(args: argparse.Namespace, manual_file: str | None, since: Changes | None) -> CheckOptions:
    """``check``'s options, as one typed record (the check room never sees the command line)."""
    from ..check import CheckOptions

    return CheckOptions(
        std=args.std,
        jobs=args.jobs,
        launcher=args.launcher,
        cxx=args.cxx,
        ops=args.ops,
        changed=args.changed,
        torch_include=args.torch_include,
        include_dirs=tuple(args.include_dirs),
        manual_header_file=manual_file,
        cache=not args.no_cache,
        pch=not args.no_pch,
        since=since,
    )


def _run_gradcheck(
    args: argparse.Namespace,
    inputs: Inputs,
    gen_options: GenerateOptions,
    manual: str | None,
    since: Changes | None,
) -> Report:
    """``check --gradcheck``: run, print the failures and the summary; the report, whose ``status`` is the
    exit status: 1 on a failed check, 3 when a selected op with a formula was verified by no passing check
    (unless ``--allow-unverified``), else 0."""
    from ..gradcheck import run_gradcheck, run_library

    if args.library and args.shard:
        raise VtgenError("--shard: parts of a run of PyTorch's yaml (or an op set) only, not of --library")
    if args.coverage and args.changed and not args.library:
        raise VtgenError("--coverage reports on every op or on the --op ones: leave out --changed")
    if args.library:
        work = Path(gen_options.out_dir).resolve() / ".vtgen-gradcheck"
        library = _library_options(args)
        report = run_library(inputs, work, gen_options.request.target.release, gen_options.policy_root, library)
    else:
        report = run_gradcheck(inputs, gen_options, _gradcheck_options(args, inputs, manual, since))
    print(report.render(verbose=args.verbose), file=sys.stdout if report.ok else sys.stderr)
    return report


def _gradcheck_options(
    args: argparse.Namespace, inputs: Inputs, manual: str | None, since: Changes | None
) -> GradcheckOptions:
    from ..gradcheck import GradcheckOptions, parse_shard

    return GradcheckOptions(
        check=_check_options(args, manual, since),  # the ops (mylib::op or op) and how their units compile
        python=args.python,
        max_samples=args.max_samples or 0,
        timeout=args.timeout,
        bind_hidden=args.bind_hidden,
        pytorch_root=args.pytorch_root,
        hints=tuple(args.hints),
        allow_unverified=args.allow_unverified,
        coverage=args.coverage,
        batched=args.batched_grad,
        shard=parse_shard(args.shard) if args.shard else None,
        use_worker=args.use_worker,
        versions=args.versions,
        all_checks=args.all_checks,
        reach_limit=1 if args.coverage else 2,  # every op: the most specific entry reaching each
    )


def _library_options(args: argparse.Namespace) -> LibraryOptions:
    """``--library``'s options.  An option it would ignore is an error, not a silent no-op: these shape the
    OpInfo run or the library ``--gradcheck`` builds, and ``--library`` checks a built library on schema samples."""
    from ..gradcheck import LibraryOptions

    given = (
        ("--coverage", args.coverage, "it reports which formulas OpInfo samples ran, and --library runs none"),
        ("--max-samples", args.max_samples, "it limits OpInfo samples; --library runs samples made from the schemas"),
        ("--changed", args.changed, "it selects by the library --gradcheck builds; name the ops with --op"),
        ("--changed-since", args.changed_since, "it selects by the library --gradcheck builds; name the ops with --op"),
        ("--no-bind-hidden", not args.bind_hidden, "it shapes the library --gradcheck builds; --library loads yours"),
        ("--all-checks", args.all_checks, "--library runs every check of every op anyway"),
    )
    for option, value, why in given:
        if value:
            raise VtgenError(f"{option} cannot be used with --library: {why}")
    return LibraryOptions(
        library=args.library,
        ops=args.ops,
        hints=tuple(args.hints),
        python=args.python,
        timeout=args.timeout,
        batched=args.batched_grad,
        allow_unverified=args.allow_unverified,
        use_worker=args.use_worker,
        versions=args.versions,
    )


def _watch_check(args: argparse.Namespace, inputs: Inputs, manual_file: str | None) -> int:
    """``check --gradcheck --watch``: the same check on every save of what it reads."""
    from .watch import watch

    given = [o for o, v in (("--format", args.format != "text"), ("--coverage", args.coverage),
                            ("--shard", args.shard), ("--changed-since", args.changed_since)) if v]  # fmt: skip
    if given:
        raise VtgenError(f"{given[0]} cannot be used with --watch: it checks the files as they are, verdict by verdict")
    from ..check import helper_files, helper_roots
    from ..gradcheck.manual_source import find_manual_source
    from ..torchlib import locate_torch

    files = [inputs.native_functions, inputs.derivatives, *([inputs.tags] if inputs.tags else [])]
    torch = locate_torch(args.python).include_dirs if args.manual_header else ()  # where else a helper is found
    helpers = helper_files(helper_roots(args.include_dirs, torch), args.manual_header, manual_file)  # --changed's
    manual = find_manual_source(args.pytorch_root) if args.gradcheck else None  # built in, whatever the headers
    files += [str(p) for p in dict.fromkeys([*helpers, *([manual.path] if manual else [])])]
    files += list(args.hints)
    once = argparse.Namespace(**{**vars(args), "watch": False})

    def run() -> int:
        once.found = []
        return _run_check(once)

    return watch(files, Path(args.out), args.python or sys.executable, run, args.use_worker, args.versions)


def _add_worker_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..worker import IDLE

    worker = sub.add_parser("worker", help="the warm gradcheck worker of a check directory (start, stop, status)")
    worker.add_argument("action", choices=("start", "stop", "status"))
    worker.add_argument("--out", required=True, metavar="DIR", help="the check directory (check's --out)")
    worker.add_argument("--python", metavar="PY", help="the Python whose torch is used (default: this one)")
    worker.add_argument("--idle", type=float, default=IDLE, metavar="SECONDS",
                        help=f"start: it leaves after this long unused (default {IDLE}; 0: never)")  # fmt: skip
    worker.set_defaults(run=_run_worker)


def _run_worker(args: argparse.Namespace) -> int:
    """``worker start|stop|status``; status: 0 a current worker, 3 none usable (none, stale or silent)."""
    from ..worker import look, start, stop

    out, python = Path(args.out).resolve(), args.python or sys.executable
    if args.action == "start":
        worker = start(out, python, idle=args.idle, versions=args.versions)
        print(f"vtgen-build: the gradcheck worker of {out} is up (process {worker.pid})")
    elif args.action == "stop":
        print(f"vtgen-build: {stop(out).sentence(out)}")
    else:
        seen = look(out, python, args.versions)
        process = f" (process {seen.pid})" if seen.pid else ""
        if seen.worker is not None:
            print(f"vtgen-build: a current gradcheck worker{process} for {out}")
        elif seen.stale:
            print(f"vtgen-build: a stale gradcheck worker{process} for {out}: {seen.problem} (the next check stops it)")
        elif seen.problem:
            print(f"vtgen-build: the gradcheck worker of {out}{process} {seen.problem}: `worker stop` kills it")
        else:
            print(f"vtgen-build: no gradcheck worker for {out}")
        return 0 if seen.worker is not None else 3
    return 0


def _changes_since(args: argparse.Namespace, inputs: Inputs, manual_file: str | None) -> Changes:
    """``--changed-since``: what differs from the revision; the helper files are the manual headers found."""
    from ..revisions import changes_since

    helpers = [str(p) for p in _helpers_read(args, manual_file) if p.is_file()]
    changes = changes_since(args.changed_since, inputs, helpers, args.pytorch_root)
    if changes.everything is not None:
        print(f"vtgen-build: note: --changed-since {args.changed_since}: every op is checked: {changes.everything}",
              file=sys.stderr)  # fmt: skip
    return changes


def check_files(check_args: Sequence[str]) -> list[str]:
    """The files a ``check`` with these options reads that a commit can touch: the yaml and manual helpers.

    For adapters (lintrunner, pre-commit) deciding whether a list of edited files concerns the check.
    """
    try:
        args = _parser().parse_args(["check", *check_args])
    except SystemExit:  # argparse said why on stderr
        raise VtgenError(f"invalid check options: {' '.join(check_args)}") from None
    inputs = resolve_inputs(args)
    manual = find_pytorch_layout(args.pytorch_root).manual_header if args.pytorch_root else None
    files = [inputs.native_functions, inputs.derivatives, *([inputs.tags] if inputs.tags else [])]
    files += [str(p) for p in _helpers_read(args, manual)]
    return [os.path.realpath(f) for f in files]


def _helpers_read(args: argparse.Namespace, manual_file: str | None) -> list[Path]:
    """The hand-written helper files a check may compile that a commit can touch (existing or not): each
    ``--manual-header`` under each ``-I`` (else ``--pytorch-root``'s FunctionsManual.h), the ``.cpp`` beside
    each, and the checkout's FunctionsManual.cpp ``--gradcheck`` builds in whatever the headers.  The torch
    compiled against is the environment, not the revision's (``--changed``'s digests hold its headers)."""
    from ..check import helper_files
    from ..gradcheck.manual_source import find_manual_source

    headers = helper_files(args.include_dirs, args.manual_header, None if args.manual_header else manual_file, False)
    source = find_manual_source(args.pytorch_root)
    found = [*headers, *(h.with_suffix(".cpp") for h in headers), *([source.path] if source else [])]
    return list(dict.fromkeys(found))
