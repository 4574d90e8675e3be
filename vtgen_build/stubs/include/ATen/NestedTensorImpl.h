// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
namespace at::native {
struct NestedTensorImpl : public c10::TensorImpl {
  const at::Tensor& get_nested_sizes() const;
  const at::Tensor& get_nested_strides() const;
  const at::Tensor& get_storage_offsets() const;
  const Storage& get_storage() const;
  std::optional<int64_t> opt_size(int64_t d) const;
  int64_t size(int64_t d) const;
  const at::Tensor& get_buffer() const;
};
NestedTensorImpl* get_nested_tensor_impl(const at::Tensor& tensor);
NestedTensorImpl* get_nested_tensor_impl_or_null(const at::Tensor& tensor);
} // namespace at::native
