// vtgen_build stub header.
#pragma once
#include <optional>
namespace c10 {
class SymBool {
 public:
  /* implicit */ SymBool(bool b);
  SymBool();
  SymBool operator&(const SymBool&) const;
  SymBool operator|(const SymBool&) const;
  SymBool operator~() const;
  SymBool sym_and(const SymBool&) const;
  SymBool sym_or(const SymBool&) const;
  SymBool sym_not() const;
  bool guard_bool(const char* file, int64_t line) const;
  bool expect_true(const char* file, int64_t line) const;
  bool guard_size_oblivious(const char* file, int64_t line) const;
  std::optional<bool> maybe_as_bool() const;
  bool expect_bool() const;
  bool is_heap_allocated() const;
  bool as_bool_unchecked() const;
};
} // namespace c10
#define TORCH_SYM_CHECK(cond, ...) TORCH_CHECK((cond).expect_true(__FILE__, __LINE__), __VA_ARGS__)
