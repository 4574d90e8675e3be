// vtgen_build stub header.
#pragma once
namespace c10 {
template <typename T>
class MaybeOwned {
 public:
  static MaybeOwned borrowed(const T& t);
  static MaybeOwned owned(T&& t);
  const T& operator*() const&;
  const T* operator->() const;
};
} // namespace c10
