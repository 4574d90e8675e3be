// vtgen_build stub header: what the generated Autograd kernels take from VariableType.h.
#pragma once
#include <vector>
#include <ATen/core/TensorBody.h>
#include <ATen/core/IListRef.h>
#include <torch/csrc/Export.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>

namespace torch::autograd {
using Variable = at::Tensor;

namespace VariableType {
// Arguments are checked (defined, a Variable) and handed to the next dispatch key.
at::Tensor& unpack(at::Tensor& t, const char* name, int pos);
const at::Tensor& unpack(const at::Tensor& t, const char* name, int pos);
at::Tensor unpack_opt(const at::Tensor& t, const char* name, int pos);
std::vector<at::Tensor> unpack(const at::ITensorListRef& tl, const char* name, int pos);
} // namespace VariableType
} // namespace torch::autograd
