// Helper functions the vtsample formulas in derivatives.yaml call: the
// counterpart of PyTorch's torch/csrc/autograd/FunctionsManual.h.  Declared
// here, passed to the generator (MANUAL_HEADERS / --manual-header), included
// by the generated code; defined in src/helpers.cpp of the real library.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/core/SymIntArrayRef.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <vector>

namespace torch::autograd::generated::details {

// What a `not_implemented("...")` formula calls: throws when that gradient is
// needed (PyTorch declares the same function in FunctionsManual.h).
at::Tensor not_implemented(const char* name, const char* reason = "");

// d/dx x / (1 + |x|) = 1 / (1 + |x|)^2
at::Tensor softsign_backward(const at::Tensor& grad, const at::Tensor& self);

// The real part of a gradient when the input was real (complex autograd).
at::Tensor handle_r_to_c(c10::ScalarType self_st, at::Tensor gradient_result);

// t * s, skipping the multiplication when s == 1.
at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s);

// Scatter `grad` back to the positions `indices` selected along `dim` of an
// input of shape `sizes`.
at::Tensor value_selecting_backward(
    const at::Tensor& grad, int64_t dim, const at::Tensor& indices, c10::SymIntArrayRef sizes);

// The values of `t` at `indices` along `dim` (forward-mode counterpart).
at::Tensor gather_along(const at::Tensor& t, int64_t dim, const at::Tensor& indices);

// One gradient per stacked input: grad / count, unbound along `dim`.
std::vector<at::Tensor> stack_mean_backward(const at::Tensor& grad, int64_t dim, size_t count);

// Gradients of input @ weight^T + bias; an entry of grad_input_mask that is
// false leaves that gradient undefined.
std::tuple<at::Tensor, at::Tensor, at::Tensor> affine_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight, std::array<bool, 3> grad_input_mask);
at::Tensor affine_jvp(
    const at::Tensor& input_p, const at::Tensor& input_t, const at::Tensor& weight_p, const at::Tensor& weight_t,
    const at::Tensor& bias_t);

// Sum `grad` down to `sizes` (the inverse of broadcasting to a larger shape).
at::Tensor sum_to_sizes(const at::Tensor& grad, c10::SymIntArrayRef sizes);
at::Tensor tile_to_jvp(const at::Tensor& self_t, c10::SymIntArrayRef size);

at::Tensor soft_quantize_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale, int64_t bits);

} // namespace torch::autograd::generated::details
