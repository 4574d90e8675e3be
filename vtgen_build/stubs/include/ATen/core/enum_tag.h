// vtgen_build stub header: at::Tag, the tags an operator schema may carry (PyTorch 2.13's tags.yaml).
#pragma once
namespace at {
enum class Tag {
  core,
  cudagraph_unsafe,
  data_dependent_output,
  dynamic_output_shape,
  flexible_layout,
  generated,
  inplace,
  inplace_view,
  maybe_aliasing_or_mutating,
  needs_contiguous_strides,
  needs_exact_strides,
  needs_fixed_stride_order,
  nondeterministic_bitwise,
  nondeterministic_seeded,
  out,
  out_variant,
  pointwise,
  pt2_compliant_tag,
  reduction,
  view_copy
};
} // namespace at
