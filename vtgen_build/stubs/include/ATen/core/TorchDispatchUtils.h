// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>
namespace at::impl {
bool tensor_has_dispatch(const at::Tensor& t);
bool tensorlist_has_dispatch(at::ITensorListRef li);
bool tensorlist_has_dispatch(const c10::List<std::optional<at::Tensor>>& li);
using c10::impl::dispatch_mode_enabled;
} // namespace at::impl
