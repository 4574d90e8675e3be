// vtgen_build stub header.
#pragma once
#include <c10/core/InferenceMode.h>
namespace torch {
using c10::InferenceMode;
}
