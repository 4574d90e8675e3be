// vtgen_build stub header: kernel registration (TORCH_LIBRARY_IMPL, TORCH_FN, m.impl).
#pragma once
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include <ATen/core/TensorBody.h>
#include <ATen/core/enum_tag.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace c10 {
// A function pointer known at compile time (what TORCH_FN makes).
template <class FuncType, FuncType* kFuncPtr>
struct CompileTimeFunctionPointer {
  static_assert(std::is_function_v<FuncType>, "TORCH_FN takes a function");
  using FuncType_ = FuncType;
  static constexpr FuncType* func_ptr() { return kFuncPtr; }
};
} // namespace c10

namespace torch {
class CppFunction {
 public:
  template <typename Func, typename = std::enable_if_t<std::is_function_v<Func>>>
  explicit CppFunction(Func* f);
  template <class FuncPtr>
  explicit CppFunction(FuncPtr f, std::enable_if_t<std::is_class_v<FuncPtr>, int> = 0);
  static CppFunction makeFallthrough();
  template <c10::DispatchKey Key>
  static CppFunction makeFromBoxedFunction();
};

// The member templates taking a kernel have bodies: a kernel with internal linkage (the
// generated ones live in an anonymous namespace) gives their instantiation internal linkage,
// and a declared-only one would warn "used but never defined".
class Library {
 public:
  enum Kind { DEF, IMPL, FRAGMENT };
  template <typename Name, typename Func>
  Library& impl(Name /*name*/, Func&& /*raw_f*/) & { return *this; }
  template <typename Func>
  Library& fallback(Func&& /*raw_f*/) & { return *this; }
  template <typename Schema>
  Library& def(Schema&& schema) &;
  Library& def(const char* raw_schema, const std::vector<at::Tag>& tags) &;
  template <typename NameOrSchema, typename Func>
  Library& def(NameOrSchema&& name_or_schema, Func&& raw_f) &;
};
namespace detail {
class TorchLibraryInit {
 public:
  TorchLibraryInit(Library::Kind kind, void (*fn)(Library&), const char* ns, std::optional<c10::DispatchKey> k,
                   const char* file, uint32_t line);
};
} // namespace detail
} // namespace torch

#define TORCH_FN_TYPE(func) \
  ::c10::CompileTimeFunctionPointer<std::remove_pointer_t<std::remove_reference_t<decltype(func)>>, func>
#define TORCH_FN(func) TORCH_FN_TYPE(func)()

#define TORCH_LIBRARY_IMPL(ns, k, m) VTGEN_STUB_LIBRARY_IMPL_(ns, k, m, C10_UID)
#define VTGEN_STUB_LIBRARY_IMPL_(ns, k, m, uid) VTGEN_STUB_LIBRARY_IMPL2_(ns, k, m, uid)
#define VTGEN_STUB_LIBRARY_IMPL2_(ns, k, m, uid)                                                        \
  static void TORCH_LIBRARY_IMPL_init_##ns##_##k##_##uid(torch::Library&);                             \
  static const torch::detail::TorchLibraryInit TORCH_LIBRARY_IMPL_static_init_##ns##_##k##_##uid(       \
      torch::Library::IMPL, &TORCH_LIBRARY_IMPL_init_##ns##_##k##_##uid, #ns,                           \
      std::make_optional(c10::DispatchKey::k), __FILE__, __LINE__);                                      \
  void TORCH_LIBRARY_IMPL_init_##ns##_##k##_##uid(torch::Library& m)
#define TORCH_LIBRARY(ns, m)                                                                           \
  static void TORCH_LIBRARY_init_##ns(torch::Library&);                                                \
  static const torch::detail::TorchLibraryInit TORCH_LIBRARY_static_init_##ns(                         \
      torch::Library::DEF, &TORCH_LIBRARY_init_##ns, #ns, std::nullopt, __FILE__, __LINE__);          \
  void TORCH_LIBRARY_init_##ns(torch::Library& m)
