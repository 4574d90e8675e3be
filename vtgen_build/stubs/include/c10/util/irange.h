// vtgen_build stub header: c10::irange.
#pragma once
#include <cstdint>
#include <type_traits>

namespace c10 {
template <typename I>
class integer_range {
 public:
  class iterator {
   public:
    I operator*() const;
    iterator& operator++();
    bool operator!=(const iterator&) const;
    bool operator==(const iterator&) const;
  };
  iterator begin() const;
  iterator end() const;
};
template <typename I1, typename I2,
          typename = std::enable_if_t<std::is_integral_v<I1> && std::is_integral_v<I2>>>
integer_range<I2> irange(I1 begin, I2 end);
template <typename I, typename = std::enable_if_t<std::is_integral_v<I>>>
integer_range<I> irange(I end);
} // namespace c10
