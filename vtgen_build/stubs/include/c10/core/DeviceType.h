// vtgen_build stub header.
#pragma once
#include <cstdint>
#include <ostream>
namespace c10 {
enum class DeviceType : int8_t { CPU, CUDA, MKLDNN, OPENGL, OPENCL, IDEEP, HIP, FPGA, MAIA, XLA, Vulkan, Metal, XPU, MPS, Meta, HPU, VE, Lazy, IPU, MTIA, PrivateUse1, COMPILE_TIME_MAX_DEVICE_TYPES };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMeta = DeviceType::Meta;
constexpr DeviceType kMPS = DeviceType::MPS;
constexpr DeviceType kXPU = DeviceType::XPU;
constexpr DeviceType kHIP = DeviceType::HIP;
constexpr DeviceType kXLA = DeviceType::XLA;
std::ostream& operator<<(std::ostream& stream, DeviceType type);
} // namespace c10
namespace at {
using c10::DeviceType;
using c10::kCPU; using c10::kCUDA; using c10::kMeta;
}
