#pragma once
// Per layer across variants (compare): each variant's traced steps cut into single steps, each
// layer's inclusive time (and energy, where the trace has it) per step, matched across the
// variants by module path. A layer one variant lacks (fused away by torch.compile, or never
// called) is marked so, never shown as 0. Torch-free.
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/compare/difference.h"
#include "core/stats/summary.h"
#include "core/trace/activities.h"

namespace opcost {

// A layer's figures in one variant, over its traced steps.
struct LayerFigures {
  Summary time_us;                   // inclusive: the layer's own calls and its child layers'
  std::optional<Summary> energy_mJ;  // with attributed energy (trace --energy) only
  std::size_t calls_per_step = 0;    // its own operator calls in one step
};

struct LayerComparisonRow {
  std::string layer;  // module path
  // By variant (CompareLayers::variants' order): none where the variant has no such layer.
  std::vector<std::optional<LayerFigures>> figures;
  // Against the baseline's, by variant (none for the baseline itself, or where either side
  // lacks the layer).
  std::vector<std::optional<Difference>> time_vs_baseline, energy_vs_baseline;
  // "" where every variant has it; else which variants lack it ("fused away or not called in
  // compile") or have it alone ("only in channels_last").
  std::string presence;
};

struct LayerComparison {
  // "gpu": the device time of the layer's kernels; "cpu": host time (a CPU run).
  std::string time_kind;
  std::vector<std::string> variants;
  std::size_t baseline = 0;
  // The baseline's layers, costliest first, then the layers only other variants have.
  std::vector<LayerComparisonRow> rows;
};

// `runs[i]` is variant `names[i]`'s trace (every step a sample). Throws std::invalid_argument
// when the names and runs differ in number or `baseline` is out of range.
LayerComparison compare_layers(const std::vector<std::string>& names, const std::vector<TraceRun>& runs,
                               std::size_t baseline, bool gpu_time);

nlohmann::json to_json(const LayerComparison& c);

}  // namespace opcost
