// vtgen_build stub header.
#pragma once
#include <c10/core/Device.h>
namespace c10 {
class Stream {
 public:
  Device device() const noexcept;
  int64_t id() const noexcept;
  bool operator==(const Stream&) const noexcept;
};
} // namespace c10
namespace at {
using c10::Stream;
}
