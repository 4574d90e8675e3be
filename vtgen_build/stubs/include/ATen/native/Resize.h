// vtgen_build stub header: resizing an out= tensor (what Register<Key>.cpp's structured kernels call).
#pragma once
#include <ATen/core/TensorBody.h>
#include <c10/core/SymIntArrayRef.h>

namespace at::native {
bool resize_output(const Tensor& output, IntArrayRef shape);
bool resize_output_symint(const Tensor& output, c10::SymIntArrayRef shape);
} // namespace at::native
