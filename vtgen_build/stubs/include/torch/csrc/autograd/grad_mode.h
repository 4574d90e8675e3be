// vtgen_build stub header.
#pragma once
#include <c10/core/GradMode.h>
namespace torch::autograd {
using c10::AutoGradMode;
using c10::GradMode;
using c10::NoGradGuard;
} // namespace torch::autograd
