// vtgen_build stub header: c10::SmallVector (modelled as a std::vector).
#pragma once
#include <vector>
#include <c10/util/ArrayRef.h>

namespace c10 {
template <typename T, unsigned N>
class SmallVector : public std::vector<T> {
 public:
  using std::vector<T>::vector;
  SmallVector();
  template <typename U>
  explicit SmallVector(ArrayRef<U> values);
  template <typename Container>
  explicit SmallVector(Container&& c);
};
} // namespace c10
