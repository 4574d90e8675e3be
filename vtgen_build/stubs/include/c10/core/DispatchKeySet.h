// vtgen_build stub header: DispatchKey / DispatchKeySet.
#pragma once
#include <cstdint>
#include <initializer_list>
namespace c10 {
enum class DispatchKey : uint16_t {
  Undefined, CPU, CUDA, Meta, Dense, Sparse, SparseCsr, Quantized, NestedTensor, BackendSelect,
  Python, Functionalize, Conjugate, Negative, ZeroTensor, ADInplaceOrView, AutogradOther,
  AutogradCPU, AutogradCUDA, AutogradXLA, AutogradLazy, AutogradMeta, AutogradNestedTensor,
  AutogradFunctionality, Autograd, CompositeImplicitAutograd, CompositeExplicitAutograd,
  CompositeImplicitAutogradNestedTensor, CompositeExplicitAutogradNonFunctional, Tracer,
  PythonTLSSnapshot, PythonDispatcher, PreDispatch, FuncTorchBatched, FuncTorchDynamicLayerFrontMode,
  AutocastCPU, AutocastCUDA,
  // every other backend key a native_functions.yaml `dispatch:` may name (Register<Key>.cpp)
  HPU, IPU, Lazy, MAIA, MPS, MTIA, MkldnnCPU, NestedTensorCPU, NestedTensorCUDA, NestedTensorHPU,
  NestedTensorMeta, NestedTensorPrivateUse1, NestedTensorXPU, PrivateUse1, PrivateUse2, PrivateUse3,
  QuantizedCPU, QuantizedCUDA, QuantizedMeta, SparseCPU, SparseCUDA, SparseCsrCPU, SparseCsrCUDA,
  SparseCsrMPS, SparseCsrMeta, SparseCsrXPU, SparseMPS, SparseMeta, SparsePrivateUse1, SparseXPU, VE,
  XLA, XPU,
  EndOfFunctionalityKeys
};
class DispatchKeySet {
 public:
  enum Full { FULL };
  enum FullAfter { FULL_AFTER };
  enum Raw { RAW };
  DispatchKeySet() = default;
  DispatchKeySet(Full);
  DispatchKeySet(FullAfter, DispatchKey t);
  DispatchKeySet(Raw, uint64_t x);
  explicit DispatchKeySet(DispatchKey k);
  DispatchKeySet(std::initializer_list<DispatchKey> ks);
  bool has(DispatchKey t) const;
  bool has_all(DispatchKeySet ks) const;
  bool has_any(DispatchKeySet ks) const;
  bool isSupersetOf(DispatchKeySet ks) const;
  DispatchKeySet operator|(DispatchKeySet other) const;
  DispatchKeySet operator&(DispatchKeySet other) const;
  DispatchKeySet operator-(DispatchKeySet other) const;
  DispatchKeySet operator^(DispatchKeySet other) const;
  bool operator==(DispatchKeySet other) const;
  bool operator!=(DispatchKeySet other) const;
  DispatchKeySet add(DispatchKey t) const;
  DispatchKeySet remove(DispatchKey t) const;
  bool empty() const;
  uint64_t raw_repr() const;
  DispatchKey highestPriorityTypeId() const;
};
extern const DispatchKeySet after_autograd_keyset;
extern const DispatchKeySet after_ADInplaceOrView_keyset;
extern const DispatchKeySet autograd_dispatch_keyset;
extern const DispatchKeySet autograd_dispatch_keyset_with_ADInplaceOrView;
extern const DispatchKeySet python_ks;
extern const DispatchKeySet default_included_set;
extern const DispatchKeySet default_excluded_set;
DispatchKeySet getAutogradRelatedKeySetFromBackend(DispatchKey t);
} // namespace c10
