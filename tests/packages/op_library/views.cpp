// Kernels of the two view ops and the two `-> ()` mutating ops of extra_native_functions.yaml,
// appended to a copy of the sample's src/kernels.cpp by tests/conftest.py (torch_tree).
#include <ATen/ATen.h>
#include <torch/library.h>

namespace vtsample::views {
namespace {
at::Tensor narrow_last(const at::Tensor& x, c10::SymInt n) { return x.narrow_symint(-1, 0, std::move(n)); }
std::vector<at::Tensor> chunks(const at::Tensor& x, int64_t n) { return x.chunk(n); }
// ATen calls only: the same kernel serves Meta and fake tensors
void cube_(at::Tensor& x) { x.mul_(x * x); }
void mix_(at::Tensor& x, at::Tensor& y, double alpha) {  // x <- x + alpha y, y <- x y (old values)
  auto old = x.clone();
  x.add_(y, alpha);
  y.mul_(old);
}
} // namespace
} // namespace vtsample::views

TORCH_LIBRARY_IMPL(vtsample, CompositeExplicitAutograd, m) {
  m.impl("narrow_last", TORCH_FN(vtsample::views::narrow_last));
  m.impl("chunks", TORCH_FN(vtsample::views::chunks));
  m.impl("cube_", TORCH_FN(vtsample::views::cube_));
  m.impl("mix_", TORCH_FN(vtsample::views::mix_));
}
