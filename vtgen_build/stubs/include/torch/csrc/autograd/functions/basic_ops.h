// vtgen_build stub header: the error / placeholder Nodes.
#pragma once
#include <string>
#include <torch/csrc/autograd/function.h>
namespace torch::autograd {
struct Error : public Node {
  Error(std::string msg, edge_list&& next_edges);
  Error(std::string msg);
  variable_list apply(variable_list&& inputs) override;
  std::string msg;
};
struct NotImplemented : public Error {
  NotImplemented(const std::string& forward_fn, edge_list&& next_edges);
  NotImplemented(const std::string& forward_fn);
};
struct DelayedError : public Node {
  DelayedError(std::string msg, int64_t num_inputs);
  variable_list apply(variable_list&& inputs) override;
  std::string msg;
};
struct UndefinedGrad : public Node {
  UndefinedGrad();
  variable_list apply(variable_list&& inputs) override;
};
struct UndefinedGradBackward : public Node {
  UndefinedGradBackward(edge_list&& next_edges);
  UndefinedGradBackward();
  variable_list apply(variable_list&& inputs) override;
};
struct GraphRoot : public Node {
  GraphRoot(edge_list functions, variable_list inputs);
  variable_list apply(variable_list&& inputs) override;
  variable_list outputs;
};
} // namespace torch::autograd
