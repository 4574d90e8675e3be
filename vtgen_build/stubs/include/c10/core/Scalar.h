// vtgen_build stub header: c10::Scalar, a number of any dtype (never a Tensor).
#pragma once
#include <cstdint>
#include <ostream>
#include <type_traits>
#include <c10/core/ScalarType.h>
#include <c10/core/SymInt.h>
#include <c10/util/complex.h>

namespace c10 {
class Scalar {
 public:
  Scalar();
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  /* implicit */ Scalar(T v);
  template <typename T>
  /* implicit */ Scalar(c10::complex<T> v);
  /* implicit */ Scalar(c10::Half v);
  /* implicit */ Scalar(c10::BFloat16 v);
  /* implicit */ Scalar(c10::SymInt v);
  /* implicit */ Scalar(c10::SymFloat v);
  /* implicit */ Scalar(c10::SymBool v);

  template <typename T>
  T to() const;
  double toDouble() const;
  float toFloat() const;
  int64_t toLong() const;
  int toInt() const;
  bool toBool() const;
  c10::complex<double> toComplexDouble() const;
  c10::SymInt toSymInt() const;
  c10::SymFloat toSymFloat() const;
  c10::SymBool toSymBool() const;
  bool isFloatingPoint() const;
  bool isIntegral(bool includeBool) const;
  bool isComplex() const;
  bool isBoolean() const;
  bool isSymbolic() const;
  bool isSymInt() const;
  bool isSymFloat() const;
  ScalarType type() const;
  Scalar operator-() const;
  Scalar conj() const;
  Scalar log() const;
  template <typename T, typename = std::enable_if_t<!std::is_same_v<T, Scalar>>>
  bool equal(T num) const;
};
std::ostream& operator<<(std::ostream& out, const Scalar& s);
std::string toString(const Scalar& s);
} // namespace c10
namespace at {
using c10::Scalar;
}
