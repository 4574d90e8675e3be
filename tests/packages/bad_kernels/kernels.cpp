// CPU kernels of the vtbad ops, each misbehaving the way a user's kernel can: they never
// return normally.  Built once per test session (tests/conftest.py's bad_kernels).
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <unistd.h>

namespace {

at::Tensor crash(const at::Tensor& self) {
  volatile int* nowhere = nullptr;
  *nowhere = static_cast<int>(self.numel());  // SIGSEGV
  return self;
}

at::Tensor spin(const at::Tensor& self) {
  volatile bool forever = true;  // in C++, holding the GIL the op was called with
  while (forever) {
  }
  return self;
}

at::Tensor quit(const at::Tensor& self) {
  std::exit(0);
}

at::Tensor quit_now(const at::Tensor& self) {
  _exit(0);
}

void* allocate(std::size_t bytes) noexcept {  // a bad_alloc here ends the process (std::terminate)
  return ::operator new(bytes);
}

at::Tensor hog(const at::Tensor& self) {
  // more than any machine has: std::bad_alloc, thrown where nothing may throw, so the process dies of it
  void* p = allocate(static_cast<std::size_t>(1) << 62 | static_cast<std::size_t>(self.numel()));
  ::operator delete(p);
  return self;
}

at::Tensor greedy(const at::Tensor& self) {
  // the same allocation where it may throw: the op raises std::bad_alloc (a MemoryError in Python)
  void* p = ::operator new(static_cast<std::size_t>(1) << 62 | static_cast<std::size_t>(self.numel()));
  static_cast<volatile char*>(p)[0] = 1;
  ::operator delete(p);
  return self;
}

}  // namespace

TORCH_LIBRARY(vtbad, m) {
  m.def("crash(Tensor self) -> Tensor");
  m.def("spin(Tensor self) -> Tensor");
  m.def("quit(Tensor self) -> Tensor");
  m.def("quit_now(Tensor self) -> Tensor");
  m.def("hog(Tensor self) -> Tensor");
  m.def("greedy(Tensor self) -> Tensor");
}

TORCH_LIBRARY_IMPL(vtbad, CPU, m) {
  m.impl("crash", crash);
  m.impl("spin", spin);
  m.impl("quit", quit);
  m.impl("quit_now", quit_now);
  m.impl("hog", hog);
  m.impl("greedy", greedy);
}
