"""How many of PyTorch's own derivatives.yaml formulas the Python formula translator accepts.

Every formula (backward and forward, every autograd key) of the installed torchgen's
``packaged/autograd/derivatives.yaml`` is parsed and translated to Python twice:

- *grammar*: every free function the yaml calls counts as a known helper (what the
  translator spells, whatever the helpers resolve to);
- *self-contained*: only the helpers every generated module carries resolve (a library
  would declare the rest as its own ops or in its formulas module).

Prints both shares and the most common reasons a formula is refused.
Usage: python bench/bench_formula_reach.py [--yaml PATH] [--top N]
"""

from __future__ import annotations

import argparse
import collections
import os
import re

from common import default_root

from vtgen_build.inputs.load import load_entries
from vtgen_build.model.derivatives import DerivativeEntry, Formula, output_names
from vtgen_build.translate.cpp_expr import Call, ExprError, Name, Node, parse_expression
from vtgen_build.translate.python_formula import Scope, translate


def _names(entry: DerivativeEntry) -> frozenset[str]:
    args = [a.name for a in entry.schema.arguments.all]
    outs = list(output_names(entry.schema))
    derived = [f"{n}_{s}" for n in args + outs for s in ("t", "p")]
    named = [f"grad_{r.name}" for r in entry.schema.returns if r.name]
    extra = ["grad", "grads", "grad_input_mask", "result", "original_self_p", "original_self_t", "self_t_raw"]
    foreach = ["i"] if str(entry.schema.name).startswith("_foreach_") else []  # per-tensor index
    return frozenset(args + outs + derived + named + extra + foreach)


def _calls(node: object, found: set[str]) -> None:
    if isinstance(node, Call) and isinstance(node.func, Name) and "::" not in node.func.text:
        found.add(node.func.text)
    for value in getattr(node, "__dict__", {}).values():
        for child in value if isinstance(value, tuple) else (value,):
            if hasattr(child, "offset"):
                _calls(child, found)


def _formulas(entries: tuple[DerivativeEntry, ...]) -> list[tuple[DerivativeEntry, Formula]]:
    found = []
    for e in entries:
        for s in e.formula_sets:
            found += [(e, f) for f in s.formulas if not f.is_non_differentiable and f.expression not in _AUTO]
    return found


_AUTO = ("auto_element_wise", "auto_linear")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--yaml", default=os.path.join(default_root(), "packaged/autograd/derivatives.yaml"))
    parser.add_argument("--top", type=int, default=12)
    opts = parser.parse_args()
    entries = tuple(DerivativeEntry.parse(e) for e in load_entries(opts.yaml))
    formulas = _formulas(entries)
    helpers: set[str] = set()
    parsed: dict[int, Node] = {}
    for i, (_, f) in enumerate(formulas):
        try:
            parsed[i] = parse_expression(f.expression)
            _calls(parsed[i], helpers)
        except ExprError:
            pass
    for label, user in (("grammar", frozenset(helpers)), ("self-contained", frozenset())):
        reasons: collections.Counter[str] = collections.Counter()
        ok = 0
        for i, (entry, f) in enumerate(formulas):
            try:
                tree = parsed[i] if i in parsed else parse_expression(f.expression)
                translate(tree, Scope(_names(entry), "ns", user_functions=user))
                ok += 1
            except ExprError as exc:
                reasons[re.sub(r"'[^']*'", "'…'", exc.message.split(";")[0])] += 1
        print(f"{label}: {ok}/{len(formulas)} formulas translate ({100 * ok / len(formulas):.1f}%)")
        for reason, count in reasons.most_common(opts.top):
            print(f"  {count:5d}  {reason}")
    counted = "non_differentiable and auto_* not counted"
    print(f"({len(formulas)} formulas of {len(entries)} entries in {opts.yaml}; {counted})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
