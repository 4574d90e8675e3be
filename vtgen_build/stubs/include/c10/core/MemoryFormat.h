// vtgen_build stub header.
#pragma once
#include <cstdint>
#include <ostream>
#include <c10/util/ArrayRef.h>
namespace c10 {
enum class MemoryFormat : int8_t { Contiguous, Preserve, ChannelsLast, ChannelsLast3d, NumOptions };
MemoryFormat get_contiguous_memory_format();
std::ostream& operator<<(std::ostream& stream, MemoryFormat memory_format);
bool is_channels_last_strides_2d(IntArrayRef sizes, IntArrayRef strides);
bool is_channels_last_strides_3d(IntArrayRef sizes, IntArrayRef strides);
} // namespace c10
namespace at {
using c10::MemoryFormat;
}
