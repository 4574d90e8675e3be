// vtgen_build stub header: c10::List<T>, a reference-semantics list.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <vector>
#include <c10/util/ArrayRef.h>
#include <c10/util/MaybeOwned.h>

namespace c10 {
template <typename T>
class List {
 public:
  using value_type = T;
  using size_type = size_t;
  class iterator {
   public:
    T operator*() const;
    iterator& operator++();
    bool operator!=(const iterator&) const;
    bool operator==(const iterator&) const;
  };
  using const_iterator = iterator;
  List();
  List(std::initializer_list<T> initial_values);
  explicit List(ArrayRef<T> initial_values);
  List(const List&);
  List(List&&) noexcept;
  List& operator=(const List&);
  List& operator=(List&&) noexcept;
  T get(size_t pos) const;
  T operator[](size_t pos) const;
  T extract(size_t pos) const;
  void set(size_t pos, const T& value) const;
  iterator begin() const;
  iterator end() const;
  bool empty() const;
  size_t size() const;
  void reserve(size_t new_cap) const;
  void clear() const;
  void push_back(const T& value) const;
  void push_back(T&& value) const;
  template <typename... Args>
  void emplace_back(Args&&... args) const;
  List copy() const;
  std::vector<T> vec() const;
  size_t use_count() const;
};
} // namespace c10
namespace torch {
using c10::List;
}
namespace at {
using c10::List;
}
