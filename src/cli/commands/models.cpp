// `opcost models`: the built-in models, with their parameter counts and default inputs.
#include <fmt/format.h>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/exit_codes.h"
#include "torch/models.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

namespace {

class ModelsCommand : public Command {
 public:
  void add_options(CLI::App&) override {}

  int run(const CommandContext&) override {
    std::vector<ModelSummary> models;
    for (const auto& info : builtin_models()) {
      ModelInput in;
      in.device = "cpu";
      const auto m = make_builtin_model(info.name, in);
      models.push_back({info.name, info.default_input, info.description, static_cast<long long>(m->parameter_count())});
    }
    fmt::print("{}", make_reporter(ReportFormat::kText)->models(models));
    return kExitSuccess;
  }
};

}  // namespace

std::unique_ptr<Command> make_models_command() { return std::make_unique<ModelsCommand>(); }

}  // namespace opcost
