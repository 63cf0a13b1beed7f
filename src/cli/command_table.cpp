// The command table: every subcommand of opcost, in the order --help lists them. Adding a
// command is a file under cli/commands/ and a line here; the Python package's command line
// is built from this table too (opcost._core.command_table).
#include "cli/command.h"
#include "cli/commands/factories.h"

namespace opcost {

const std::vector<CommandEntry>& command_table() {
  static const std::vector<CommandEntry> table = {
      {"measure", "Replay one ATen operator in a loop and measure its time and energy", &make_measure_command},
      {"sweep",
       "Measure every item of a grid or a model list, resumably, with its state in the database (docs/sweeps.md)",
       &make_sweep_command},
      {"db", "Inspect and export the measurement database", &make_db_command},
      {"trace", "Trace a model's steps: every kernel tied to its operator and layer, as a Chrome trace and tables",
       &make_trace_command},
      {"inventory", "Run a model once and list every ATen operator it calls, by layer", &make_inventory_command},
      {"predict", "Predict a model step's time and energy from the database (lists what is missing)",
       &make_predict_command},
      {"validate", "Measure what the database lacks and the whole step; compare with the prediction",
       &make_validate_command},
      {"model", "Measure operators in order of expected share until they explain --target of the step",
       &make_model_command},
      {"compare",
       "Variants of a model side by side (fp32, bf16, autocast, channels_last): step and per-layer time and energy, "
       "each difference with its interval (docs/compare.md)",
       &make_compare_command},
      {"fit",
       "Fit a cost model per operator family from the database's rows (scikit-learn; prints held-out errors; "
       "docs/estimate.md)",
       &make_fit_command},
      {"estimate", "Estimate a call never measured from the fitted cost model, with its interval (docs/estimate.md)",
       &make_estimate_command},
      {"models", "List the built-in models with their parameter counts and inputs", &make_models_command},
      {"report", "Write any result JSON opcost writes as one self-contained HTML page with charts (docs/report.md)",
       &make_report_command},
  };
  return table;
}

}  // namespace opcost
