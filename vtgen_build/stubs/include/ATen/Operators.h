// vtgen_build stub header: at::_ops is not modelled; this stands for the real include.
#pragma once
#include <ATen/core/TensorBody.h>
