// vtgen_build stub header: Node plus the helpers that build edges.
#pragma once
#include <torch/csrc/autograd/node.h>
#include <torch/csrc/autograd/variable.h>

namespace torch::autograd {
// The edges from each (differentiable) input to the node being built.
template <typename... Variables>
edge_list collect_next_edges(Variables&&... variables);

struct TypeAndSize {
  TypeAndSize();
  /* implicit */ TypeAndSize(const at::Tensor& t);
  at::Tensor zeros();
  std::vector<c10::SymInt> sym_sizes;
  at::TensorOptions options;
};
} // namespace torch::autograd
