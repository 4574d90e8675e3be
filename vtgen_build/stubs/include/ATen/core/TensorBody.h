// vtgen_build stub header: at::TensorBase and at::Tensor.
//
// The hand-written members here are the ones PyTorch does not generate from
// native_functions.yaml (accessors, autograd metadata, manual_cpp_binding ops).
// The methods of every op come from <vtgen_decls/TensorMethods.inc>, written by
// vtgen_build.stubs.gen_decls into the check build's include directory.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>
#include <c10/core/Device.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/QScheme.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/core/Storage.h>
#include <c10/core/Stream.h>
#include <c10/core/SymInt.h>
#include <c10/core/SymIntArrayRef.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/TensorOptions.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/DimVector.h>
#include <c10/util/Exception.h>
#include <c10/util/OptionalArrayRef.h>
#include <c10/util/intrusive_ptr.h>
#include <c10/util/string_view.h>
#include <ATen/core/Generator.h>
#include <ATen/core/List.h>
#include <ATen/core/IListRef.h>

namespace torch::autograd {
struct Node;
}

namespace at {
class Tensor;
class TensorBase;
struct GraphModule;
namespace indexing {
struct TensorIndex;
}

using TensorList = ArrayRef<Tensor>;
using ITensorListRef = c10::IListRef<Tensor>;
using IOptTensorListRef = c10::IListRef<std::optional<Tensor>>;

class TensorBase {
 public:
  TensorBase();
  TensorBase(const TensorBase&);
  TensorBase(TensorBase&&) noexcept;
  explicit TensorBase(c10::intrusive_ptr<TensorImpl> impl);
  TensorBase& operator=(const TensorBase&) &;
  TensorBase& operator=(TensorBase&&) & noexcept;

  bool defined() const;
  void reset();
  size_t use_count() const noexcept;
  size_t weak_use_count() const noexcept;
  bool is_same(const TensorBase& other) const noexcept;
  TensorImpl* unsafeGetTensorImpl() const;
  TensorImpl* unsafeReleaseTensorImpl();
  const c10::intrusive_ptr<TensorImpl>& getIntrusivePtr() const;
  c10::intrusive_ptr<TensorImpl> unsafeReleaseIntrusivePtr();

  int64_t ndimension() const;
  IntArrayRef sizes() const;
  c10::SymIntArrayRef sym_sizes() const;
  IntArrayRef strides() const;
  c10::SymIntArrayRef sym_strides() const;
  std::optional<c10::SymIntArrayRef> sym_strides_opt() const;
  c10::SymInt sym_nbytes() const;
  size_t nbytes() const;
  size_t itemsize() const;
  int64_t element_size() const;
  bool has_storage() const;
  const Storage& storage() const;
  bool is_alias_of(const TensorBase& other) const;
  ScalarType scalar_type() const;
  caffe2::TypeMeta dtype() const noexcept;
  TensorOptions options() const;
  Device device() const;
  Layout layout() const;
  c10::DispatchKeySet key_set() const;
  MemoryFormat suggest_memory_format(bool channels_last_strides_exact_match = false) const;
  bool is_non_overlapping_and_dense() const;
  bool is_cpu() const;
  bool is_cuda() const;
  bool is_xpu() const;
  bool is_mps() const;
  bool is_meta() const;
  bool is_sparse() const;
  bool is_sparse_csr() const;
  bool is_mkldnn() const;
  bool is_quantized() const;
  bool is_nested() const;
  bool is_privateuseone() const;
  bool has_names() const;
  std::string toString() const;
  void print() const;

  template <typename T>
  T item() const;
  template <typename T>
  const T* const_data_ptr() const;
  template <typename T>
  T* mutable_data_ptr() const;
  template <typename T>
  T* data_ptr() const;
  const void* const_data_ptr() const;
  void* mutable_data_ptr() const;
  void* data_ptr() const;

  // autograd metadata
  bool requires_grad() const;
  const TensorBase& set_requires_grad(bool requires_grad) const;
  const std::shared_ptr<torch::autograd::Node>& grad_fn() const;
  bool is_view() const;
  const TensorBase& _base() const;
  const std::string& name() const;
};

class Tensor : public TensorBase {
 public:
  Tensor();
  Tensor(const Tensor&);
  Tensor(Tensor&&) noexcept;
  /* implicit */ Tensor(const TensorBase& base);
  /* implicit */ Tensor(TensorBase&& base);
  explicit Tensor(c10::intrusive_ptr<TensorImpl> impl);
  Tensor& operator=(const TensorBase& x) &;
  Tensor& operator=(TensorBase&& x) & noexcept;
  Tensor& operator=(const Tensor& x) &;
  Tensor& operator=(Tensor&& x) & noexcept;
  Tensor& operator=(const Scalar& v) &&;
  Tensor& operator=(const Tensor& rhs) &&;
  Tensor& operator=(Tensor&& rhs) &&;

  Tensor operator~() const;
  Tensor operator-() const;
  Tensor& operator+=(const Tensor& other);
  Tensor& operator+=(const Scalar& other);
  Tensor& operator-=(const Tensor& other);
  Tensor& operator-=(const Scalar& other);
  Tensor& operator*=(const Tensor& other);
  Tensor& operator*=(const Scalar& other);
  Tensor& operator/=(const Tensor& other);
  Tensor& operator/=(const Scalar& other);
  Tensor& operator&=(const Tensor& other);
  Tensor& operator|=(const Tensor& other);
  Tensor& operator^=(const Tensor& other);
  Tensor operator[](const Scalar& index) const;
  Tensor operator[](const Tensor& index) const;
  Tensor operator[](int64_t index) const;

  Tensor index(ArrayRef<at::indexing::TensorIndex> indices) const;
  Tensor index(std::initializer_list<at::indexing::TensorIndex> indices) const;
  Tensor& index_put_(ArrayRef<at::indexing::TensorIndex> indices, const Tensor& rhs);
  Tensor& index_put_(ArrayRef<at::indexing::TensorIndex> indices, const Scalar& v);
  Tensor& index_put_(std::initializer_list<at::indexing::TensorIndex> indices, const Tensor& rhs);
  Tensor& index_put_(std::initializer_list<at::indexing::TensorIndex> indices, const Scalar& v);

  // ops declared with manual_cpp_binding in native_functions.yaml
  void _backward(TensorList inputs, const std::optional<Tensor>& gradient = {},
                 std::optional<bool> keep_graph = std::nullopt, bool create_graph = false) const;
  void set_data(const Tensor& new_data) const;
  Tensor data() const;
  bool is_leaf() const;
  int64_t output_nr() const;
  int64_t _version() const;
  const Tensor& requires_grad_(bool requires_grad = true) const;
  void retain_grad() const;
  bool retains_grad() const;
  Tensor conj() const;
  Tensor contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  bool is_floating_point() const;
  bool is_complex() const;
  bool is_conj() const;
  bool _is_zerotensor() const;
  bool is_neg() const;
  bool is_signed() const;
  bool is_inference() const;
  int64_t numel() const;
  c10::SymInt sym_numel() const;
  int64_t dim() const;
  DeviceIndex get_device() const;
  int64_t storage_offset() const;
  c10::SymInt sym_storage_offset() const;
  bool is_contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  c10::SymBool sym_is_contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  int64_t size(int64_t dim) const;
  c10::SymInt sym_size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  c10::SymInt sym_stride(int64_t dim) const;

  // autograd, hand-written in PyTorch
  Tensor& mutable_grad() const;
  const Tensor& grad() const;
  const Tensor& _fw_grad(uint64_t level) const;
  void _set_fw_grad(const TensorBase& new_grad, uint64_t level, bool is_inplace_op) const;
  Tensor tensor_data() const;
  Tensor variable_data() const;
  Tensor toType(ScalarType t) const;
  template <typename T>
  unsigned register_hook(T&& hook) const;
  void remove_hook(unsigned pos) const;
  c10::MaybeOwned<Tensor> expect_contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const&;

#include <vtgen_decls/TensorMethods.inc>
};

// Free operators (ATen/TensorOperators.h in PyTorch).
#define VTGEN_STUB_TENSOR_BINARY_OP(op)                 \
  Tensor operator op(const Tensor& a, const Tensor& b); \
  Tensor operator op(const Tensor& a, const Scalar& b); \
  Tensor operator op(const Scalar& a, const Tensor& b);
VTGEN_STUB_TENSOR_BINARY_OP(+)
VTGEN_STUB_TENSOR_BINARY_OP(-)
VTGEN_STUB_TENSOR_BINARY_OP(*)
VTGEN_STUB_TENSOR_BINARY_OP(/)
VTGEN_STUB_TENSOR_BINARY_OP(%)
VTGEN_STUB_TENSOR_BINARY_OP(&)
VTGEN_STUB_TENSOR_BINARY_OP(|)
VTGEN_STUB_TENSOR_BINARY_OP(^)
VTGEN_STUB_TENSOR_BINARY_OP(<)
VTGEN_STUB_TENSOR_BINARY_OP(<=)
VTGEN_STUB_TENSOR_BINARY_OP(>)
VTGEN_STUB_TENSOR_BINARY_OP(>=)
VTGEN_STUB_TENSOR_BINARY_OP(==)
VTGEN_STUB_TENSOR_BINARY_OP(!=)
#undef VTGEN_STUB_TENSOR_BINARY_OP
std::ostream& operator<<(std::ostream& out, const TensorBase& t);
} // namespace at
