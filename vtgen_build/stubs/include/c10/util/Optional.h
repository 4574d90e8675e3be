// vtgen_build stub header.
#pragma once
#include <optional>
namespace c10 {
using std::optional;
using std::nullopt;
using std::make_optional;
using std::nullopt_t;
} // namespace c10
