// vtgen_build stub header: c10::ScalarType and its helpers.
#pragma once
#include <cstdint>
#include <ostream>
#include <c10/util/complex.h>

namespace c10 {
enum class ScalarType : int8_t {
  Byte, Char, Short, Int, Long, Half, Float, Double, ComplexHalf, ComplexFloat, ComplexDouble,
  Bool, QInt8, QUInt8, QInt32, BFloat16, QUInt4x2, QUInt2x4, Bits1x8, Bits2x4, Bits4x2, Bits8,
  Bits16, Float8_e5m2, Float8_e4m3fn, Float8_e5m2fnuz, Float8_e4m3fnuz, UInt16, UInt32, UInt64,
  UInt1, UInt2, UInt3, UInt4, UInt5, UInt6, UInt7, Int1, Int2, Int3, Int4, Int5, Int6, Int7,
  Float8_e8m0fnu, Float4_e2m1fn_x2, Undefined, NumOptions
};
constexpr ScalarType kByte = ScalarType::Byte;
constexpr ScalarType kChar = ScalarType::Char;
constexpr ScalarType kShort = ScalarType::Short;
constexpr ScalarType kInt = ScalarType::Int;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kComplexHalf = ScalarType::ComplexHalf;
constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;
constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kUInt16 = ScalarType::UInt16;
constexpr ScalarType kUInt32 = ScalarType::UInt32;
constexpr ScalarType kUInt64 = ScalarType::UInt64;
constexpr ScalarType kQInt8 = ScalarType::QInt8;
constexpr ScalarType kQUInt8 = ScalarType::QUInt8;
constexpr ScalarType kQInt32 = ScalarType::QInt32;
constexpr ScalarType kFloat8_e5m2 = ScalarType::Float8_e5m2;
constexpr ScalarType kFloat8_e4m3fn = ScalarType::Float8_e4m3fn;

bool isIntegralType(ScalarType t, bool includeBool);
bool isFloatingType(ScalarType t);
bool isComplexType(ScalarType t);
bool isQIntType(ScalarType t);
bool isReducedFloatingType(ScalarType t);
bool isSignedType(ScalarType t);
bool isBitsType(ScalarType t);
bool isBarebonesUnsignedType(ScalarType t);
bool isFloat8Type(ScalarType t);
ScalarType toRealValueType(ScalarType t);
ScalarType toComplexType(ScalarType t);
ScalarType toUnderlying(ScalarType t);
ScalarType promoteTypes(ScalarType a, ScalarType b);
bool canCast(ScalarType from, ScalarType to);
size_t elementSize(ScalarType t);
const char* toString(ScalarType t);
std::ostream& operator<<(std::ostream& stream, ScalarType scalar_type);
ScalarType typeMetaToScalarType(const class TypeMeta& dtype);
} // namespace c10

namespace caffe2 {
class TypeMeta {
 public:
  TypeMeta() noexcept;
  size_t itemsize() const noexcept;
  c10::ScalarType toScalarType() const;
  static TypeMeta fromScalarType(c10::ScalarType scalar_type);
  const char* name() const noexcept;
  bool operator==(const TypeMeta&) const noexcept;
  bool operator!=(const TypeMeta&) const noexcept;
  bool operator==(c10::ScalarType) const noexcept;
  bool operator!=(c10::ScalarType) const noexcept;
  template <typename T>
  static TypeMeta Make();
};
} // namespace caffe2
namespace c10 {
class TypeMeta : public caffe2::TypeMeta {};
ScalarType typeMetaToScalarType(caffe2::TypeMeta dtype);
caffe2::TypeMeta scalarTypeToTypeMeta(ScalarType scalar_type);
} // namespace c10

namespace at {
using c10::ScalarType;
using c10::kByte; using c10::kChar; using c10::kShort; using c10::kInt; using c10::kLong;
using c10::kHalf; using c10::kFloat; using c10::kDouble; using c10::kComplexHalf;
using c10::kComplexFloat; using c10::kComplexDouble; using c10::kBool; using c10::kBFloat16;
using c10::isIntegralType; using c10::isFloatingType; using c10::isComplexType;
using c10::toRealValueType; using c10::toComplexType; using c10::promoteTypes; using c10::canCast;
using c10::isReducedFloatingType; using c10::elementSize;
} // namespace at
