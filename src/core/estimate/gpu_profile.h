#pragma once
// What a cost model knows of a GPU: the fastest rates opcost achieved on it, read from the
// database's own rows (the calibration grids, bench/grids/fit/calibrate-*.yaml, guarantee large
// enough calls), not a data sheet's peaks. A call's roofline time on that GPU comes from these,
// so a fit made on one GPU can estimate another whose calibration rows alone are stored.
// Torch-free.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace opcost {

struct GpuProfile {
  std::string name;                               // the rows' device name ("NVIDIA H100 80GB HBM3")
  std::map<std::string, double> achieved_tflops;  // dtype code → the best FLOP rate seen, 10^12/s
  double achieved_GBps = 0;                       // the best rate of bytes moved seen, 10^9/s
  std::optional<double> idle_power_W;             // the rows' median idle draw, where measured
  // The board's draw where a call runs at its roofline: the median power of the calls near the
  // achieved FLOP rate (compute-bound) and of the large calls near the achieved byte rate
  // (memory-bound). A call's energy is fitted relative to the one its roofline side draws: an
  // H200's memory-bound calls draw ~650 W where an H100's draw ~510 W (bench/results/2026-11-26-fit).
  std::optional<double> compute_power_W, memory_power_W;

  // The rate for `dtype`, or nullopt where no row of that dtype showed one.
  std::optional<double> tflops_for(const std::string& dtype) const;
};

nlohmann::json to_json(const GpuProfile& p);
// Throws std::invalid_argument naming the field that is missing, of a wrong type, or not a
// positive finite number.
GpuProfile gpu_profile_from_json(const std::string& name, const nlohmann::json& j);

}  // namespace opcost
