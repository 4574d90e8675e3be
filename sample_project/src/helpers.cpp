// The helper functions the vtsample formulas call (declared in include/vtsample/helpers.h).
// They are built from differentiable ATen ops only, so a backward formula can itself be
// differentiated (double backward, gradgradcheck).
#include "vtsample/helpers.h"

#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <c10/util/Exception.h>

#include <cmath>

namespace torch::autograd::generated::details {

at::Tensor not_implemented(const char* name, const char* reason) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, "the derivative for '", name, "' is not implemented. ", reason);
}

at::Tensor softsign_backward(const at::Tensor& grad, const at::Tensor& self) {
  auto denominator = self.abs() + 1;
  return grad / (denominator * denominator);
}

at::Tensor handle_r_to_c(c10::ScalarType self_st, at::Tensor gradient_result) {
  if (!at::isComplexType(self_st) && gradient_result.is_complex()) {
    return at::real(gradient_result);
  }
  return gradient_result;
}

at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s) {
  bool is_one = s.isFloatingPoint() ? s.toDouble() == 1.0 : (s.isIntegral(true) && s.toLong() == 1);
  return is_one ? t : t * s;
}

at::Tensor value_selecting_backward(
    const at::Tensor& grad, int64_t dim, const at::Tensor& indices, c10::SymIntArrayRef sizes) {
  return at::zeros_symint(sizes, grad.options()).scatter(dim, indices, grad);
}

at::Tensor gather_along(const at::Tensor& t, int64_t dim, const at::Tensor& indices) {
  return t.gather(dim, indices);
}

// A formula for a Tensor[] input, or one taking grad_input_mask, gets no guard around it:
// it must itself answer an undefined `grad` (no gradient flowed back) with undefined results.

std::vector<at::Tensor> stack_mean_backward(const at::Tensor& grad, int64_t /*dim*/, size_t count) {
  if (!grad.defined()) {
    return std::vector<at::Tensor>(count);
  }
  // mean(stack(tensors, dim), dim) is the elementwise mean of the inputs.
  return std::vector<at::Tensor>(count, grad / static_cast<double>(count));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> affine_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight, std::array<bool, 3> grad_input_mask) {
  at::Tensor grad_input, grad_weight, grad_bias;
  if (!grad.defined()) {
    return {grad_input, grad_weight, grad_bias};
  }
  auto grad_2d = grad.reshape({-1, grad.size(-1)});
  if (grad_input_mask[0]) {
    grad_input = grad.matmul(weight);
  }
  if (grad_input_mask[1]) {
    grad_weight = grad_2d.t().mm(input.reshape({-1, input.size(-1)}));
  }
  if (grad_input_mask[2]) {
    grad_bias = grad_2d.sum(0);
  }
  return {grad_input, grad_weight, grad_bias};
}

at::Tensor affine_jvp(
    const at::Tensor& input_p, const at::Tensor& input_t, const at::Tensor& weight_p, const at::Tensor& weight_t,
    const at::Tensor& bias_t) {
  auto result = input_t.matmul(weight_p.t()) + input_p.matmul(weight_t.t());
  return bias_t.defined() ? result + bias_t : result;
}

at::Tensor sum_to_sizes(const at::Tensor& grad, c10::SymIntArrayRef sizes) {
  return at::sum_to(grad, sizes);
}

at::Tensor tile_to_jvp(const at::Tensor& self_t, c10::SymIntArrayRef size) {
  return self_t.expand_symint(size).clone();
}

at::Tensor soft_quantize_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& scale, int64_t bits) {
  // d/dx [x - step/(2 pi) sin(2 pi x / step)] = 1 - cos(2 pi x / step), step = scale / 2^(bits-1)
  auto step = scale / std::ldexp(1.0, static_cast<int>(bits - 1));
  return grad * (1 - at::cos(2 * M_PI * self / step));
}

} // namespace torch::autograd::generated::details
