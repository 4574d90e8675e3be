// vtgen_build stub header: c10::IListRef<T>, a list reference that may box or not.
#pragma once
#include <c10/util/ArrayRef.h>
#include <ATen/core/List.h>

namespace c10 {
template <typename T>
class IListRefIterator {
 public:
  const T& operator*() const;
  IListRefIterator& operator++();
  bool operator!=(const IListRefIterator&) const;
  bool operator==(const IListRefIterator&) const;
};
template <typename T>
class IListRef {
 public:
  using iterator = IListRefIterator<T>;
  using const_iterator = IListRefIterator<T>;
  using value_type = T;
  IListRef();
  IListRef(const ArrayRef<T>& ref);
  IListRef(const List<T>& ref);
  IListRef(std::initializer_list<T> list);
  template <typename A>
  IListRef(const std::vector<T, A>& vec);
  iterator begin() const;
  iterator end() const;
  size_t size() const;
  bool empty() const;
  const T& front() const;
  bool isBoxed() const;
  bool isMaterialized() const;
  ArrayRef<T> toUnboxed() const;
  std::vector<std::reference_wrapper<const T>> materialize() const;
};
} // namespace c10
