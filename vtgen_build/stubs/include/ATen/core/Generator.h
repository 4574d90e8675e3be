// vtgen_build stub header.
#pragma once
#include <c10/core/Device.h>
namespace at {
class Generator {
 public:
  Generator();
  bool defined() const;
  Device device() const;
  uint64_t current_seed() const;
  bool operator==(const Generator& rhs) const;
  bool operator!=(const Generator& rhs) const;
};
} // namespace at
