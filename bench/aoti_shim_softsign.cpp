// A hand-written AOTInductor C shim for vtsample::softsign (bench/bench_aoti_call.py --shim-library):
// the form AOTInductor calls for an op listed in torch._inductor.config.aot_inductor.custom_ops_to_c_shims
// (named aoti_torch_<device>_<op>, tensors as AtenTensorHandle, the result through ret0).  Not generated
// (yet): the measurement of what generated shims would save.  Build:
//   g++ -std=c++20 -O2 -shared -fPIC -I$TORCH/include -I$TORCH/include/torch/csrc/api/include \
//       bench/aoti_shim_softsign.cpp -L$TORCH/lib -ltorch_cpu -lc10 -o libaoti_shim_softsign.so
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>
#include <ATen/core/dispatch/Dispatcher.h>

extern "C" AOTI_TORCH_EXPORT AOTITorchError aoti_torch_cpu_softsign(AtenTensorHandle self, AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    static auto op = c10::Dispatcher::singleton().findSchemaOrThrow("vtsample::softsign", "").typed<at::Tensor(const at::Tensor&)>();
    at::Tensor result = op.call(*torch::aot_inductor::tensor_handle_to_tensor_pointer(self));
    *ret0 = torch::aot_inductor::new_tensor_handle(std::move(result));
  });
}
