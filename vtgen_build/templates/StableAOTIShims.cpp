// -- AOTInductor C shims of the ${key} kernels ----------------------------------------------------
// An AOTInductor package calls these directly (instead of its proxy executor) once Inductor has
// their declarations: the typed Python API's install_aoti_c_shims() lists them and makes the
// library's symbols global.  The ABI is AOTInductor's (as the classic mode's AOTIShims.h spells
// it); inside, only the stable ABI: the caller's tensors become torch::stable::Tensor of their own
// (a new handle each, the caller keeps its), results are new handles the caller owns, and a C++
// exception becomes AOTI_TORCH_FAILURE, its message on stderr.
${skipped}

#include <torch/csrc/inductor/aoti_torch/c/shim.h>

#include <cstdio>

#if defined(_WIN32)
#define VTGEN_AOTI_SHIM_EXPORT __declspec(dllexport)
#else
#define VTGEN_AOTI_SHIM_EXPORT __attribute__((visibility("default")))
#endif

namespace {

torch::stable::Tensor vtgen_borrow(AtenTensorHandle handle) {
  AtenTensorHandle own = nullptr;
  STD_TORCH_CHECK(aoti_torch_new_tensor_handle(handle, &own) == AOTI_TORCH_SUCCESS,
                  "aoti_torch_new_tensor_handle failed");
  return torch::stable::Tensor(own);
}

std::optional<torch::stable::Tensor> vtgen_borrow_optional(const AtenTensorHandle* handle) {
  return handle ? std::make_optional(vtgen_borrow(*handle)) : std::nullopt;
}

std::vector<torch::stable::Tensor> vtgen_borrow_list(const AtenTensorHandle* handles, int64_t length) {
  std::vector<torch::stable::Tensor> tensors;
  tensors.reserve(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) {
    tensors.push_back(vtgen_borrow(handles[i]));
  }
  return tensors;
}

void vtgen_give(const torch::stable::Tensor& tensor, AtenTensorHandle* ret) {
  STD_TORCH_CHECK(aoti_torch_new_tensor_handle(tensor.get(), ret) == AOTI_TORCH_SUCCESS,
                  "aoti_torch_new_tensor_handle failed");
}

AOTITorchError vtgen_shim_failed(const char* op, const char* what) {
  std::fprintf(stderr, "%s (its AOTInductor C shim): %s\n", op, what);
  return AOTI_TORCH_FAILURE;
}

} // namespace

extern "C" {

${shims}

} // extern "C"
