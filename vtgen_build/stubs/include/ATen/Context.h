// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
namespace at {
class DeprecatedTypeProperties;
struct Quantizer;
class Context {
 public:
  bool deterministicAlgorithms() const;
  bool userEnabledCuDNN() const;
  bool areVmapFallbackWarningsEnabled() const;
};
Context& globalContext();
} // namespace at
