// vtgen_build stub header.
#pragma once
#include <c10/core/SymInt.h>
#include <c10/util/OptionalArrayRef.h>
namespace c10 {
using OptionalSymIntArrayRef = OptionalArrayRef<SymInt>;
}
namespace at {
using c10::OptionalSymIntArrayRef;
}
