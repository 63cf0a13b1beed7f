// The JSON reporter: one document per result, indented by two, for programs. A measure run's
// results are gathered and written as one document at its end (an array when it has several).
#include <nlohmann/json.hpp>

#include "core/report/report.h"
#include "core/text/text.h"
#include "workflow/reporters/formats.h"

namespace opcost {

namespace {

std::string document(const nlohmann::json& doc) { return doc.dump(2) + "\n"; }

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

class JsonReporter : public Reporter {
 public:
  std::string measured(const Measurement& m, const std::string& not_stored, bool) override {
    results_.push_back(to_json(m));
    if (!not_stored.empty()) results_.back()["not_stored"] = not_stored;
    return "";
  }
  std::string measure_failed(const OpCall& call, const std::string& error) override {
    results_.push_back({{"op", call.display_name()}, {"args", format_args(call.args)}, {"error", user_message(error)}});
    return "";
  }
  std::string measure_end(bool one_of_many) override {
    if (one_of_many) return document(results_);
    return results_.empty() ? "" : document(results_[0]);
  }
  std::string inventory(const Inventory& inv) override { return document(to_json(inv)); }
  std::string prediction(const PredictReport& report) override { return document(to_json(report)); }
  std::string trace_table(const TraceTable& table, const std::string&, std::size_t) override {
    return document(to_json(table));
  }
  std::string database_rows(const std::vector<Database::Summary>& rows) override {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows)
      out.push_back({{"id", r.id},
                     {"created_at", r.created_at},
                     {"op", r.op},
                     {"overload", r.overload},
                     {"args", r.args},
                     {"device_name", r.device_name},
                     {"cache_mode", r.cache_mode},
                     {"flags", r.flags},
                     {"time_us", r.time_us},
                     {"time_rel_ci95", optional_number(r.time_rel_ci)},
                     {"energy_mJ", optional_number(r.energy_mJ)},
                     {"energy_rel_ci95", optional_number(r.energy_rel_ci)}});
    return document(out);
  }
  std::string models(const std::vector<ModelSummary>& models) override {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : models)
      out.push_back({{"name", m.name},
                     {"parameters", m.parameters},
                     {"default_input", m.default_input},
                     {"description", m.description}});
    return document(out);
  }
  std::string sweep_status(const SweepStatusView& v) override {
    const SweepStatus& s = v.status;
    const SweepCounts& c = s.counts;
    nlohmann::json failed = nlohmann::json::array(), running = nlohmann::json::array();
    for (const auto& f : s.failed) failed.push_back({{"call", f.call}, {"reason", f.reason}});
    for (const auto& r : s.running) running.push_back({{"call", r.call}, {"worker", r.worker}});
    return document({{"name", s.plan.name},
                     {"file", v.file},
                     {"at", sweep_scope_options(v.options, s.plan.device_name)},
                     {"items", s.items},
                     {"done", c.done},
                     {"failed", c.failed},
                     {"pending", c.pending + s.not_enrolled},
                     {"running", c.running},
                     {"elsewhere", s.elsewhere},
                     {"seconds_per_item", s.mean_seconds_per_item},
                     {"failures", failed},
                     {"workers", running}});
  }

 private:
  nlohmann::json results_ = nlohmann::json::array();
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter() { return std::make_unique<JsonReporter>(); }

}  // namespace opcost
