// vtgen_build stub header: torch::autograd::Node, the backward graph node.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>
#include <ATen/core/TensorBody.h>
#include <ATen/core/ivalue.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/input_metadata.h>

namespace torch::dynamo::autograd {
class CompiledNodeArgs;
class SwapSavedVariables;
class PackedArgs;
} // namespace torch::dynamo::autograd

namespace torch::autograd {
struct Node;
class SavedVariable;
struct FunctionPreHook;
struct FunctionPostHook;
using Variable = at::Tensor;
using tensor_list = std::vector<at::Tensor>;
using variable_list = std::vector<Variable>;
using edge_list = std::vector<Edge>;
using saved_variable_list = std::vector<SavedVariable>;
using ivalue_list = std::vector<c10::IValue>;
using IndexRange = std::pair<size_t, size_t>;
using functional_apply_t = std::function<variable_list(const variable_list&, const std::vector<c10::IValue>&)>;
using torch::dynamo::autograd::CompiledNodeArgs;
using torch::dynamo::autograd::PackedArgs;
using torch::dynamo::autograd::SwapSavedVariables;

struct Node : c10::intrusive_ptr_target {
  explicit Node(uint64_t sequence_nr, edge_list&& next_edges = edge_list());
  explicit Node(edge_list&& next_edges = edge_list());
  Node(const Node& other) = delete;
  Node& operator=(const Node& other) = delete;
  ~Node() override;

  c10::intrusive_ptr<Node> getptr();
  variable_list operator()(variable_list&& inputs);

  struct undefined_input {};
  uint32_t add_input_metadata(const at::Tensor& t) noexcept;
  uint32_t add_input_metadata(undefined_input u) noexcept;
  uint32_t num_inputs() const noexcept;
  const InputMetadata& input_metadata(size_t index) const;

  void set_next_edge(size_t index, Edge edge);
  void add_next_edge(Edge edge);
  void set_next_edges(edge_list&& next_edges);
  const Edge& next_edge(size_t index) const noexcept;
  const edge_list& next_edges() const noexcept;
  edge_list& next_edges() noexcept;
  uint32_t num_outputs() const noexcept;
  uint64_t sequence_nr() const noexcept;
  void set_sequence_nr(uint64_t sequence_nr);
  uint64_t topological_nr() const noexcept;
  virtual std::string name() const;
  bool should_compute_output(size_t output_edge_index) const;
  bool should_compute_output(std::initializer_list<IndexRange> idxs) const;
  bool task_should_compute_output(size_t output_edge_index) const;
  bool task_should_compute_output(std::initializer_list<IndexRange> idxs) const;

  virtual void release_variables();
  virtual void will_release_variables();
  virtual bool is_traceable();
  virtual bool passes_state_transparently();
  virtual void compiled_args(CompiledNodeArgs& args) const;
  virtual variable_list apply_with_saved(const variable_list& inputs, SwapSavedVariables& saved);

 protected:
  virtual variable_list apply(variable_list&& inputs) = 0;
  std::mutex mutex_;
  edge_list next_edges_;
};

// 2.14 and later: runs the node-creation hooks on a fully populated Node.
void fire_node_creation_hooks(const c10::intrusive_ptr<Node>& node);

struct TraceableFunction : public Node {
  using Node::Node;
  bool is_traceable() final;
};
} // namespace torch::autograd
