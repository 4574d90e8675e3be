"""The one helper that edits formulas of the real derivatives.yaml for the gradcheck edit tests."""

from __future__ import annotations

import pytest

from tests.conftest import RealYaml
from tests.edited_checkout import Edit, edit_formula
from tests.test_gradcheck_batched import RANDOM_EDIT, VMAP_EDITS
from tests.test_gradcheck_formulas import EDITS as FORMULA_EDITS
from tests.test_gradcheck_norm_samples import EDITS as NORM_EDITS
from tests.test_gradcheck_reach import EDITS as REACH_EDITS
from tests.test_gradcheck_reach import LATER
from tests.test_python_tier import PLANTS

YAML = """\
- name: twice.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  self: grad * 2
- name: twice(Tensor self) -> Tensor
  self: grad * 2
  result: self_t * 2
- name: thrice.Tensor(Tensor self) -> Tensor
  self: "grad
         * 3"
- name: other(Tensor self) -> Tensor
  self: grad * 2
"""


def test_the_edit_is_made_in_its_own_entry_only() -> None:
    """The entry named exactly, not an overload above it; a line start replaced, the rest kept; a bare
    name without its own entry: the first overload; a multi-line formula's line is where it starts."""
    text, line = edit_formula(YAML, Edit("twice", "", "  self: grad *", "  self: -grad *"))
    assert (text.splitlines()[line - 1], line) == ("  self: -grad * 2", 4)
    assert text.replace("-grad", "grad", 1) == YAML
    text, line = edit_formula(YAML, Edit("thrice", "", '         * 3"', '         * 4"', starts=1))
    assert (text.splitlines()[line - 1 : line + 1], line) == (['  self: "grad', '         * 4"'], 7)


@pytest.mark.parametrize(
    "edit",
    [
        Edit("twice", "", "  other: grad", "  other: -grad"),  # no such line
        Edit("thrice", "", "  result: self_t", "  result: -self_t"),  # in another entry only
        Edit("twice", "", "  ", "  "),  # more than one line
        Edit("never", "", "  self: grad", "  self: -grad"),  # no such entry
    ],
)
def test_an_edit_that_does_not_find_one_line_is_refused(edit: Edit) -> None:
    with pytest.raises(AssertionError):
        edit_formula(YAML, edit)


def test_every_edit_of_the_gradcheck_tests_applies_to_the_real_yaml(real_yaml: RealYaml) -> None:
    """Said here in a second, not after a slow session fixture has started (the yaml moves on)."""
    real = real_yaml.derivatives.read_text(encoding="utf-8")
    shared = (*REACH_EDITS, *FORMULA_EDITS, *NORM_EDITS, LATER)  # one checkout: edited_real_yaml, conftest.py
    assert len({e.op for e in shared}) == len(shared)  # no op edited twice: each test finds its own lines
    for edits in (shared, (*VMAP_EDITS, RANDOM_EDIT), PLANTS):
        text = real
        for edit in edits:
            text, line = edit_formula(text, edit)
            assert text.split("\n")[line - 1 + edit.starts].startswith(edit.new), edit
