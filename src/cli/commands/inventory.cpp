// `opcost inventory MODEL`: every ATen call of one step, by layer, as a table or JSON.
#include <fmt/format.h>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/commands/model_options.h"
#include "cli/exit_codes.h"
#include "core/io/atomic_output_file.h"
#include "core/io/output_file.h"
#include "workflow/model_inventory.h"
#include "workflow/reporters/reporter.h"

namespace opcost {

namespace {

class InventoryCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    add_model_options(cmd, model_);
    cmd.add_flag("--json", json_, "write JSON (ops, layers, nested ops, the call sequence)");
    cmd.add_option("-o,--output", output_, "file to write (default: standard output)");
    cmd.add_option("--cache-bytes", cache_bytes_,
                   "class each call's inputs as read from L2 or memory against this cache, as 50MiB or bytes "
                   "(default: the GPU's L2; on the CPU, none)")
        ->transform(CLI::AsSizeValue(false));
  }

  int run(const CommandContext&) override {
    check_output_not_input(output_, "-o", {{model_.model, "the model file"}});
    auto model = make_model(model_.model, model_.inputs, model_.in);
    if (model_.in.device == "auto" && model->device_kind() == "cpu")
      fmt::print(stderr, "opcost: no CUDA GPU found; running {} on the CPU\n", model_.model);
    std::string not_classed_why;
    Inventory inv = take_inventory(*model, model_, 8, cache_bytes_to_class(*model, cache_bytes_, &not_classed_why));
    if (inv.cache_bytes == 0 && model->device_kind() == "cuda")
      fmt::print(stderr, "opcost: inputs not classed as read from L2 or memory: {}\n", not_classed_why);
    write_file_atomically(output_, make_reporter(json_ ? ReportFormat::kJson : ReportFormat::kText)->inventory(inv));
    if (!output_.empty())
      fmt::print(stderr, "opcost: inventory of {} written to {} ({} calls, {} unique signatures)\n", model_.model,
                 output_, inv.sequence.size(), inv.entries.size());
    return kExitSuccess;
  }

 private:
  ModelOptions model_;
  bool json_ = false;
  std::string output_;
  std::uint64_t cache_bytes_ = 0;  // 0: the GPU's L2
};

}  // namespace

std::unique_ptr<Command> make_inventory_command() { return std::make_unique<InventoryCommand>(); }

}  // namespace opcost
