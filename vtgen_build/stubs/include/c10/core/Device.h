// vtgen_build stub header.
#pragma once
#include <string>
#include <c10/core/DeviceType.h>
namespace c10 {
using DeviceIndex = int8_t;
class Device {
 public:
  /* implicit */ Device(DeviceType type, DeviceIndex index = -1);
  /* implicit */ Device(const std::string& device_string);
  bool operator==(const Device& other) const noexcept;
  bool operator!=(const Device& other) const noexcept;
  DeviceType type() const noexcept;
  DeviceIndex index() const noexcept;
  bool has_index() const noexcept;
  bool is_cuda() const noexcept;
  bool is_cpu() const noexcept;
  bool is_meta() const noexcept;
  bool is_mps() const noexcept;
  bool is_xpu() const noexcept;
  std::string str() const;
};
std::ostream& operator<<(std::ostream& stream, const Device& device);
} // namespace c10
namespace at {
using c10::Device;
using c10::DeviceIndex;
}
