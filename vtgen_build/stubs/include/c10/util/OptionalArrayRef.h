// vtgen_build stub header: an optional ArrayRef.
#pragma once
#include <optional>
#include <c10/util/ArrayRef.h>

namespace c10 {
template <typename T>
class OptionalArrayRef {
 public:
  OptionalArrayRef() noexcept = default;
  OptionalArrayRef(std::nullopt_t) noexcept;
  OptionalArrayRef(const std::optional<ArrayRef<T>>& other);
  OptionalArrayRef(const ArrayRef<T>& value);
  template <typename A>
  OptionalArrayRef(const std::vector<T, A>& value);
  OptionalArrayRef(const std::initializer_list<T>& value);
  OptionalArrayRef(const T& one);
  OptionalArrayRef& operator=(std::nullopt_t) noexcept;
  bool has_value() const noexcept;
  explicit operator bool() const noexcept;
  const ArrayRef<T>& value() const&;
  ArrayRef<T> value_or(ArrayRef<T> other) const;
  const ArrayRef<T>& operator*() const&;
  const ArrayRef<T>* operator->() const;
  operator std::optional<ArrayRef<T>>() const;
};
using OptionalIntArrayRef = OptionalArrayRef<int64_t>;
} // namespace c10
namespace at {
using c10::OptionalArrayRef;
using c10::OptionalIntArrayRef;
} // namespace at
