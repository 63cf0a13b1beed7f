#pragma once
// What the replay tests share: the device they run on and a call read from one line.
#include <c10/core/Device.h>

#include <cstdlib>
#include <string>

#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"

namespace opcost::test_support {

// The GPU test run sets OPCOST_TEST_DEVICE=cuda; CI runs on CPU tensors.
inline c10::Device test_device() {
  const char* d = std::getenv("OPCOST_TEST_DEVICE");
  return c10::Device(d && *d ? d : "cpu");
}

// "aten::add.Tensor self=f32[2] other=f32[2]" as a call, as a spec file's line reads.
inline OpCall call_of(const std::string& line) {
  auto tokens = split_call_line(line);
  const std::string name = tokens.front();
  tokens.erase(tokens.begin());
  return parse_call(name, tokens);
}

}  // namespace opcost::test_support
