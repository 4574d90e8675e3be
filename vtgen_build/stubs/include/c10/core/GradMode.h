// vtgen_build stub header.
#pragma once
namespace c10 {
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};
struct AutoGradMode {
  explicit AutoGradMode(bool enabled);
  ~AutoGradMode();
};
struct NoGradGuard : public AutoGradMode {
  NoGradGuard();
};
struct AutoFwGradMode {
  explicit AutoFwGradMode(bool enabled);
  ~AutoFwGradMode();
};
} // namespace c10
namespace at {
using c10::AutoFwGradMode;
using c10::AutoGradMode;
using c10::GradMode;
using c10::NoGradGuard;
} // namespace at
