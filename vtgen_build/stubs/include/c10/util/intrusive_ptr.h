// vtgen_build stub header: c10::intrusive_ptr / weak_intrusive_ptr.
#pragma once
#include <cstddef>
#include <type_traits>
#include <utility>

namespace c10 {
class intrusive_ptr_target {
 public:
  virtual ~intrusive_ptr_target();
};

template <typename T>
class intrusive_ptr {
 public:
  using element_type = T;
  intrusive_ptr() noexcept;
  intrusive_ptr(std::nullptr_t) noexcept;
  intrusive_ptr(const intrusive_ptr&);
  intrusive_ptr(intrusive_ptr&&) noexcept;
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  /* implicit */ intrusive_ptr(const intrusive_ptr<U>& other);
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  /* implicit */ intrusive_ptr(intrusive_ptr<U>&& other);
  intrusive_ptr& operator=(const intrusive_ptr&);
  intrusive_ptr& operator=(intrusive_ptr&&) noexcept;
  template <typename U, typename = std::enable_if_t<std::is_convertible_v<U*, T*>>>
  intrusive_ptr& operator=(const intrusive_ptr<U>& other);
  T* get() const noexcept;
  T& operator*() const noexcept;
  T* operator->() const noexcept;
  explicit operator bool() const noexcept;
  void reset() noexcept;
  size_t use_count() const noexcept;
  bool defined() const noexcept;
  T* release() noexcept;
  static intrusive_ptr reclaim(T* owning_ptr);
  template <typename... Args>
  static intrusive_ptr make(Args&&... args);
};
template <typename T, typename U>
bool operator==(const intrusive_ptr<T>& a, const intrusive_ptr<U>& b) noexcept;
template <typename T, typename U>
bool operator!=(const intrusive_ptr<T>& a, const intrusive_ptr<U>& b) noexcept;
template <typename T>
bool operator==(const intrusive_ptr<T>& a, std::nullptr_t) noexcept;
template <typename T>
bool operator!=(const intrusive_ptr<T>& a, std::nullptr_t) noexcept;

template <typename T>
class weak_intrusive_ptr {
 public:
  explicit weak_intrusive_ptr(const intrusive_ptr<T>& ptr);
  intrusive_ptr<T> lock() const noexcept;
  bool expired() const noexcept;
};

template <typename T, typename... Args>
intrusive_ptr<T> make_intrusive(Args&&... args);
} // namespace c10
