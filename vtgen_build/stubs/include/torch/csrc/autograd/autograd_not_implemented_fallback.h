// vtgen_build stub header.
#pragma once
#include <torch/library.h>
namespace torch::autograd {
torch::CppFunction autogradNotImplementedFallback();
torch::CppFunction autogradNotImplementedInplaceOrViewFallback();
torch::CppFunction basicAutogradNotImplementedFallback();
} // namespace torch::autograd
