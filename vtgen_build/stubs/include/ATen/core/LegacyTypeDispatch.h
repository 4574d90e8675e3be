// vtgen_build stub header: the dispatch guards kernels hold while redispatching.
#pragma once
namespace at {
struct AutoDispatchBelowAutograd {
  AutoDispatchBelowAutograd();
  ~AutoDispatchBelowAutograd();
  AutoDispatchBelowAutograd(const AutoDispatchBelowAutograd&) = delete;
};
struct AutoDispatchBelowADInplaceOrView {
  AutoDispatchBelowADInplaceOrView();
  ~AutoDispatchBelowADInplaceOrView();
  AutoDispatchBelowADInplaceOrView(const AutoDispatchBelowADInplaceOrView&) = delete;
};
struct AutoDispatchSkipFunctionalize {
  AutoDispatchSkipFunctionalize();
  ~AutoDispatchSkipFunctionalize();
};
} // namespace at
