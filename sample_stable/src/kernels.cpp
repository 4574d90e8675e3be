// The vtstable kernels, on the LibTorch stable ABI only: torch::stable::Tensor and the stable ops,
// no ATen.  NativeKernels.h (generated) declares each with the types of its schema; the generated
// Register<Key>.cpp box and register them, and the structured softsign's variants call
// softsign_meta and softsign_out.
#include "NativeKernels.h"

#include <cmath>
#include <cstdint>

namespace vtstable {
namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;

// Runs fn(T{}) with T the C++ type of a float32 or float64 tensor.
template <typename Fn>
void floating(ScalarType dtype, const char* op, Fn fn) {
  switch (dtype) {
    case ScalarType::Float:
      fn(float{});
      break;
    case ScalarType::Double:
      fn(double{});
      break;
    default:
      STD_TORCH_CHECK(false, op, ": expected a float32 or float64 tensor");
  }
}

void check_cpu(const Tensor& t, const char* op) {
  STD_TORCH_CHECK(t.is_cpu(), op, ": expected a CPU tensor");
}

// Writes f(x[i]...) element-wise into out (any strides: through a contiguous result when needed).
template <typename T, typename F>
void elementwise(Tensor out, F f, int64_t n) {
  Tensor dest = out.is_contiguous() ? out : torch::stable::empty_like(out);
  T* o = dest.mutable_data_ptr<T>();
  for (int64_t i = 0; i < n; ++i) {
    o[i] = f(i);
  }
  if (!out.is_contiguous()) {
    torch::stable::copy_(out, dest);
  }
}

} // namespace

// -- softsign: x / (1 + |x|), structured --------------------------------------------------------
void softsign_meta(vtgen::stable::MetaOutputs& outputs, const Tensor& self) {
  outputs.set_like(0, self);
}

void softsign_out(const Tensor& self, const Tensor& out) {
  check_cpu(self, "softsign");
  Tensor x = torch::stable::contiguous(self);
  floating(x.scalar_type(), "softsign", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.const_data_ptr<T>();
    elementwise<T>(out, [in](int64_t i) { return in[i] / (T(1) + std::abs(in[i])); }, x.numel());
  });
}

// d softsign / dx = 1 / (1 + |x|)^2
Tensor softsign_backward_cpu(const Tensor& grad, const Tensor& self) {
  check_cpu(self, "softsign_backward");
  STD_TORCH_CHECK(grad.sizes() == self.sizes(), "softsign_backward: grad and self differ in size");
  Tensor g = torch::stable::contiguous(grad);
  Tensor x = torch::stable::contiguous(self);
  Tensor result = torch::stable::empty_like(x);
  floating(x.scalar_type(), "softsign_backward", [&](auto zero) {
    using T = decltype(zero);
    const T* gp = g.const_data_ptr<T>();
    const T* xp = x.const_data_ptr<T>();
    elementwise<T>(result, [gp, xp](int64_t i) {
      T d = T(1) + std::abs(xp[i]);
      return gp[i] / (d * d);
    }, x.numel());
  });
  return result;
}

// -- sincos: two outputs, and its C++ Meta kernel --------------------------------------------------
std::tuple<Tensor, Tensor> sincos_cpu(const Tensor& self) {
  check_cpu(self, "sincos");
  Tensor x = torch::stable::contiguous(self);
  Tensor s = torch::stable::empty_like(x);
  Tensor c = torch::stable::empty_like(x);
  floating(x.scalar_type(), "sincos", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.const_data_ptr<T>();
    elementwise<T>(s, [in](int64_t i) { return std::sin(in[i]); }, x.numel());
    elementwise<T>(c, [in](int64_t i) { return std::cos(in[i]); }, x.numel());
  });
  return {s, c};
}

std::tuple<Tensor, Tensor> sincos_meta(const Tensor& self) {
  return {torch::stable::empty_like(self), torch::stable::empty_like(self)};
}

// -- affine: input * weight (+ bias), an optional tensor -------------------------------------------
Tensor affine_cpu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  check_cpu(input, "affine");
  STD_TORCH_CHECK(weight.sizes() == input.sizes(), "affine: weight must have the sizes of input");
  STD_TORCH_CHECK(!bias.has_value() || bias->sizes() == input.sizes(), "affine: bias must have the sizes of input");
  STD_TORCH_CHECK(weight.scalar_type() == input.scalar_type(), "affine: weight must have the dtype of input");
  Tensor x = torch::stable::contiguous(input);
  Tensor w = torch::stable::contiguous(weight);
  std::optional<Tensor> b;
  if (bias.has_value()) {
    STD_TORCH_CHECK(bias->scalar_type() == input.scalar_type(), "affine: bias must have the dtype of input");
    b = torch::stable::contiguous(*bias);
  }
  Tensor result = torch::stable::empty_like(x);
  floating(x.scalar_type(), "affine", [&](auto zero) {
    using T = decltype(zero);
    const T* xp = x.const_data_ptr<T>();
    const T* wp = w.const_data_ptr<T>();
    const T* bp = b.has_value() ? b->const_data_ptr<T>() : nullptr;
    elementwise<T>(result, [xp, wp, bp](int64_t i) { return xp[i] * wp[i] + (bp ? bp[i] : T(0)); }, x.numel());
  });
  return result;
}

// -- clamp_abs_: mutates self, returns nothing ---------------------------------------------------
void clamp_abs_cpu(Tensor& self, double bound) {
  check_cpu(self, "clamp_abs_");
  STD_TORCH_CHECK(bound >= 0, "clamp_abs_: bound must be >= 0, got ", bound);
  Tensor x = torch::stable::contiguous(self);
  floating(x.scalar_type(), "clamp_abs_", [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.const_data_ptr<T>();
    T b = static_cast<T>(bound);
    elementwise<T>(self, [in, b](int64_t i) { return std::fmin(std::fmax(in[i], -b), b); }, x.numel());
  });
}

} // namespace vtstable
