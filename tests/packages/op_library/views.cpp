// Kernels of the two view ops of extra_native_functions.yaml, appended to a copy of the
// sample's src/kernels.cpp by tests/conftest.py (torch_tree).
#include <ATen/ATen.h>
#include <torch/library.h>

namespace vtsample::views {
namespace {
at::Tensor narrow_last(const at::Tensor& x, c10::SymInt n) { return x.narrow_symint(-1, 0, std::move(n)); }
std::vector<at::Tensor> chunks(const at::Tensor& x, int64_t n) { return x.chunk(n); }
} // namespace
} // namespace vtsample::views

TORCH_LIBRARY_IMPL(vtsample, CompositeExplicitAutograd, m) {
  m.impl("narrow_last", TORCH_FN(vtsample::views::narrow_last));
  m.impl("chunks", TORCH_FN(vtsample::views::chunks));
}
