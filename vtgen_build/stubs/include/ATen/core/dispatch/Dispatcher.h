// vtgen_build stub header: the dispatcher, as far as generated kernels use it.
#pragma once
#include <optional>
#include <string>
#include <ATen/core/ivalue.h>
#include <c10/core/DispatchKeySet.h>
namespace c10 {
struct OperatorName {
  OperatorName(std::string name, std::string overload_name);
  std::string name;
  std::string overload_name;
};
class FunctionSchema;
class OperatorHandle {
 public:
  const OperatorName& operator_name() const;
  const FunctionSchema& schema() const;
  bool hasSchema() const;
};
class OperatorKernel {
 public:
  virtual ~OperatorKernel();
};
class Dispatcher {
 public:
  static Dispatcher& singleton();
  std::optional<OperatorHandle> findSchema(const OperatorName& operator_name);
  OperatorHandle findSchemaOrThrow(const char* name, const char* overload_name);
};
using Stack = std::vector<IValue>;
} // namespace c10
namespace torch::jit {
using c10::Stack;
}
