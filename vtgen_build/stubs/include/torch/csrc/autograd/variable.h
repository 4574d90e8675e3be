// vtgen_build stub header: autograd metadata of a Variable and the view machinery.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <ATen/core/TensorBody.h>
#include <c10/core/GradMode.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/forward_grad.h>

namespace torch::autograd {
struct Node;
using Variable = at::Tensor;
using variable_list = std::vector<Variable>;
using at::GradMode;
using at::NoGradGuard;
using at::AutoGradMode;

enum class CreationMeta : uint8_t { DEFAULT, IN_CUSTOM_FUNCTION, MULTI_OUTPUT_NODE, NO_GRAD_MODE, INFERENCE_MODE };

// Replays a view op on another base (ViewFuncs.h holds the generated ones).
struct ViewFunc {
  virtual ~ViewFunc();
  virtual std::vector<c10::SymInt> get_symints() const;
  virtual size_t num_symints() const;
  virtual std::vector<at::Tensor> get_tensors() const;
  virtual size_t num_tensors() const;
  virtual at::Tensor operator()(const at::Tensor&) const = 0;
  virtual std::unique_ptr<ViewFunc> clone_and_set(
      std::optional<std::vector<c10::SymInt>> = std::nullopt,
      std::optional<std::vector<at::Tensor>> = std::nullopt) const = 0;
};

struct AutogradMeta : public c10::AutogradMetaInterface {
  struct GradAccumulatorRef {
    void reset();
    c10::intrusive_ptr<Node> lock() const;
  };
  std::string name_;
  Variable grad_;
  c10::intrusive_ptr<Node> grad_fn_;
  GradAccumulatorRef grad_accumulator_;
  bool requires_grad_;
  bool is_view_;
  uint32_t output_nr_;
  bool requires_grad() const;
  const Variable& fw_grad(uint64_t level, const at::TensorBase& self) const;
  void set_fw_grad(const at::TensorBase& new_grad, const at::TensorBase& self, uint64_t level, bool is_inplace_op);
};

bool isDifferentiableType(at::ScalarType t);

namespace impl {
AutogradMeta* get_autograd_meta(const at::TensorBase& self);
AutogradMeta* materialize_autograd_meta(const at::TensorBase& self);
void set_gradient_edge(const Variable& self, Edge edge);
Edge gradient_edge(const Variable& self);
c10::intrusive_ptr<Node> grad_accumulator(const Variable& self);
c10::intrusive_ptr<Node> try_get_grad_accumulator(const Variable& self);
void rebase_history(const Variable& self, Edge gradient_edge);
void bump_version(const at::TensorBase& self);
void set_version_counter(const at::TensorBase& self, const c10::VariableVersion& version_counter);
const c10::VariableVersion& version_counter(const Variable& self);
void set_name(const Variable& self, const std::string& name);
bool is_tensor_subclass(const at::TensorBase& self);
} // namespace impl

Variable make_variable(at::Tensor data, bool requires_grad = false, bool allow_tensor_metadata_change = true);
Variable make_variable_differentiable_view(
    const at::Tensor& data, std::optional<struct ViewInfo> backward_info, std::optional<struct ViewInfo> forward_info,
    bool shared_view_info, CreationMeta creation_meta, bool allow_tensor_metadata_change = true);
Variable make_variable_non_differentiable_view(
    const Variable& base, const at::Tensor& data, bool allow_tensor_metadata_change = true);
void handle_view_on_rebase(struct DifferentiableViewMeta* diff_view_meta, bool indirect = false);
} // namespace torch::autograd
