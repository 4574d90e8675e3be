// vtgen_build stub header.
#pragma once
#include <type_traits>
namespace c10 {
template <typename T>
struct complex {
  T real_;
  T imag_;
  complex(const T& re = T(), const T& im = T());
  template <typename U>
  explicit complex(const complex<U>& other);
  T real() const;
  T imag() const;
};
#define VTGEN_STUB_COMPLEX_OP(op)                                                              \
  template <typename T>                                                                          \
  complex<T> operator op(const complex<T>& a, const complex<T>& b);                              \
  template <typename T, typename S, typename = std::enable_if_t<std::is_arithmetic_v<S>>>        \
  complex<T> operator op(const complex<T>& a, const S& b);                                       \
  template <typename T, typename S, typename = std::enable_if_t<std::is_arithmetic_v<S>>>        \
  complex<T> operator op(const S& a, const complex<T>& b);
VTGEN_STUB_COMPLEX_OP(+)
VTGEN_STUB_COMPLEX_OP(-)
VTGEN_STUB_COMPLEX_OP(*)
VTGEN_STUB_COMPLEX_OP(/)
#undef VTGEN_STUB_COMPLEX_OP
template <typename T>
complex<T> operator-(const complex<T>& a);
template <typename T>
bool operator==(const complex<T>& a, const complex<T>& b);
template <typename T>
bool operator!=(const complex<T>& a, const complex<T>& b);
template <typename T>
T abs(const complex<T>& z);
template <typename T>
complex<T> conj(const complex<T>& z);
template <typename T>
complex<T> sqrt(const complex<T>& z);

struct Half {
  Half();
  Half(float f);
  operator float() const;
};
struct BFloat16 {
  BFloat16();
  BFloat16(float f);
  operator float() const;
};
} // namespace c10
namespace at {
using c10::BFloat16;
using c10::Half;
} // namespace at
