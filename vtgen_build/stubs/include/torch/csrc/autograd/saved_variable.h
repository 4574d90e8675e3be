// vtgen_build stub header: SavedVariable, a tensor stored on a backward Node.
#pragma once
#include <memory>
#include <optional>
#include <ATen/core/TensorBody.h>
#include <c10/util/intrusive_ptr.h>

namespace torch::autograd {
struct Node;
struct SavedVariableHooks;
using Variable = at::Tensor;
extern const char* ERR_BACKWARD_TWICE;
class SavedVariable {
 public:
  SavedVariable();
  SavedVariable(const Variable& variable, bool is_output, bool is_inplace_on_view = false);
  SavedVariable(const std::optional<Variable>& variable, bool is_output, bool is_inplace_on_view = false);
  SavedVariable(SavedVariable&&);
  SavedVariable& operator=(SavedVariable&&);
  Variable unpack(c10::intrusive_ptr<Node> saved_for = nullptr) const;
  void register_hooks(std::unique_ptr<SavedVariableHooks>&& hooks);
  void reset_data();
  bool has_hooks() const;
};
} // namespace torch::autograd
