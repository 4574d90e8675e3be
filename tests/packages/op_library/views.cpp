// Kernels of the view ops, the `-> ()` mutating ops and the structured blend and cubic of
// extra_native_functions.yaml, appended to a copy of the sample's src/kernels.cpp by
// tests/conftest.py (torch_tree); the generated Register<Key>.cpp units register them.
namespace vtsample {
at::Tensor narrow_last_symint(const at::Tensor& x, c10::SymInt n) { return x.narrow_symint(-1, 0, std::move(n)); }
std::vector<at::Tensor> chunks(const at::Tensor& x, int64_t n) { return x.chunk(n); }

// ATen calls only: the same kernel serves Meta and fake tensors
void cube_(at::Tensor& x) { x.mul_(x * x); }
void mix_(at::Tensor& x, at::Tensor& y, double alpha) {  // x <- x + alpha y, y <- x y (old values)
  auto old = x.clone();
  x.add_(y, alpha);
  y.mul_(old);
}

// blend: a structured op on a TensorIterator; `power` reaches the impl as the precomputed `scale`.
blend_precomputed blend_meta(at::TensorIteratorConfig& config, const at::Tensor& self, const at::Tensor& other,
                             int64_t power) {
  TORCH_CHECK(power >= 0, "blend: power must be non-negative, got ", power);
  config.add_const_input(self).add_const_input(other).promote_inputs_to_common_dtype(true);
  return {std::ldexp(1.0, static_cast<int>(-power))};
}

void blend_out(at::TensorIteratorBase& iter, const at::Tensor& self, const at::Tensor& other, double scale,
               const at::Tensor& out) {
  out.copy_((iter.input(0) + iter.input(1)) * scale);
}

// cubic: scale * x^3, structured (a keyword-only Scalar: tests/test_op_library.py compiles it with Inductor).
void cubic_meta(vtgen::MetaOutputs& outputs, const at::Tensor& self, const at::Scalar& scale) {
  outputs.set(0, self.sym_sizes(), self.options());
}

void cubic_out(const at::Tensor& self, const at::Scalar& scale, const at::Tensor& out) {
  out.copy_(self * self * self * scale);
}
} // namespace vtsample
