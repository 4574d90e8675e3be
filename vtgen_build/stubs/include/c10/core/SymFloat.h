// vtgen_build stub header.
#pragma once
#include <c10/core/SymBool.h>
namespace c10 {
class SymFloat {
 public:
  /* implicit */ SymFloat(double d);
  SymFloat();
  double expect_float() const;
  double guard_float(const char* file, int64_t line) const;
  bool is_symbolic() const;
  SymFloat operator+(const SymFloat&) const;
  SymFloat operator-(const SymFloat&) const;
  SymFloat operator*(const SymFloat&) const;
  SymFloat operator/(const SymFloat&) const;
  SymFloat sqrt() const;
  double as_float_unchecked() const;
};
} // namespace c10
