// vtgen_build stub header: at::redispatch:: (generated, DispatchKeySet first).
#pragma once
#include <ATen/core/TensorBody.h>
#include <ATen/core/Reduction.h>
#include <vtgen_decls/RedispatchFunctions.inc>
