// vtgen_build stub header.
#pragma once
#include <cstdint>
namespace c10 {
struct VariableVersion {
  uint32_t current_version() const noexcept;
  void bump() noexcept;
};
} // namespace c10
namespace torch::autograd {
struct ForwardADLevel {
  static uint64_t get_next_idx();
  static void release_idx(uint64_t idx);
};
} // namespace torch::autograd
