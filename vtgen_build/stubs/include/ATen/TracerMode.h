// vtgen_build stub header.
#pragma once
namespace at::tracer::impl {
bool is_dispatch_enabled();
void set_dispatch_enabled(bool enabled);
struct NoTracerDispatchMode {
  NoTracerDispatchMode();
  ~NoTracerDispatchMode();
};
} // namespace at::tracer::impl
