// vtgen_build stub header: helpers the generated VariableType kernels call.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>
#include <ATen/core/TensorBody.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <c10/util/irange.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/basic_ops.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>

namespace torch::autograd {
enum class can_mutate_inplace_result { success, non_default_backward_view, view_of_leaf, is_leaf };
can_mutate_inplace_result can_mutate_inplace(const at::Tensor& tensor, bool requires_grad);
void check_inplace(const at::Tensor& tensor, bool requires_grad);
void check_inplace(at::ITensorListRef tensors, bool requires_grad);
void throw_error_out_requires_grad(const char* name);
void throw_error_for_complex_autograd(const at::Tensor& tensor, const char* name);
void throw_error_for_complex_autograd(at::ITensorListRef tensorlist, const char* name);
void throw_error_if_base_and_tensor_are_same(const at::Tensor& base, const at::Tensor& tensor);
// 2.14 returns the Node attached (2.13: void; code for 2.13 never reads the result)
c10::intrusive_ptr<Node> rebase_history(const Variable& var, c10::intrusive_ptr<Node> grad_fn);
c10::intrusive_ptr<Node> rebase_history(const std::vector<Variable>& vars, const c10::intrusive_ptr<Node>& grad_fn);
void increment_version(const at::Tensor& t);

// Every tensor among the arguments (tensors, optional tensors, tensor lists), in order.
template <typename... Args>
variable_list flatten_tensor_args(Args&&... args);

at::Tensor as_view(const at::Tensor& base, const at::Tensor& tensor, bool is_bw_differentiable,
                   bool is_fw_differentiable, std::unique_ptr<ViewFunc> view_func = nullptr,
                   std::function<at::Tensor(const at::Tensor&)> rev_view_func = nullptr,
                   CreationMeta creation_meta = CreationMeta::DEFAULT, bool allow_tensor_metadata_change = true);
std::vector<at::Tensor> as_view(const at::Tensor& base, std::vector<at::Tensor>& tensors, bool is_bw_differentiable,
                                bool is_fw_differentiable, CreationMeta creation_meta = CreationMeta::DEFAULT);

void check_no_requires_grad(const at::Tensor& tensor, const char* name, const char* fn_name = "",
                            bool check_grad_mode = true);
void check_no_requires_grad(const std::optional<at::Tensor>& tensor, const char* name, const char* fn_name = "");
void check_no_requires_grad(at::ITensorListRef tensors, const char* name, const char* fn_name = "");
void check_no_requires_grad(const c10::List<std::optional<at::Tensor>>& tensors, const char* name,
                            const char* fn_name = "");
std::vector<SavedVariable> make_saved_variable_list(at::ITensorListRef tensors, const bool is_output = false);
std::vector<SavedVariable> make_saved_variable_list(const c10::List<std::optional<at::Tensor>>& tensors,
                                                    const bool is_output = false);
std::vector<std::vector<int64_t>> to_args_sizes(at::ITensorListRef tensors);
std::vector<std::vector<c10::SymInt>> to_args_sizes_symint(at::ITensorListRef tensors);
std::vector<c10::ScalarType> to_args_scalartypes(at::ITensorListRef tensors);

namespace impl {
// Runs the op's decomposition so forward AD can differentiate through it.
template <class Return, class... Args>
Return run_jit_decomposition_with_args_for_jvp(std::string_view name, const c10::OperatorHandle& opHandle,
                                               c10::DispatchKeySet dispatchKeySet, Args&&... args);
} // namespace impl
} // namespace torch::autograd
