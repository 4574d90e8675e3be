// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
#include <ATen/core/ivalue.h>
namespace at::sparse_csr {
c10::OptionalArray<c10::SymInt> getSymIntBlockSize(const Tensor& self);
DimVector getBlockSize(const Tensor& self);
bool is_sparse_compressed(const Layout& layout);
bool is_sparse_compressed(const Tensor& self);
} // namespace at::sparse_csr
