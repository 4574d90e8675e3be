// vtgen_build stub header: the at:: functions.  The op functions are generated
// (<vtgen_decls/Functions.inc>); the rest are PyTorch's hand-written ones.
#pragma once
#include <ATen/core/TensorBody.h>
#include <ATen/core/Reduction.h>
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/TensorIndexing.h>
#include <vtgen_decls/Functions.inc>
namespace at {
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& options = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& options = {});
Tensor tensor(ArrayRef<int64_t> values, const TensorOptions& options = {});
Tensor tensor(ArrayRef<double> values, const TensorOptions& options = {});
Tensor tensor(int64_t value, const TensorOptions& options = {});
Tensor tensor(double value, const TensorOptions& options = {});
Tensor scalar_to_tensor(const Scalar& s, const Device device = at::kCPU);
Tensor wrapped_scalar_tensor(const Scalar& scalar, const Device device = at::kCPU);
Tensor var(const Tensor& self, int dim);
Tensor std(const Tensor& self, int dim);
} // namespace at
