// vtgen_build stub header.
#pragma once
#include <ATen/ExpandUtils.h>
