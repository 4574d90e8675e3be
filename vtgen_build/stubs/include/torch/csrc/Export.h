// vtgen_build stub header.
#pragma once
#include <c10/macros/Macros.h>
