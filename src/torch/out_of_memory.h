#pragma once
// Out-of-memory errors from LibTorch (the GPU's, the CPU allocator's, a failed new) said in one
// line: what was asked, what is free, the fix. host_allocation_failure is in torch/replay.h.
#include <c10/core/Device.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace opcost {

// Allocators that fail without LibTorch's OutOfMemoryError type still say so in their text.
bool is_out_of_memory_text(std::string_view text);

// "<label>: out of memory on cuda:0 (inputs 1.2 GiB; <torch's first line>); use smaller shapes, ..."
std::string out_of_memory_message(const std::string& label, c10::Device device, std::size_t input_bytes,
                                  std::string_view torch_text);

// The first line of a text (LibTorch's messages go on with a backtrace).
std::string first_line(std::string_view text);

}  // namespace opcost
