// vtgen_build stub header.
#pragma once
#include <cstddef>
#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>
namespace c10 {
class StorageImpl;
class Storage {
 public:
  Storage();
  bool is_alias_of(const Storage& other) const;
  size_t use_count() const;
  bool unique() const;
  size_t nbytes() const;
  c10::SymInt sym_nbytes() const;
  const void* data() const;
  void* mutable_data() const;
  Device device() const;
  StorageImpl* unsafeGetStorageImpl() const noexcept;
  explicit operator bool() const;
};
} // namespace c10
namespace at {
using c10::Storage;
}
