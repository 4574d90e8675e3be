// vtgen_build stub header: c10::SymInt, an int64_t that may be symbolic.
#pragma once
#include <cstdint>
#include <optional>
#include <ostream>
#include <type_traits>
#include <c10/core/SymBool.h>
#include <c10/core/SymFloat.h>
#include <c10/util/ArrayRef.h>

namespace c10 {
class SymInt {
 public:
  enum Unchecked { UNCHECKED };
  /* implicit */ SymInt(int64_t d);
  SymInt();
  SymInt(const SymInt&);
  SymInt(SymInt&&) noexcept;
  SymInt& operator=(const SymInt&);
  SymInt& operator=(SymInt&&) noexcept;

  int64_t expect_int() const;
  int64_t guard_int(const char* file, int64_t line) const;
  int64_t as_int_unchecked() const;
  std::optional<int64_t> maybe_as_int() const;
  bool is_heap_allocated() const;
  bool has_hint() const;
  bool is_same(const SymInt& other) const;
  SymInt clone() const;

  SymInt operator+(const SymInt&) const;
  SymInt operator-(const SymInt&) const;
  SymInt operator*(const SymInt&) const;
  SymInt operator/(const SymInt&) const;
  SymInt operator%(const SymInt&) const;
  SymInt operator-() const;
  void operator+=(const SymInt&);
  void operator-=(const SymInt&);
  void operator*=(const SymInt&);
  void operator/=(const SymInt&);
  SymFloat operator*(const SymFloat&) const;
  SymFloat operator/(const SymFloat&) const;
  SymFloat operator+(const SymFloat&) const;
  SymFloat operator-(const SymFloat&) const;
  bool operator==(const SymInt&) const;
  bool operator!=(const SymInt&) const;
  bool operator<(const SymInt&) const;
  bool operator<=(const SymInt&) const;
  bool operator>(const SymInt&) const;
  bool operator>=(const SymInt&) const;
  SymBool sym_eq(const SymInt&) const;
  SymBool sym_ne(const SymInt&) const;
  SymBool sym_lt(const SymInt&) const;
  SymBool sym_le(const SymInt&) const;
  SymBool sym_gt(const SymInt&) const;
  SymBool sym_ge(const SymInt&) const;
  SymInt min(const SymInt&) const;
  SymInt max(const SymInt&) const;
  operator SymFloat() const;
};

#define VTGEN_STUB_SYMINT_INT_OP(RetTy, op)                 \
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>> \
  RetTy operator op(const SymInt& a, I b);                  \
  template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>> \
  RetTy operator op(I a, const SymInt& b);
VTGEN_STUB_SYMINT_INT_OP(SymInt, +)
VTGEN_STUB_SYMINT_INT_OP(SymInt, -)
VTGEN_STUB_SYMINT_INT_OP(SymInt, *)
VTGEN_STUB_SYMINT_INT_OP(SymInt, /)
VTGEN_STUB_SYMINT_INT_OP(SymInt, %)
VTGEN_STUB_SYMINT_INT_OP(bool, ==)
VTGEN_STUB_SYMINT_INT_OP(bool, !=)
VTGEN_STUB_SYMINT_INT_OP(bool, <)
VTGEN_STUB_SYMINT_INT_OP(bool, <=)
VTGEN_STUB_SYMINT_INT_OP(bool, >)
VTGEN_STUB_SYMINT_INT_OP(bool, >=)
#undef VTGEN_STUB_SYMINT_INT_OP
SymFloat operator*(const SymInt& a, double b);
SymFloat operator/(const SymInt& a, double b);
SymFloat operator*(double a, const SymInt& b);
SymFloat operator/(double a, const SymInt& b);
std::ostream& operator<<(std::ostream& os, const SymInt& s);

using SymIntArrayRef = ArrayRef<SymInt>;
IntArrayRef asIntArrayRefUnchecked(SymIntArrayRef ar);
IntArrayRef asIntArrayRefSlow(SymIntArrayRef ar, const char* file, int64_t line);
std::optional<IntArrayRef> asIntArrayRefSlowOpt(SymIntArrayRef ar);
SymIntArrayRef fromIntArrayRefSlow(IntArrayRef array_ref);
SymIntArrayRef fromIntArrayRefUnchecked(IntArrayRef array_ref);
SymIntArrayRef fromIntArrayRefKnownNonNegative(IntArrayRef array_ref);
bool has_symbolic_sizes_strides(SymIntArrayRef ar);
} // namespace c10
#define C10_AS_INTARRAYREF_SLOW(a) c10::asIntArrayRefSlow(a, __FILE__, __LINE__)
#define C10_AS_INTARRAYREF_SLOW_ALLOC(a) c10::asIntArrayRefSlow(a, __FILE__, __LINE__)

namespace at {
using c10::SymInt;
using c10::SymIntArrayRef;
using c10::SymBool;
using c10::SymFloat;
} // namespace at
