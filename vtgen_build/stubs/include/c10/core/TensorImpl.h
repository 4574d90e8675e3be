// vtgen_build stub header: the parts of TensorImpl generated code touches.
#pragma once
#include <c10/core/DispatchKeySet.h>
#include <c10/core/Storage.h>
#include <c10/core/SymInt.h>
#include <c10/util/intrusive_ptr.h>

namespace c10::impl {
class PyObjectSlot {
 public:
  void* load_pyobj() const;
};
} // namespace c10::impl

namespace c10 {
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface();
};
class TensorImpl : public intrusive_ptr_target {
 public:
  impl::PyObjectSlot* pyobj_slot();
  const impl::PyObjectSlot* pyobj_slot() const;
  DispatchKeySet key_set() const;
  IntArrayRef sizes() const;
  SymIntArrayRef sym_sizes() const;
  IntArrayRef strides() const;
  SymIntArrayRef sym_strides() const;
  int64_t dim() const;
  int64_t numel() const;
  bool is_python_dispatch() const;
  bool support_as_strided() const;
  bool is_wrapped_number() const;
  void set_wrapped_number(bool value);
  bool is_contiguous() const;
  bool has_storage() const;
  const Storage& storage() const;
  AutogradMetaInterface* autograd_meta() const;
  int64_t version_counter_value() const;
};
class UndefinedTensorImpl : public TensorImpl {
 public:
  static TensorImpl* singleton();
};
} // namespace c10
namespace at {
using c10::TensorImpl;
using c10::UndefinedTensorImpl;
}
