// vtgen_build stub header: c10::ArrayRef, a non-owning view of a contiguous array.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>
#include <c10/util/Exception.h>

namespace c10 {
template <typename T, unsigned N>
class SmallVector;

template <typename T>
class ArrayRef {
 public:
  using iterator = const T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using value_type = T;
  using size_type = size_t;

  ArrayRef() = default;
  /* implicit */ ArrayRef(const T& one_element);
  ArrayRef(const T* data, size_t length);
  ArrayRef(const T* begin, const T* end);
  template <typename A>
  /* implicit */ ArrayRef(const std::vector<T, A>& vec);
  template <size_t N>
  /* implicit */ ArrayRef(const std::array<T, N>& arr);
  template <size_t N>
  /* implicit */ ArrayRef(const T (&arr)[N]);
  template <unsigned N>
  /* implicit */ ArrayRef(const SmallVector<T, N>& vec);
  /* implicit */ ArrayRef(const std::initializer_list<T>& list);

  const T* begin() const;
  const T* end() const;
  const T* cbegin() const;
  const T* cend() const;
  reverse_iterator rbegin() const;
  reverse_iterator rend() const;
  const T* data() const;
  size_t size() const;
  bool empty() const;
  const T& front() const;
  const T& back() const;
  bool equals(ArrayRef other) const;
  ArrayRef<T> slice(size_t start, size_t length) const;
  ArrayRef<T> slice(size_t start) const;
  const T& operator[](size_t index) const;
  const T& at(size_t index) const;
  std::vector<T> vec() const;
  operator std::vector<T>() const;
};

template <typename T>
bool operator==(ArrayRef<T> a, ArrayRef<T> b);
template <typename T>
bool operator!=(ArrayRef<T> a, ArrayRef<T> b);
template <typename T>
bool operator==(const std::vector<T>& a, ArrayRef<T> b);
template <typename T>
bool operator==(ArrayRef<T> a, const std::vector<T>& b);
template <typename T>
std::ostream& operator<<(std::ostream& out, ArrayRef<T> list);

template <typename T>
ArrayRef<T> makeArrayRef(const std::vector<T>& vec);

using IntArrayRef = ArrayRef<int64_t>;
} // namespace c10

namespace at {
using c10::ArrayRef;
using c10::IntArrayRef;
} // namespace at
