// vtgen_build stub header: TensorIterator, as a structured op's generated kernels and meta function use it.
#pragma once
#include <ATen/core/TensorBody.h>
#include <c10/util/MaybeOwned.h>

namespace at {
class TensorIteratorBase;
class TensorIterator;

class TensorIteratorConfig {
 public:
  TensorIteratorConfig();
  TensorIteratorConfig& add_output(const TensorBase& output);
  TensorIteratorConfig& add_owned_output(const TensorBase& output);
  TensorIteratorConfig& add_input(const TensorBase& input);
  TensorIteratorConfig& add_const_input(const TensorBase& input);
  TensorIteratorConfig& add_owned_input(const TensorBase& input);
  TensorIteratorConfig& check_all_same_dtype(bool check);
  TensorIteratorConfig& promote_inputs_to_common_dtype(bool promote);
  TensorIteratorConfig& cast_common_dtype_to_outputs(bool cast);
  TensorIteratorConfig& enforce_safe_casting_to_output(bool check);
  TensorIteratorConfig& resize_outputs(bool resize);
  TensorIteratorConfig& set_check_mem_overlap(bool check);
  TensorIteratorConfig& allow_cpu_scalars(bool allow);
  TensorIterator build();
};

class TensorIteratorBase {
 public:
  int ndim() const;
  int64_t numel() const;
  int ntensors() const;
  int noutputs() const;
  int ninputs() const;
  IntArrayRef shape() const;
  ScalarType dtype(int64_t arg = 0) const;
  ScalarType common_dtype() const;
  Device device(int64_t arg = 0) const;
  const Tensor& output(int64_t arg = 0) const;
  const Tensor& input(int64_t arg = 0) const;
  const TensorBase& tensor_base(int64_t arg) const;
};

class TensorIterator final : public TensorIteratorBase {};
} // namespace at
