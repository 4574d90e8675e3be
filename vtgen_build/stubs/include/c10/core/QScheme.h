// vtgen_build stub header.
#pragma once
#include <cstdint>
namespace c10 {
enum class QScheme : uint8_t { PER_TENSOR_AFFINE, PER_CHANNEL_AFFINE, PER_TENSOR_SYMMETRIC, PER_CHANNEL_SYMMETRIC, PER_CHANNEL_AFFINE_FLOAT_QPARAMS, COMPILE_TIME_NUM_QSCHEMES };
constexpr auto kPerTensorAffine = QScheme::PER_TENSOR_AFFINE;
constexpr auto kPerChannelAffine = QScheme::PER_CHANNEL_AFFINE;
} // namespace c10
namespace at {
using c10::QScheme;
using c10::kPerTensorAffine; using c10::kPerChannelAffine;
}
