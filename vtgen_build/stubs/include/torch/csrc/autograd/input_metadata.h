// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
namespace torch::autograd {
struct InputMetadata {
  InputMetadata();
  explicit InputMetadata(const at::Tensor& t);
  const at::TensorOptions& options() const;
  c10::SymIntArrayRef shape_as_dim_vector() const;
  bool is_tensor_subclass() const;
  bool is_nested_tensor() const;
  bool is_cpp_nested_tensor() const;
  at::Tensor zeros_like() const;
};
} // namespace torch::autograd
