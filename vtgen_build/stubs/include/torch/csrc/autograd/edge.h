// vtgen_build stub header.
#pragma once
#include <cstdint>
#include <c10/util/intrusive_ptr.h>
namespace torch::autograd {
struct Node;
struct Edge {
  Edge() noexcept;
  Edge(c10::intrusive_ptr<Node> function_, uint32_t input_nr_) noexcept;
  bool is_valid() const noexcept;
  bool operator==(const Edge& other) const noexcept;
  bool operator!=(const Edge& other) const noexcept;
  c10::intrusive_ptr<Node> function;
  uint32_t input_nr;
};
} // namespace torch::autograd
