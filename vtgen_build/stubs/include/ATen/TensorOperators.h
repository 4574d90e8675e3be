// vtgen_build stub header (the operators live with at::Tensor).
#pragma once
#include <ATen/core/TensorBody.h>
