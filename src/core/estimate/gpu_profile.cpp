#include "core/estimate/gpu_profile.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <utility>

namespace opcost {

std::optional<double> GpuProfile::tflops_for(const std::string& dtype) const {
  const auto it = achieved_tflops.find(dtype);
  if (it == achieved_tflops.end()) return std::nullopt;
  return it->second;
}

nlohmann::json to_json(const GpuProfile& p) {
  nlohmann::json j{{"achieved_tflops", p.achieved_tflops}, {"achieved_GBps", p.achieved_GBps}};
  const auto optional = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  j["idle_power_W"] = optional(p.idle_power_W);
  j["compute_power_W"] = optional(p.compute_power_W);
  j["memory_power_W"] = optional(p.memory_power_W);
  return j;
}

namespace {
double positive(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number() || !std::isfinite(j.get<double>()) || j.get<double>() <= 0)
    throw std::invalid_argument(fmt::format("{}: expected a positive number", what));
  return j.get<double>();
}
}  // namespace

GpuProfile gpu_profile_from_json(const std::string& name, const nlohmann::json& j) {
  const std::string where = fmt::format("gpus.\"{}\"", name.substr(0, 200));
  if (!j.is_object()) throw std::invalid_argument(where + ": expected an object");
  GpuProfile p;
  p.name = name;
  if (!j.contains("achieved_tflops") || !j["achieved_tflops"].is_object())
    throw std::invalid_argument(where + ".achieved_tflops: expected an object of dtype → TFLOP/s");
  for (const auto& [dtype, rate] : j["achieved_tflops"].items())
    p.achieved_tflops[dtype] = positive(rate, where + ".achieved_tflops." + dtype.substr(0, 40));
  p.achieved_GBps = positive(j.value("achieved_GBps", nlohmann::json()), where + ".achieved_GBps");
  for (auto [key, field] : {std::pair{"idle_power_W", &GpuProfile::idle_power_W},
                            std::pair{"compute_power_W", &GpuProfile::compute_power_W},
                            std::pair{"memory_power_W", &GpuProfile::memory_power_W}})
    if (j.contains(key) && !j[key].is_null()) p.*field = positive(j[key], where + "." + key);
  return p;
}

}  // namespace opcost
