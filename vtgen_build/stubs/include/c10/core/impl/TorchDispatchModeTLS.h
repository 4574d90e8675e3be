// vtgen_build stub header.
#pragma once
namespace c10::impl {
bool dispatch_mode_enabled();
}
