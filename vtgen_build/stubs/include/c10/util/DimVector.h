// vtgen_build stub header.
#pragma once
#include <c10/util/SmallVector.h>
#include <c10/core/SymInt.h>

namespace c10 {
constexpr size_t kDimVectorStaticSize = 5;
using DimVector = SmallVector<int64_t, kDimVectorStaticSize>;
using SymDimVector = SmallVector<c10::SymInt, kDimVectorStaticSize>;
} // namespace c10
namespace at {
using c10::DimVector;
using c10::SymDimVector;
} // namespace at
