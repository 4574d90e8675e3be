// vtgen_build stub header: declarations only, for -fsyntax-only checks.
#pragma once
#define C10_API
#define TORCH_API
#define TORCH_PYTHON_API
#define C10_EXPORT
#define C10_IMPORT
#define C10_NOINLINE __attribute__((noinline))
#define C10_ALWAYS_INLINE inline
#define C10_UNUSED [[maybe_unused]]
#define C10_NODISCARD [[nodiscard]]
#define C10_LIKELY(x) (x)
#define C10_UNLIKELY(x) (x)
#define C10_HOST_DEVICE
#define C10_DEVICE
#define C10_HOST
#define C10_DEPRECATED
#define C10_DEPRECATED_MESSAGE(m)
#define C10_DIAGNOSTIC_PUSH_AND_IGNORED_IF_DEFINED(w)
#define C10_DIAGNOSTIC_POP()
#define C10_STRINGIZE_IMPL(x) #x
#define C10_STRINGIZE(x) C10_STRINGIZE_IMPL(x)
#define C10_CONCATENATE_IMPL(a, b) a##b
#define C10_CONCATENATE(a, b) C10_CONCATENATE_IMPL(a, b)
#define C10_UID __COUNTER__
#define C10_ANONYMOUS_VARIABLE(name) C10_CONCATENATE(name, __COUNTER__)
