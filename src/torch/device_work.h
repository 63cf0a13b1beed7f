#pragma once
// Telling a call that does no work on its device from one that does, before any loop runs
// (core/measure/loop_plan.h says what is measured then). Two checks: a call whose outputs are
// all views of its inputs (on any device), and on CUDA a call whose GPU time behind a sleep is
// that of an empty event pair (an empty allocation, a metadata-only op). Included by the torch
// layer's sources only.
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <optional>
#include <vector>

#include "torch/replay.h"

namespace opcost {

// Whether a call with `schema` that took `inputs` and returned `outputs` did no device work:
// at least one tensor came back, every tensor returned shares storage with a tensor argument,
// and the schema writes to no argument (an in-place op returns its self, but computes it).
bool outputs_are_views_of_inputs(const c10::FunctionSchema& schema, const std::vector<c10::IValue>& inputs,
                                 const std::vector<c10::IValue>& outputs);

// A kernel costs at least about a microsecond of GPU time, even an empty one: below this per
// call, the calls launched none (the event timer resolves ~0.5 µs; 100 calls are compared).
inline constexpr double kNoKernelGpuUsPerCall = 0.2;

// CUDA: the GPU time per call, in µs, of a batch of calls issued behind a sleep prefill, less
// that of an empty event pair timed the same way. A single call that shows a kernel clearly
// (≥ 10 µs), or a batch that does (≥ 1 µs per call), ends the check at once: a few ms. nullopt without CUDA, or when
// the host could not issue the batch within the longest prefill (then the GPU may have idled between the events).
// `one_call_us`: one call's span, timed the same way already (Runner::waits_for_device), which
// the check then starts from.
std::optional<double> gpu_us_per_call_behind_sleep(PreparedCall& call, int device_index,
                                                   std::optional<double> one_call_us = std::nullopt);

}  // namespace opcost
