// vtgen_build stub header: the check/assert macros.  The condition is type-checked
// as a bool and the message pieces must be printable.
#pragma once
#include <c10/macros/Macros.h>
#include <ostream>
#include <string>

namespace c10::detail {
// Accepts the message pieces of TORCH_CHECK & co. (anything streamable).
template <typename... Args>
[[noreturn]] void stub_check_failed(const char* kind, const Args&... args);
template <typename... Args>
std::string stub_str(const Args&... args);
inline bool stub_cond(bool c) { return c; }
} // namespace c10::detail

namespace c10 {
template <typename... Args>
std::string str(const Args&... args);
class Error {
 public:
  const char* what() const noexcept;
};
class NotImplementedError : public Error {};
class ValueError : public Error {};
class TypeError : public Error {};
class IndexError : public Error {};
} // namespace c10

#define VTGEN_STUB_CHECK_(kind, cond, ...)                        \
  do {                                                             \
    if (!::c10::detail::stub_cond(cond)) {                         \
      ::c10::detail::stub_check_failed(kind, ##__VA_ARGS__);       \
    }                                                              \
  } while (false)

#define TORCH_CHECK(cond, ...) VTGEN_STUB_CHECK_("check", cond, ##__VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) VTGEN_STUB_CHECK_("value", cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) VTGEN_STUB_CHECK_("type", cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) VTGEN_STUB_CHECK_("index", cond, ##__VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) VTGEN_STUB_CHECK_("not_implemented", cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) VTGEN_STUB_CHECK_("internal", cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(cond, ...) VTGEN_STUB_CHECK_("internal", cond, ##__VA_ARGS__)
#define TORCH_WARN(...) ((void)::c10::detail::stub_str(__VA_ARGS__))
#define TORCH_WARN_ONCE(...) ((void)::c10::detail::stub_str(__VA_ARGS__))
#define AT_ERROR(...) ::c10::detail::stub_check_failed("error", ##__VA_ARGS__)
#define TORCH_CHECK_ARG(cond, argN, ...) VTGEN_STUB_CHECK_("arg", cond, argN, ##__VA_ARGS__)
