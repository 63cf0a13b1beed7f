#include "workflow/reporters/reporter.h"

#include <fmt/format.h>

#include <stdexcept>

#include "core/text/text.h"
#include "workflow/reporters/formats.h"

namespace opcost {

ReportFormat parse_report_format(std::string_view name) {
  if (name == "text") return ReportFormat::kText;
  if (name == "json") return ReportFormat::kJson;
  throw std::invalid_argument(
      fmt::format("report format '{}': use text or json", printable(elide(std::string(name), 40), false)));
}

std::unique_ptr<Reporter> make_reporter(ReportFormat format) {
  return format == ReportFormat::kJson ? make_json_reporter() : make_text_reporter();
}

std::string sweep_scope_options(const MeasureOptions& m, const std::string& device_name) {
  const MeasureConfig& c = m.config;
  return fmt::format(
      "--device {}{} --cache {} --seed {} --max-time {} --target-ci {}{} --energy-max-time {} --energy-target-ci {}",
      m.replay.device, m.replay.device == "auto" ? fmt::format(" ({})", device_name) : "", m.replay.cache_mode,
      m.replay.seed, c.time.max_seconds, c.time.target_rel_ci95, c.energy ? "" : " --no-energy", c.energy_max_s,
      c.energy_target_rel_ci95);
}

}  // namespace opcost
