// vtgen_build stub header.
#pragma once
#include <ATen/core/TensorBody.h>
#include <ATen/core/TensorBase.h>
