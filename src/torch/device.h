#pragma once
// Where a replay runs: the device a user asked for (core/spec/device_spec, parsed once) as
// LibTorch's device, "auto" resolved to the first CUDA GPU when there is one.
#include <c10/core/Device.h>

#include <string>
#include <string_view>

#include "core/spec/device_spec.h"

namespace opcost {

// Throws ReplayError when the spec asks for CUDA on a machine without a GPU. "cuda" is cuda:0.
c10::Device resolve_device(const DeviceSpec& spec);

// An option's text ("auto", "cpu", "cuda", "cuda:N"), parsed and resolved; ReplayError names
// the text and the choices.
c10::Device resolve_device_option(std::string_view text);

// A device written in an argument (aten::to's device=cuda:0, a tensor spec's :cpu): any device
// LibTorch names, CUDA checked as for an option.
c10::Device resolve_argument_device(const std::string& text);

}  // namespace opcost
