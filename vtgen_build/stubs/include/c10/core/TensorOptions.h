// vtgen_build stub header: c10::TensorOptions.
#pragma once
#include <optional>
#include <c10/core/Device.h>
#include <c10/core/Layout.h>
#include <c10/core/MemoryFormat.h>
#include <c10/core/ScalarType.h>

namespace c10 {
class TensorOptions {
 public:
  TensorOptions();
  /* implicit */ TensorOptions(Layout layout);
  /* implicit */ TensorOptions(Device device);
  /* implicit */ TensorOptions(DeviceType device_type);
  /* implicit */ TensorOptions(caffe2::TypeMeta dtype);
  /* implicit */ TensorOptions(ScalarType dtype);
  /* implicit */ TensorOptions(MemoryFormat memory_format);

  TensorOptions device(std::optional<Device> device) const noexcept;
  TensorOptions device_index(DeviceIndex device_index) const noexcept;
  TensorOptions dtype(std::optional<caffe2::TypeMeta> dtype) const noexcept;
  TensorOptions dtype(std::optional<ScalarType> dtype) const noexcept;
  template <typename T>
  TensorOptions dtype() const noexcept;
  TensorOptions layout(std::optional<Layout> layout) const noexcept;
  TensorOptions requires_grad(std::optional<bool> requires_grad) const noexcept;
  TensorOptions pinned_memory(std::optional<bool> pinned_memory) const noexcept;
  TensorOptions memory_format(std::optional<MemoryFormat> memory_format) const noexcept;

  Device device() const noexcept;
  bool has_device() const noexcept;
  std::optional<Device> device_opt() const noexcept;
  caffe2::TypeMeta dtype() const noexcept;
  bool has_dtype() const noexcept;
  std::optional<ScalarType> dtype_opt() const noexcept;
  Layout layout() const noexcept;
  bool has_layout() const noexcept;
  std::optional<Layout> layout_opt() const noexcept;
  bool requires_grad() const noexcept;
  bool pinned_memory() const noexcept;
  std::optional<bool> pinned_memory_opt() const noexcept;
  std::optional<MemoryFormat> memory_format_opt() const noexcept;
  bool is_sparse() const;
  bool type_equal(const TensorOptions& other) const;
};
TensorOptions dtype(caffe2::TypeMeta dtype);
TensorOptions dtype(ScalarType dtype);
template <typename T>
TensorOptions dtype();
TensorOptions layout(Layout layout);
TensorOptions device(Device device);
TensorOptions device_index(DeviceIndex device_index);
TensorOptions requires_grad(bool requires_grad = true);
TensorOptions memory_format(MemoryFormat memory_format);
std::ostream& operator<<(std::ostream& stream, const TensorOptions& options);
ScalarType optTypeMetaToScalarType(std::optional<caffe2::TypeMeta> type_meta);
inline ScalarType typeMetaToScalarType(caffe2::TypeMeta dtype) { return dtype.toScalarType(); }
} // namespace c10
namespace at {
using c10::TensorOptions;
using c10::dtype; using c10::layout; using c10::device; using c10::requires_grad;
using c10::memory_format; using c10::device_index; using c10::typeMetaToScalarType;
using c10::optTypeMetaToScalarType;
} // namespace at
