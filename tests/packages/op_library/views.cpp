// Kernels of the two view ops of extra_native_functions.yaml, appended to a copy of the
// sample's src/kernels.cpp by tests/conftest.py (torch_tree); the generated
// RegisterCompositeExplicitAutograd.cpp registers them.
namespace vtsample {
at::Tensor narrow_last_symint(const at::Tensor& x, c10::SymInt n) { return x.narrow_symint(-1, 0, std::move(n)); }
std::vector<at::Tensor> chunks(const at::Tensor& x, int64_t n) { return x.chunk(n); }
} // namespace vtsample
