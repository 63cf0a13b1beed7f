#pragma once
// How every face prints a result: one reporter per output format over the typed results,
// chosen by format as google/benchmark picks its console or JSON reporter. The command line
// and the Python package (opcost._core.render_*) print through these; no face renders a
// result itself. Each call returns the text to write (a face decides where: standard output,
// a file written atomically), so a caller can stream it or gather it. Torch-free.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory/inventory.h"
#include "core/measurement.h"
#include "core/spec/op_call.h"
#include "core/store/database.h"
#include "core/trace/table.h"
#include "workflow/measure.h"
#include "workflow/predict.h"
#include "workflow/sweep.h"

namespace opcost {

// text: for people (tables, aligned columns); json: one document, for programs.
enum class ReportFormat { kText, kJson };
// "text" or "json"; anything else is bad input, named with the accepted spellings.
ReportFormat parse_report_format(std::string_view name);

// A built-in model as `opcost models` lists it.
struct ModelSummary {
  std::string name, default_input, description;
  long long parameters = 0;
};

// A sweep's status at the options it was asked at (`opcost sweep status FILE`).
struct SweepStatusView {
  const SweepStatus& status;
  const std::string& file;
  const MeasureOptions& options;  // the item key's settings the counts are at
};

class Reporter {
 public:
  virtual ~Reporter() = default;

  // A measure run, result by result as it lands: text writes each at once (a killed run keeps
  // what it printed), JSON gathers them into the document measure_end() returns. `one_of_many`:
  // the run has several calls (text separates them; JSON makes an array).
  virtual std::string measured(const Measurement& m, const std::string& not_stored, bool one_of_many) = 0;
  virtual std::string measure_failed(const OpCall& call, const std::string& error) = 0;
  virtual std::string measure_end(bool one_of_many) = 0;

  // Whole results.
  virtual std::string inventory(const Inventory& inv) = 0;
  virtual std::string prediction(const PredictReport& report) = 0;
  // `sort_by`: a column of the table; `limit`: rows shown (0: all; text only).
  virtual std::string trace_table(const TraceTable& table, const std::string& sort_by, std::size_t limit) = 0;
  // `opcost db list`: the newest rows.
  virtual std::string database_rows(const std::vector<Database::Summary>& rows) = 0;
  virtual std::string models(const std::vector<ModelSummary>& models) = 0;
  virtual std::string sweep_status(const SweepStatusView& view) = 0;
};

std::unique_ptr<Reporter> make_reporter(ReportFormat format);

// The options that make a sweep item's scope, as the command line spells them: what a status
// counts at, and what to pass to count at the options a sweep ran with.
std::string sweep_scope_options(const MeasureOptions& m, const std::string& device_name);

}  // namespace opcost
