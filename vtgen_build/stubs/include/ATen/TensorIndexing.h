// vtgen_build stub header: the C++ indexing API (t.index({Slice(), 0})).
#pragma once
#include <optional>
#include <ATen/core/TensorBody.h>
namespace at::indexing {
struct EllipsisIndexType {};
extern const EllipsisIndexType Ellipsis;
class Slice {
 public:
  Slice(std::optional<c10::SymInt> start_index = std::nullopt, std::optional<c10::SymInt> stop_index = std::nullopt,
        std::optional<c10::SymInt> step_index = std::nullopt);
};
struct TensorIndex {
  TensorIndex(std::nullopt_t);
  TensorIndex(c10::SymInt integer);
  TensorIndex(int64_t integer);
  TensorIndex(int integer);
  TensorIndex(EllipsisIndexType);
  TensorIndex(const char* str);
  TensorIndex(bool boolean);
  TensorIndex(Slice slice);
  TensorIndex(Tensor tensor);
};
constexpr std::nullopt_t None = std::nullopt;
} // namespace at::indexing
