// `opcost predict | validate | model MODEL`: a model step's time and energy from the database;
// validate and model measure what it lacks first. The three share their options (the
// registry's, from each command's preset) and differ in what they measure.
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/commands/model_options.h"
#include "cli/commands/registry_options.h"
#include "cli/exit_codes.h"
#include "core/io/atomic_output_file.h"
#include "workflow/predict.h"
#include "workflow/report_html.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

namespace {

class PredictCommand : public Command {
 public:
  explicit PredictCommand(OptionCommand command) : command_(command), options_(predict_preset(command)) {}

  void add_options(CLI::App& cmd) override {
    add_model_options(cmd, options_.model);
    cmd.add_flag("--json", json_, "print JSON");
    cmd.add_option("--html", html_, "also write the result as a self-contained HTML page (as opcost report does)");
    registry_.add(cmd, predict_option_specs(), command_, options_);
  }

  int run(const CommandContext& context) override {
    options_.db = context.db;
    options_.db_create_parent = context.db_create_parent;
    registry_.apply(options_);
    // Before anything runs: the page written over the model file or the database would lose it.
    check_output_not_input(html_, "--html", {{options_.model.model, "the model file"}, {options_.db, "the database"}});
    const PredictReport report = run_predict(options_, Notes::to_stderr());
    fmt::print("{}", make_reporter(json_ ? ReportFormat::kJson : ReportFormat::kText)->prediction(report));
    std::fflush(stdout);
    if (!html_.empty()) {
      write_report_of(to_json(report), options_.model.model, html_);
      fmt::print(stderr, "opcost: report written to {}\n", html_);
    }
    if (report.failures) return kExitMeasurementFailed;
    // A target met leaves operators unmeasured by choice; GPU time no call launched is never a choice.
    return (report.prediction.complete() || report.target_met) && !report.prediction.uncovered() ? kExitSuccess
                                                                                                 : kExitIncomplete;
  }

 private:
  OptionCommand command_;
  PredictOptions options_;  // the command's preset, then the options given
  bool json_ = false;
  std::string html_;  // --html: the page too
  RegistryOptions<PredictOptions> registry_;
};

}  // namespace

std::unique_ptr<Command> make_predict_command() { return std::make_unique<PredictCommand>(kPredictCommand); }
std::unique_ptr<Command> make_validate_command() { return std::make_unique<PredictCommand>(kValidateCommand); }
std::unique_ptr<Command> make_model_command() { return std::make_unique<PredictCommand>(kModelCommand); }

}  // namespace opcost
