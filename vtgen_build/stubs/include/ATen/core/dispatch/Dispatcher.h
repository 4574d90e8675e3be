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
template <class FuncType>
class TypedOperatorHandle;
class OperatorHandle {
 public:
  const OperatorName& operator_name() const;
  const FunctionSchema& schema() const;
  bool hasSchema() const;
  // A handle calling the kernels with the C++ signature FuncType (checked against the schema).
  template <class FuncType>
  TypedOperatorHandle<FuncType> typed() const;
};
template <class Return, class... Args>
class TypedOperatorHandle<Return(Args...)> : public OperatorHandle {
 public:
  Return call(Args... args) const;
  Return redispatch(DispatchKeySet currentDispatchKeySet, Args... args) const;
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
