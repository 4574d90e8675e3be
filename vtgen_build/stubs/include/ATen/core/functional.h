// vtgen_build stub header: c10::fmap / filter.
#pragma once
#include <type_traits>
#include <utility>
#include <vector>
namespace c10 {
// Bodies are given because callers pass lambdas (local types need a definition).
template <typename F, typename T>
auto fmap(const T& inputs, const F& fn) -> std::vector<decltype(fn(*inputs.begin()))> {
  std::vector<decltype(fn(*inputs.begin()))> r;
  for (const auto& x : inputs) r.push_back(fn(x));
  return r;
}
template <typename F, typename T>
auto fmap(T& inputs, const F& fn) -> std::vector<decltype(fn(*inputs.begin()))> {
  std::vector<decltype(fn(*inputs.begin()))> r;
  for (auto& x : inputs) r.push_back(fn(x));
  return r;
}
template <typename R, typename T>
std::vector<R> fmap(const T& inputs);
template <typename F, typename T>
std::vector<T> filter(const std::vector<T>& inputs, const F& fn) {
  std::vector<T> r;
  for (const auto& x : inputs) if (fn(x)) r.push_back(x);
  return r;
}
} // namespace c10
