// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
namespace at {
struct TensorGeometry {
  TensorGeometry();
  explicit TensorGeometry(c10::SymIntArrayRef sizes);
  explicit TensorGeometry(const TensorBase& t);
  bool is_contiguous() const;
  int64_t dim() const;
  int64_t size(int64_t dim) const;
  c10::SymInt sym_size(int64_t dim) const;
  IntArrayRef sizes() const;
  c10::SymIntArrayRef sym_sizes() const;
  int64_t stride(int64_t dim) const;
  IntArrayRef strides() const;
  c10::SymIntArrayRef sym_strides() const;
  int64_t storage_offset() const;
  c10::SymInt sym_storage_offset() const;
  int64_t numel() const;
  c10::SymInt sym_numel() const;
  TensorGeometry transpose(int64_t dim0, int64_t dim1);
};
} // namespace at
