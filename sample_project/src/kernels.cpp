// The kernels of the vtsample ops: the library author's code.  vtgen_build declares each in the
// generated NativeKernels.h (with the signature PyTorch's native API gives its schema) and
// registers it at the dispatch key native_functions.yaml names; it generates the schemas, the
// autograd kernels and Nodes around them, and the structured ops' variants.  Each computes its
// result with ATen ops; it runs below the Autograd key, so nothing here records history.
#include "NativeKernels.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Parallel.h>
#include <c10/core/SymInt.h>
#include <c10/core/SymIntArrayRef.h>

#include <cmath>
#include <tuple>

namespace vtsample {

// -- structured: one meta function, one impl per backend ------------------------------------
// The output has self's shape and options (sym_sizes: fake tensors may have symbolic sizes).
void softsign_meta(vtgen::MetaOutputs& outputs, const at::Tensor& self) {
  outputs.set(0, self.sym_sizes(), self.options());
}

// x / (1 + |x|), into out (allocated, checked or resized by the generated kernels).  A floating self
// and a contiguous out of its dtype (what the functional variant allocates, and its batching rule's
// one call on a whole vmap batch): one pass over the data, nothing allocated (three ATen ops would
// make three passes, a temporary and a tensor of the scalar 1).  Otherwise the quotient is cast
// into out.
void softsign_out(const at::Tensor& self, const at::Tensor& out) {
  if (self.is_floating_point() && out.scalar_type() == self.scalar_type() && out.is_contiguous() &&
      (self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble)) {
    const at::Tensor x = self.contiguous();  // self itself when it is (no copy, no dispatch)
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "softsign_out", [&] {
      const scalar_t* in = x.const_data_ptr<scalar_t>();
      scalar_t* o = out.mutable_data_ptr<scalar_t>();  // may be in (softsign_): each element reads its own
      at::parallel_for(0, x.numel(), at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          o[i] = in[i] / (scalar_t(1) + std::abs(in[i]));
        }
      });
    });
    return;
  }
  out.copy_(self / (self.abs() + 1));
}

// The broadcast shape of self and other, in their promoted dtype: shapes that do not broadcast
// are rejected here, so eager and fake tensors raise the same error.
void scale_add_meta(vtgen::MetaOutputs& outputs, const at::Tensor& self, const at::Tensor& other,
                    const at::Scalar& alpha) {
  auto sizes = at::infer_size_symint(self.sym_sizes(), other.sym_sizes());
  outputs.set(0, sizes, self.options().dtype(at::result_type(self, other)));
}

void scale_add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, const at::Tensor& out) {
  out.copy_(at::add(self, other, alpha));
}

// -- plain kernels -----------------------------------------------------------------------------
// The k entries of largest magnitude along dim, and where they are.
std::tuple<at::Tensor, at::Tensor> topk_abs_cpu(const at::Tensor& self, int64_t k, int64_t dim) {
  auto indices = std::get<1>(at::topk(self.abs(), k, dim));
  return {self.gather(dim, indices), indices};
}

// Its Meta kernel (fake tensors, torch.compile): the shapes and dtypes alone.
std::tuple<at::Tensor, at::Tensor> topk_abs_meta(const at::Tensor& self, int64_t k, int64_t dim) {
  auto d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(k >= 0 && k <= (self.dim() == 0 ? 1 : self.sym_size(d)), "topk_abs: k (", k, ") out of range");
  auto sizes = self.sym_sizes().vec();
  if (!sizes.empty()) {
    sizes[d] = k;
  }
  return {at::empty_symint(sizes, self.options()), at::empty_symint(sizes, self.options().dtype(at::kLong))};
}

at::Tensor stack_mean(at::TensorList tensors, int64_t dim) {
  return at::stack(tensors, dim).mean(dim);
}

at::Tensor affine(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  auto result = input.matmul(weight.t());
  return bias.has_value() && bias->defined() ? result + *bias : result;
}

// Broadcast self to size, as a new tensor.
at::Tensor tile_to_symint(const at::Tensor& self, c10::SymIntArrayRef size) {
  return self.expand_symint(size).clone();
}

// A view: self with two dimensions swapped, sharing its storage.
at::Tensor swap_dims(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  return self.transpose(dim0, dim1);
}

// x - step/(2 pi) sin(2 pi x / step): a smooth staircase with steps of scale / 2^(bits-1).
at::Tensor soft_quantize_cpu(const at::Tensor& self, const at::Tensor& scale, int64_t bits) {
  auto step = scale / std::ldexp(1.0, static_cast<int>(bits - 1));
  return self - step / (2 * M_PI) * at::sin(2 * M_PI * self / step);
}

} // namespace vtsample
