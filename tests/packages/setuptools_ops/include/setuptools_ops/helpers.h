// Helpers the fixture's formulas call (its FunctionsManual.h).
#pragma once

#include <ATen/core/Tensor.h>

namespace setuptools_ops::autograd_helpers {

at::Tensor cube_backward(const at::Tensor& grad, const at::Tensor& self);
at::Tensor scaled(const at::Tensor& grad, double factor);

} // namespace setuptools_ops::autograd_helpers
