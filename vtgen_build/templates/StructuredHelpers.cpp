// The outputs of a structured op's variants, as its meta function decided them.
[[maybe_unused]] at::Tensor vtgen_allocate(const vtgen::MetaOutputs& outputs, size_t i) {
  return at::empty_symint(outputs.sizes(i), outputs.options(i));
}

[[maybe_unused]] void vtgen_check_inplace(const vtgen::MetaOutputs& outputs, size_t i, const at::Tensor& self) {
  TORCH_CHECK(self.sym_sizes() == outputs.sizes(i), "output with shape ", self.sym_sizes(),
              " doesn't match the broadcast shape ", outputs.sizes(i));
  auto result = c10::typeMetaToScalarType(outputs.options(i).dtype());
  TORCH_CHECK(c10::canCast(result, self.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", self.scalar_type());
}

[[maybe_unused]] void vtgen_resize_out(const vtgen::MetaOutputs& outputs, size_t i, const at::Tensor& out) {
  auto result = c10::typeMetaToScalarType(outputs.options(i).dtype());
  TORCH_CHECK(c10::canCast(result, out.scalar_type()), "result type ", result,
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output_symint(out, outputs.sizes(i));
}
