// vtgen_build stub header: the compiled-autograd interface generated Nodes implement.
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <ATen/TensorGeometry.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/input_metadata.h>
#include <torch/csrc/autograd/saved_variable.h>

namespace torch::dynamo::autograd {
using torch::autograd::edge_list;
using torch::autograd::InputMetadata;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;
using torch::autograd::ivalue_list;
using torch::autograd::functional_apply_t;

struct PyCompilerInterface;
class CompiledNodeArgs {
 public:
  template <typename T>
  void collect(const T& t);
  void collect(const SavedVariable& sv, bool is_output);
  void collect(const std::vector<SavedVariable>& t, bool is_output);
  void collect(const at::Tensor& t);
  void collect_size(size_t s);
};
class SwapSavedVariables {
 public:
  template <typename T>
  void before(T& t);
  template <typename T>
  void after(T& t);
  void before(SavedVariable& t);
  void after(SavedVariable& t);
  void* get_py_compiler();
};
class PackedArgs {
 public:
  PackedArgs();
  explicit PackedArgs(const std::vector<at::IValue>& stack);
  template <typename T>
  void pack(const T& t);
  template <typename T>
  T unpack();
  std::vector<at::IValue> vec() const;
};
// Converts a saved value to/from an IValue; packed_type() is its JIT type.
template <typename T>
struct IValuePacker {
  static at::TypePtr packed_type();
  static at::IValue pack(const T& t);
  static T unpack(const at::IValue& t);
};
struct PyCompilerInterface {
  virtual ~PyCompilerInterface();
  virtual std::string bind_function(void* py_compiler, const std::string& fn_name,
                                    torch::autograd::functional_apply_t fn, std::vector<at::TypePtr> packed_args_schema,
                                    bool is_custom_function = false, bool is_traceable = true) const;
  virtual variable_list call_function(void* py_compiler, const char* method_name, const std::string& fn_name,
                                      const variable_list& inputs, const ivalue_list& packed_args,
                                      const c10::IValue& output_metadata) const;
};
const std::unique_ptr<PyCompilerInterface>& getPyCompilerInterface();
std::vector<std::optional<InputMetadata>> get_input_metadata(const edge_list& edges);
} // namespace torch::dynamo::autograd
