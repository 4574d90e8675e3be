// vtgen_build stub header: at::empty (declared with the other aten functions).
#pragma once
#include <ATen/Functions.h>
