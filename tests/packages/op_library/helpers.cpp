// Definitions of the sample helpers for the link test only (the sample's own sources provide real ones).
#include <vtsample/helpers.h>
#include <ATen/ATen.h>
namespace torch::autograd::generated::details {
at::Tensor not_implemented(const char* name, const char*) { TORCH_CHECK(false, name); }
at::Tensor softsign_backward(const at::Tensor& grad, const at::Tensor& self) { return grad / (1 + self.abs()).pow(2); }
at::Tensor handle_r_to_c(c10::ScalarType, at::Tensor g) { return g; }
at::Tensor maybe_multiply(const at::Tensor& t, const at::Scalar& s) { return t * s; }
at::Tensor value_selecting_backward(const at::Tensor& grad, int64_t, const at::Tensor&, c10::SymIntArrayRef) { return grad; }
at::Tensor gather_along(const at::Tensor& t, int64_t, const at::Tensor&) { return t; }
std::vector<at::Tensor> stack_mean_backward(const at::Tensor& grad, int64_t, size_t n) { return std::vector<at::Tensor>(n, grad); }
std::tuple<at::Tensor, at::Tensor, at::Tensor> affine_backward(const at::Tensor& g, const at::Tensor&, const at::Tensor&, std::array<bool, 3>) { return {g, g, g}; }
at::Tensor affine_jvp(const at::Tensor& a, const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&) { return a; }
at::Tensor sum_to_sizes(const at::Tensor& grad, c10::SymIntArrayRef) { return grad; }
at::Tensor tile_to_jvp(const at::Tensor& t, c10::SymIntArrayRef) { return t; }
at::Tensor soft_quantize_backward(const at::Tensor& g, const at::Tensor&, const at::Tensor&, int64_t) { return g; }
}
