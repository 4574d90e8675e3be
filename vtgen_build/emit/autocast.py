"""Spelling the classic mode's Autocast kernels, in the ``Register<Device>.cpp`` of their device.

The decisions are ``plan/autocast.py``'s.  Each kernel is boxed (the schema's own arguments on the
stack, keyword-only and out= ones included, whatever their types): it excludes its Autocast key,
casts the planned stack entries with ``at::autocast::cached_cast`` (PyTorch's own cast: floating
tensors of the device, never ``float64``, the cast of a leaf weight cached for the autocast region)
and calls the operator again, which dispatches below autocast.
"""

from __future__ import annotations

from ..plan.autocast import AutocastKernel, AutocastPlan
from .schema import boxed_impl_blocks

__all__ = ["AUTOCAST_INCLUDES", "autocast_kernels", "autocast_registrations"]

# vtgen_build's stub headers do not model autocast: against them (`vtgen-build check` without
# --torch-include) the autocast part of a unit is left out; builds against torch compile all of it.
_HAS_AUTOCAST = "#if __has_include(<ATen/autocast_mode.h>)"
AUTOCAST_INCLUDES = f"""{_HAS_AUTOCAST}  // not in vtgen_build's stub headers: the autocast parts are left out there
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#endif"""

_POLICY = {"fp32": "kFloat32", "promote": "kPromote", "lower": "kLower"}

_HELPERS = """// -- autocast: cast the floating tensors an op reads, then call it again below autocast ----------
enum class AutocastPolicy { kFloat32, kPromote, kLower };

at::ScalarType autocast_widest(const c10::IValue& value, at::ScalarType to, c10::DeviceType device) {
  if (value.isTensor()) {
    const at::Tensor& t = value.toTensor();
    return at::autocast::is_eligible(t, device) ? c10::promoteTypes(to, t.scalar_type()) : to;
  }
  if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) {
      to = autocast_widest(element, to, device);
    }
  }
  return to;
}

c10::IValue autocast_cast(const c10::IValue& value, at::ScalarType to, c10::DeviceType device) {
  if (value.isTensor()) {
    return at::autocast::cached_cast(to, value.toTensor(), device);
  }
  if (value.isTensorList()) {
    c10::List<at::Tensor> cast;
    for (const at::Tensor& t : value.toTensorList()) {
      cast.push_back(at::autocast::cached_cast(to, t, device));
    }
    return cast;
  }
  if (value.isOptionalTensorList()) {
    c10::List<std::optional<at::Tensor>> cast;
    for (const std::optional<at::Tensor>& t : value.toOptionalTensorList()) {
      cast.push_back(t.has_value() ? std::optional<at::Tensor>(at::autocast::cached_cast(to, *t, device)) : t);
    }
    return cast;
  }
  return value;  // None
}

// The op's `arguments` are the last entries of the stack; `casts` their positions to cast.
void autocast_call(const c10::OperatorHandle& op, torch::jit::Stack* stack, c10::DispatchKey key,
                   c10::DeviceType device, AutocastPolicy policy, size_t arguments,
                   std::initializer_list<size_t> casts) {
  c10::impl::ExcludeDispatchKeyGuard no_autocast(key);
  c10::IValue* args = stack->data() + (stack->size() - arguments);
  at::ScalarType to = policy == AutocastPolicy::kFloat32 ? at::kFloat : at::autocast::get_autocast_dtype(device);
  if (policy == AutocastPolicy::kPromote) {
    for (size_t i : casts) {
      to = autocast_widest(args[i], to, device);
    }
  }
  for (size_t i : casts) {
    args[i] = autocast_cast(args[i], to, device);
  }
  op.callBoxed(stack);
}"""


def _name(k: AutocastKernel) -> str:
    return f"{k.namespace}_{k.identifier}_{k.key}"


def _kernel(k: AutocastKernel) -> str:
    casts = ", ".join(str(i) for i, _ in k.casts)
    return (
        f"// {k.location}: autocast: {k.policy} of {k.namespace}::{k.op} ({', '.join(n for _, n in k.casts)})\n"
        f"void {_name(k)}(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {{\n"
        f"  autocast_call(op, stack, c10::DispatchKey::{k.key}, {k.device.cpp_device}, "
        f"AutocastPolicy::{_POLICY[k.policy]}, {k.arguments}, {{{casts}}});\n"
        f"}}"
    )


def autocast_kernels(plan: AutocastPlan | None, backend: str) -> str:
    """The helpers and kernels of ``backend``'s unit (empty: no op has a policy served there)."""
    kernels = plan.at(backend) if plan is not None else ()
    if not kernels:
        return ""
    return "\n\n".join([_HAS_AUTOCAST, _HELPERS, *(_kernel(k) for k in kernels), "#endif"])


def autocast_registrations(plan: AutocastPlan | None, backend: str) -> str:
    """``TORCH_LIBRARY_IMPL(ns, Autocast<Device>, m)`` of ``backend``'s unit (empty: none)."""
    kernels = plan.at(backend) if plan is not None else ()
    blocks = boxed_impl_blocks(kernels[0].key, ((k.namespace, k.op, _name(k)) for k in kernels)) if kernels else []
    return "\n\n".join([_HAS_AUTOCAST, *blocks, "#endif"]) if blocks else ""
