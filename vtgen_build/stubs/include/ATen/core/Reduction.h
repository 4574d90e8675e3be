// vtgen_build stub header.
#pragma once
namespace at::Reduction {
enum Reduction { None, Mean, Sum, END };
}
