// vtgen_build stub header: c10::IValue and the JIT type handle.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <ATen/core/TensorBody.h>

namespace c10 {
struct Type;
using TypePtr = std::shared_ptr<Type>;
class IValue {
 public:
  IValue();
  template <typename T>
  /* implicit */ IValue(T&& v);
  bool isTensor() const;
  const at::Tensor& toTensor() const&;
  int64_t toInt() const;
  double toDouble() const;
  bool toBool() const;
  template <typename T>
  T to() const;
};
// An owned, optional list: what a saved OptionalArrayRef becomes.
template <typename T>
struct OptionalArray {
  std::optional<std::vector<T>> list;
  OptionalArray();
  OptionalArray(std::vector<T> val);
  OptionalArray(ArrayRef<T> ref);
  OptionalArray& operator=(std::optional<ArrayRef<T>> ref);
  OptionalArray& operator=(c10::OptionalArrayRef<T> ref);
  operator std::optional<ArrayRef<T>>();
  operator c10::OptionalArrayRef<T>();
};
} // namespace c10
namespace at {
using c10::IValue;
using c10::OptionalArray;
using c10::Type;
using c10::TypePtr;
} // namespace at
