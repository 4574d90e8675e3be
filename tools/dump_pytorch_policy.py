"""Regenerate vtgen_build/data/pytorch_policy.yaml from an installed torchgen.

The policy file lists operator names PyTorch treats specially (facts, not code):
run ``python tools/dump_pytorch_policy.py > vtgen_build/data/pytorch_policy.yaml``.
"""

from __future__ import annotations

import os
import sys

import torchgen
import yaml
from torchgen.api import autograd as aa
from torchgen.packaged.autograd import gen_inplace_or_view_type as giv
from torchgen.packaged.autograd import gen_trace_type as gtt
from torchgen.packaged.autograd import gen_variable_type as gvt


def _tags() -> list[str]:
    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "tags.yaml")
    with open(path, encoding="utf-8") as handle:
        return [entry["tag"] for entry in yaml.safe_load(handle)]


def main() -> None:
    lists = {
        "manual_backend": gtt.MANUAL_BACKEND,
        "manual_autograd_and_tracer": gtt.MANUAL_AUTOGRAD_AND_TRACER,
        "dont_require_derivative": gvt.DONT_REQUIRE_DERIVATIVE,
        "gradient_implemented_for_complex": gvt.GRADIENT_IMPLEMENTED_FOR_COMPLEX,
        "reset_grad_accumulator": gvt.RESET_GRAD_ACCUMULATOR,
        "dont_enforce_same_tensor_impl_or_storage": gvt.DONT_ENFORCE_SAME_TENSOR_IMPL_OR_STORAGE,
        "dont_enforce_tensor_impl_use_count": gvt.DONT_ENFORCE_TENSOR_IMPL_USE_COUNT,
        "dont_enforce_storage_impl_use_count": gvt.DONT_ENFORCE_STORAGE_IMPL_USE_COUNT,
        "returns_views_of_input": giv.RETURNS_VIEWS_OF_INPUT,
        "foreach_with_inplace_ref": aa._foreach_with_inplace_ref,
        "foreach_with_tensor_overload": aa._foreach_with_tensor_overload,
        "foreach_skip_argument_len_check": aa._skip_argument_len_check,
        "view_functions_with_metadata_change": giv.VIEW_FUNCTIONS_WITH_METADATA_CHANGE,
        "pytorch_tags": _tags(),  # the at::Tag enum: the tags a schema registration may name
    }
    out = sys.stdout
    out.write("# Operator names PyTorch's autograd codegen treats specially (facts of PyTorch 2.13).\n")
    out.write("# Regenerate with tools/dump_pytorch_policy.py.\n")
    for key, names in lists.items():
        out.write(f"{key}:\n")
        for name in sorted(names):
            out.write(f"  - '{name}'\n")
    out.write("view_functions:\n")
    for name, arg in sorted(giv.VIEW_FUNCTIONS.items()):
        out.write(f"  '{name}': '{arg}'\n")


if __name__ == "__main__":
    main()
