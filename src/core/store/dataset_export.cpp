#include "core/store/dataset_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "core/store/database.h"
#include "core/store/sweep_state.h"

namespace opcost {

void export_dataset(Database& db, ExportFormat format, OutputFile& out, const std::string& sweep) {
  SweepState state(db);  // origins() and sweeps() only read
  if (!sweep.empty()) {
    const auto known = state.sweeps();
    if (std::find(known.begin(), known.end(), sweep) == known.end())
      throw std::invalid_argument(fmt::format("--sweep {}: no such sweep in {} (its sweeps: {})", sweep, db.path(),
                                              known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
  }
  const auto origins = state.origins(sweep);
  // The axes in the order the sweeps name them, each once.
  std::vector<std::string> axes;
  for (const auto& [id, o] : origins)
    for (const auto& [name, value] : o.axes.items())
      if (std::find(axes.begin(), axes.end(), name) == axes.end()) axes.push_back(name);
  Database::ExtraColumns extra;
  if (format == ExportFormat::kCsv) {
    extra.names.push_back("sweep");
    for (const auto& a : axes) extra.names.push_back("axis_" + a);
  } else {
    extra.names = {"sweep", "axes"};
  }
  extra.values = [&](int64_t id) -> std::optional<std::vector<nlohmann::json>> {
    const auto it = origins.find(id);
    if (it == origins.end()) {
      if (!sweep.empty()) return std::nullopt;
      return format == ExportFormat::kCsv ? std::vector<nlohmann::json>(extra.names.size(), nullptr)
                                          : std::vector<nlohmann::json>{nullptr, nullptr};
    }
    if (format == ExportFormat::kJson) return std::vector<nlohmann::json>{it->second.sweep, it->second.axes};
    std::vector<nlohmann::json> v{it->second.sweep};
    for (const auto& a : axes) v.push_back(it->second.axes.contains(a) ? it->second.axes[a] : nlohmann::json(nullptr));
    return v;
  };
  if (format == ExportFormat::kCsv)
    db.export_csv(out, extra);
  else
    db.export_json(out, extra);
}

}  // namespace opcost
