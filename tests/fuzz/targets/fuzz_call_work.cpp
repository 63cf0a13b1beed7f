// The work a call's arguments imply (core/estimate/call_work.h) and the cost model's features
// (cost_features.h), over hostile arguments: a call line is parsed as an inventory writes one,
// and its arguments are counted as every operator call_work knows would count them. Each count
// is no figure, or finite-or-infinite and never negative or NaN; features are never NaN. Shapes
// of 2^62 and lists of thousands must neither overflow nor read past a vector (the sanitizers of
// bench/run_fuzz see the latter).
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <string_view>

#include "core/estimate/call_work.h"
#include "core/estimate/cost_features.h"
#include "core/estimate/gpu_profile.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "fuzz_support.h"

namespace {

const opcost::GpuProfile& profile() {
  static const opcost::GpuProfile gpu = [] {
    opcost::GpuProfile p;
    p.name = "fuzz GPU";
    p.achieved_tflops = {{"bf16", 700.0}, {"f32", 50.0}};
    p.achieved_GBps = 3000;
    p.idle_power_W = 100;
    p.compute_power_W = 600;
    p.memory_power_W = 500;
    return p;
  }();
  return gpu;
}

void count_as_every_operator(const opcost::OpCall& parsed) {
  for (std::string_view op : opcost::counted_operators()) {
    opcost::OpCall call = parsed;
    call.op = std::string(op);
    const auto work = opcost::call_work(call);
    if (!work) continue;
    opcost::fuzz::note_accepted();
    if (std::isnan(work->flops) || std::isnan(work->bytes) || work->flops < 0 || work->bytes < 0)
      opcost::fuzz::fail(
          fmt::format("{} {}: {} FLOPs and {} bytes", op, opcost::format_args(call.args), work->flops, work->bytes));
    if (const auto f = opcost::cost_features(call, "warm", profile()))
      for (double v : f->values)
        if (std::isnan(v)) opcost::fuzz::fail(fmt::format("{} {}: a NaN feature", op, opcost::format_args(call.args)));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  opcost::OpCall call;
  try {
    call = opcost::parse_call_line(text, "fuzz");
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::check_refusal(e.what(), "fuzz");
    return 0;
  }
  count_as_every_operator(call);
  return 0;
}
