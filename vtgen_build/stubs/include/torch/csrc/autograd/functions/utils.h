// vtgen_build stub header: requires-grad, history and forward-grad helpers.
#pragma once
#include <optional>
#include <vector>
#include <ATen/core/TensorBody.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>

namespace torch::autograd {
// True when grad mode is on and any argument (tensor, optional tensor or list) requires grad.
template <typename... Args>
bool compute_requires_grad(Args&&... args);
void set_history(const at::Tensor& variable, const c10::intrusive_ptr<Node>& grad_fn);
void set_history(const std::vector<Variable>& variables, const c10::intrusive_ptr<Node>& grad_fn);
bool isFwGradDefined(const std::optional<at::Tensor>& t);
bool isFwGradDefinedTensorList(const at::ITensorListRef& variables);
bool isFwGradDefinedTensorList(const c10::List<std::optional<at::Tensor>>& li);
variable_list wrap_outputs(const variable_list& inputs, tensor_list&& outputs,
                           const std::function<c10::intrusive_ptr<Node>(edge_list&&)>& ctr);
void check_input_variables(const char* name, const variable_list& inputs, int args, int required_args = -1,
                           bool allow_undefined = false);
} // namespace torch::autograd
