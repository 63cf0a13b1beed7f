// `opcost report RESULT.json -o OUT.html`: any result JSON opcost writes as one self-contained
// HTML page (workflow/report_html.h).
#include <fmt/format.h>

#include <cstdio>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/exit_codes.h"
#include "workflow/report_html.h"

namespace opcost {

namespace {

class ReportCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    cmd.add_option(
           "result", input_,
           "the JSON of validate/predict/model/trace/measure/compare --json, or of db export --json (-: standard "
           "input)")
        ->required();
    cmd.add_option("-o,--output", output_, "the HTML file to write (one file: scripts and styles inline)")->required();
  }

  int run(const CommandContext&) override {
    const ReportKind kind = write_report(input_, output_);
    fmt::print(stderr, "opcost: {} report of {} written to {}\n", report_kind_name(kind),
               input_ == "-" ? "standard input" : input_, output_);
    return kExitSuccess;
  }

 private:
  std::string input_, output_;
};

}  // namespace

std::unique_ptr<Command> make_report_command() { return std::make_unique<ReportCommand>(); }

}  // namespace opcost
