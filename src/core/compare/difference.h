#pragma once
// The difference a variant makes to a baseline (compare): its mean with a 95% interval, and
// whether the interval leaves 0 out. Torch-free.
//
// Whole steps are measured in interleaved rounds (each round runs every variant), so the
// rounds pair up: slow drift of the host's speed or the GPU's temperature hits both sides of a
// pair alike, and the interval comes from the spread of the per-round differences (paired).
// Per-layer figures come from separate traced steps of each variant: their interval is
// Welch's, from each side's own spread (unpaired).
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>

#include "core/stats/summary.h"

namespace opcost {

struct Difference {
  std::size_t samples = 0;   // rounds (paired) or the smaller side's samples (Welch)
  double baseline = 0;       // the baseline's mean
  double delta = 0;          // the variant's mean less the baseline's, in their unit
  double delta_ci95 = 0;     // half-width; infinite with fewer than 2 samples a side
  double relative = 0;       // delta / baseline (0.1: 10% more)
  double relative_ci95 = 0;  // half-width of the relative difference
  // The relative interval leaves 0 out: the difference is real at 95%. With fewer than 2
  // samples a side there is no interval, and no difference is called significant.
  bool significant() const;
  // "-12.3% ±1.1%", or "+0.4% ±0.9% (no significant difference)".
  std::string text() const;
};

// Paired rounds: variant[i] and baseline[i] were measured in the same round. The relative
// interval is that of the per-round ratios (each round's variant over its baseline), so a
// round on a slow host counts as a ratio, not as an absolute shift. Throws
// std::invalid_argument when the sides differ in length or a baseline value is not above 0.
Difference paired_difference(std::span<const double> variant, std::span<const double> baseline);

// Unpaired samples (Welch's t with the Welch–Satterthwaite degrees of freedom); the relative
// interval divides by the baseline's mean (its own spread adds through the delta's).
Difference welch_difference(const Summary& variant, const Summary& baseline);

nlohmann::json to_json(const Difference& d);

}  // namespace opcost
