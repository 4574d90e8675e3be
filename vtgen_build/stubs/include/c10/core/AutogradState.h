// vtgen_build stub header: the thread-local autograd state (view replay, grad mode, ...).
#pragma once
namespace c10 {
struct AutogradState {
  static AutogradState& get_tls_state();
  bool get_view_replay_enabled() const;
};
} // namespace c10
