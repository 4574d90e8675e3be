// vtgen_build stub header.
#pragma once
namespace c10 {
struct InferenceMode {
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  static bool is_enabled();
};
} // namespace c10
