"""The formula translator: a derivatives.yaml formula (C++) as a Python expression over torch.

Its users (the stable mode's generated Python autograd in ``emit``, the Python tier of
``check --gradcheck``, the op-library tier) import this package only, never its modules:

- the formula tree (``cpp_expr``): ``parse_expression`` and ``ExprError`` (a message at an offset);
- its Python spelling (``python_formula``): ``translate``/``translate_formula`` in a ``Scope``,
  ``PRELUDE_HELPERS`` (the helpers of PyTorch's formulas a formula may call) and ``MANUAL_PRELUDE_HELPERS``
  (those of them FunctionsManual.cpp defines);
- a derivative's formulas (``formulas``): ``python_formulas``, ``forward_python``,
  ``formula_scope``, ``formula_error`` (errors at their yaml column), over a ``Vocabulary``;
- the names a generated module reserves and how user text enters its source
  (``python_names``): ``py_name``, ``attribute``, ``comment``, ``string``, ``op_identifiers``,
  ``private_name_error``, ``MODULE_GLOBALS``, ``RESERVED_LOCALS``, ``AUTOCAST_GLOBALS``;
- the helper table (``python_prelude``): ``HELPERS`` and ``prelude``, the helpers a module's
  text uses.

May import: ``base``, ``inputs``, ``model``, ``plan``.
"""

from __future__ import annotations

from .cpp_expr import ExprError, parse_expression
from .formulas import Vocabulary, formula_error, formula_scope, forward_python, integer_arguments, python_formulas
from .python_formula import MANUAL_PRELUDE_HELPERS, PRELUDE_HELPERS, Scope, translate, translate_formula
from .python_names import (
    AUTOCAST_GLOBALS,
    MODULE_GLOBALS,
    RESERVED_LOCALS,
    attribute,
    comment,
    op_identifiers,
    private_name_error,
    py_name,
    string,
)
from .python_prelude import HELPERS, elementwise_batched_rule, prelude

__all__ = [
    "AUTOCAST_GLOBALS",
    "HELPERS",
    "MANUAL_PRELUDE_HELPERS",
    "MODULE_GLOBALS",
    "PRELUDE_HELPERS",
    "RESERVED_LOCALS",
    "ExprError",
    "Scope",
    "Vocabulary",
    "attribute",
    "comment",
    "elementwise_batched_rule",
    "formula_error",
    "formula_scope",
    "forward_python",
    "integer_arguments",
    "op_identifiers",
    "parse_expression",
    "prelude",
    "private_name_error",
    "py_name",
    "python_formulas",
    "string",
    "translate",
    "translate_formula",
]
