// The CPU kernels of the vtsample ops: the library author's code (vtgen_build generates the
// schemas, the autograd kernels and Nodes around them, never these).  Each computes its
// result with ATen ops; it runs below the Autograd key, so nothing here records history.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <c10/core/SymInt.h>
#include <c10/core/SymIntArrayRef.h>
#include <torch/library.h>

#include <cmath>
#include <tuple>

namespace vtsample::cpu {
namespace {

at::Tensor softsign(const at::Tensor& self) {
  return self / (self.abs() + 1);
}

at::Tensor& softsign_(at::Tensor& self) {
  return self.div_(self.abs() + 1);
}

at::Tensor& softsign_out(const at::Tensor& self, at::Tensor& out) {
  return at::div_out(out, self, self.abs() + 1);
}

at::Tensor scale_add(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return at::add(self, other, alpha);
}

at::Tensor& scale_add_(at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha) {
  return self.add_(other, alpha);
}

at::Tensor& scale_add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  return at::add_out(out, self, other, alpha);
}

// The k entries of largest magnitude along dim, and where they are.
std::tuple<at::Tensor, at::Tensor> topk_abs(const at::Tensor& self, c10::SymInt k, int64_t dim) {
  auto indices = std::get<1>(at::topk(self.abs(), k.guard_int(__FILE__, __LINE__), dim));
  return {self.gather(dim, indices), indices};
}

at::Tensor stack_mean(at::TensorList tensors, int64_t dim) {
  return at::stack(tensors, dim).mean(dim);
}

at::Tensor affine(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  auto result = input.matmul(weight.t());
  return bias.has_value() && bias->defined() ? result + *bias : result;
}

// Broadcast self to size, as a new tensor.
at::Tensor tile_to(const at::Tensor& self, c10::SymIntArrayRef size) {
  return self.expand_symint(size).clone();
}

// A view: self with two dimensions swapped, sharing its storage.
at::Tensor swap_dims(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  return self.transpose(dim0, dim1);
}

// x - step/(2 pi) sin(2 pi x / step): a smooth staircase with steps of scale / 2^(bits-1).
at::Tensor soft_quantize(const at::Tensor& self, const at::Tensor& scale, int64_t bits) {
  auto step = scale / std::ldexp(1.0, static_cast<int>(bits - 1));
  return self - step / (2 * M_PI) * at::sin(2 * M_PI * self / step);
}

} // namespace
} // namespace vtsample::cpu

TORCH_LIBRARY_IMPL(vtsample, CPU, m) {
  using namespace vtsample::cpu;
  m.impl("softsign", TORCH_FN(softsign));
  m.impl("softsign_", TORCH_FN(softsign_));
  m.impl("softsign.out", TORCH_FN(softsign_out));
  m.impl("scale_add", TORCH_FN(scale_add));
  m.impl("scale_add_", TORCH_FN(scale_add_));
  m.impl("scale_add.out", TORCH_FN(scale_add_out));
  m.impl("topk_abs", TORCH_FN(topk_abs));
  m.impl("affine", TORCH_FN(affine));
  m.impl("swap_dims", TORCH_FN(swap_dims));
  m.impl("soft_quantize", TORCH_FN(soft_quantize));
}

// Written with other ops only, so every backend can run them.
TORCH_LIBRARY_IMPL(vtsample, CompositeExplicitAutograd, m) {
  using namespace vtsample::cpu;
  m.impl("stack_mean", TORCH_FN(stack_mean));
  m.impl("tile_to", TORCH_FN(tile_to));
}
