// vtgen_build stub header: shape helpers from ExpandUtils / WrapDimUtils / InferSize.
#pragma once
#include <bitset>
#include <vector>
#include <ATen/core/TensorBody.h>
namespace at {
Tensor sum_to(Tensor tensor, c10::SymIntArrayRef shape, bool always_return_non_view = false);
Tensor sum_to(Tensor tensor, IntArrayRef shape, bool always_return_non_view = false);
bool is_expandable_to(IntArrayRef shape, IntArrayRef desired);
bool is_expandable_to(c10::SymIntArrayRef shape, c10::SymIntArrayRef desired);
bool is_expandable_to(c10::SymIntArrayRef shape, const at::Tensor& desired);
std::vector<int64_t> infer_size(IntArrayRef a, IntArrayRef b);
std::vector<c10::SymInt> infer_size_symint(c10::SymIntArrayRef a, c10::SymIntArrayRef b);
DimVector infer_size_dimvector(IntArrayRef a, IntArrayRef b);
SymDimVector infer_size_symdimvector(c10::SymIntArrayRef a, c10::SymIntArrayRef b);
std::vector<int64_t> infer_size(IntArrayRef shape, int64_t numel);
int64_t maybe_wrap_dim(int64_t dim, int64_t dim_post_expr, bool wrap_scalar = true);
int64_t maybe_wrap_dim(int64_t dim, TensorImpl* tensor);
int64_t maybe_wrap_dim(int64_t dim, const std::vector<std::vector<int64_t>>& tensor_sizes);
std::bitset<64> dim_list_to_bitset(OptionalIntArrayRef opt_dims, size_t ndims);
void wrap_all_dims(std::vector<int64_t>& dims_to_wrap, int64_t tensor_total_dims);
} // namespace at
namespace c10 {
int64_t maybe_wrap_dim(int64_t dim, int64_t dim_post_expr, bool wrap_scalar = true);
c10::SymInt maybe_wrap_dim(c10::SymInt dim, c10::SymInt dim_post_expr, bool wrap_scalar = true);
}
