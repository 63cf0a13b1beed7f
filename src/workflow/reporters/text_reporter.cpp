// The text reporter: what a person reads on a terminal. Each result's own renderer (the
// measurement's, the inventory's, the prediction's, the trace table's) is called from here
// and nowhere else; the lists that had none (db list, models, sweep status) are drawn here.
#include <fmt/format.h>

#include "core/report/report.h"
#include "core/store/database.h"
#include "core/text/text.h"
#include "workflow/reporters/formats.h"

namespace opcost {

namespace {

std::string database_rows_text(const std::vector<Database::Summary>& rows) {
  std::string out = fmt::format("{:>5}  {:<20} {:<28} {:>12} {:>8} {:>12} {:>8}  {}\n", "id", "created", "op",
                                "time_us", "±%", "energy_mJ", "±%", "args / flags");
  for (const auto& r : rows) {
    const std::string name = r.overload.empty() ? r.op : r.op + "." + r.overload;
    out += fmt::format("{:>5}  {:<20} {:<28} {:>12.4g} {:>8} {:>12} {:>8}  {}{}\n", r.id, r.created_at, name, r.time_us,
                       r.time_rel_ci ? fmt::format("{:.2f}", 100 * *r.time_rel_ci) : "n/a",
                       r.energy_mJ ? fmt::format("{:.4g}", *r.energy_mJ) : "n/a",
                       r.energy_rel_ci ? fmt::format("{:.2f}", 100 * *r.energy_rel_ci) : "", fit_label(r.args, 60),
                       r.flags.empty() ? "" : "  [" + r.flags + "]");
  }
  return out;
}

std::string models_text(const std::vector<ModelSummary>& models) {
  std::string out = fmt::format("{:<12} {:>12}  {:<20} {}\n", "model", "parameters", "default input", "description");
  for (const auto& m : models)
    out += fmt::format("{:<12} {:>12}  {:<20} {}\n", m.name, m.parameters, m.default_input, m.description);
  return out +
         "\nAny TorchScript file (torch.jit.save) works too: opcost inventory model.pt --input f32[1,3,224,224]\n";
}

// The counts first, at the options they are at: items at other options (elsewhere) must never
// read as a contradiction.
std::string sweep_status_text(const SweepStatusView& v) {
  const SweepStatus& s = v.status;
  const SweepCounts& c = s.counts;
  const std::size_t pending = c.pending + s.not_enrolled;
  std::string out;
  if (!s.planned && s.items == 0)
    out += fmt::format(
        "sweep {} ({}): a model list never run at these options, so its items are not known: a run takes each model's "
        "inventory for them (status runs no model)\n",
        s.plan.name, v.file);
  else
    out += fmt::format("sweep {} ({}): {} items{}\n", s.plan.name, v.file, s.items,
                       s.planned ? "" : " (as the database has them: status runs no model of the list)");
  out += fmt::format("  at       {}\n", sweep_scope_options(v.options, s.plan.device_name));
  out += fmt::format("  done     {}\n  failed   {}\n  pending  {}{}\n  running  {}\n", c.done, c.failed, pending,
                     s.not_enrolled ? fmt::format(" ({} never run at these options)", s.not_enrolled) : "", c.running);
  if (s.workers_seen > 1) out += fmt::format("  workers  {} (measured the done items)\n", s.workers_seen);
  if (pending + c.running > 0)
    out += fmt::format("  left     {}\n",
                       s.mean_seconds_per_item > 0
                           ? fmt::format("about {} at {:.2f} s an item so far",
                                         format_duration(s.mean_seconds_per_item * double(pending + c.running)),
                                         s.mean_seconds_per_item)
                           : std::string("no item done yet, so no pace to go by (`opcost sweep --dry-run` bounds it)"));
  if (s.elsewhere)
    out += fmt::format(
        "  elsewhere {} items of this sweep at other settings or on another device, not counted above (the counts are "
        "at the options after `at`: pass those the sweep ran with)\n",
        s.elsewhere);
  for (const auto& r : s.running) out += fmt::format("running: {} (worker {})\n", r.call, r.worker);
  for (const auto& f : s.failed) out += fmt::format("failed: {}\n  {}\n", f.call, f.reason);
  return out;
}

class TextReporter : public Reporter {
 public:
  std::string measured(const Measurement& m, const std::string&, bool one_of_many) override {
    return to_console(m) + (one_of_many ? "\n" : "");
  }
  // A failure is a note on standard error (the face's), not a result.
  std::string measure_failed(const OpCall&, const std::string&) override { return ""; }
  std::string measure_end(bool) override { return ""; }
  std::string inventory(const Inventory& inv) override { return to_table(inv); }
  std::string prediction(const PredictReport& report) override { return to_text(report); }
  std::string trace_table(const TraceTable& table, const std::string& sort_by, std::size_t limit) override {
    return render_table(table, sort_by, limit);
  }
  std::string database_rows(const std::vector<Database::Summary>& rows) override { return database_rows_text(rows); }
  std::string models(const std::vector<ModelSummary>& models) override { return models_text(models); }
  std::string sweep_status(const SweepStatusView& view) override { return sweep_status_text(view); }
};

}  // namespace

std::unique_ptr<Reporter> make_text_reporter() { return std::make_unique<TextReporter>(); }

}  // namespace opcost
