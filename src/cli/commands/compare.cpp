// `opcost compare MODEL --variants fp32,bf16,...`: a built-in (or TorchScript) model's variants
// side by side, whole step and per layer (workflow/compare.h). torch.compile and int8 are
// Python's: `python -m opcost compare MODULE:ATTR` runs those.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/commands/model_options.h"
#include "cli/commands/registry_options.h"
#include "core/compare/variant_spec.h"
#include "core/io/atomic_output_file.h"
#include "workflow/compare.h"

namespace opcost {

namespace {

class CompareCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    add_model_options(cmd, model_);
    cmd.add_option("--variants", variants_,
                   "the variants, comma-separated, the first the baseline: " + known_variant_names())
        ->required();
    registry_.add(cmd, compare_option_specs(), kCompareCommand, options_);
    cmd.add_flag("--json", json_, "print JSON");
    cmd.add_option("-o,--output", output_, "also write the JSON report to this file");
  }

  int run(const CommandContext&) override {
    registry_.apply(options_);
    options_.check();
    if (model_.in.dtype != "fp32" || !model_.in.autocast.empty())
      throw std::invalid_argument(
          "--dtype and --autocast: compare sets each variant's own; name them in --variants (fp32,bf16,autocast-bf16)");
    const std::vector<VariantSpec> specs = parse_variant_list(variants_);
    for (const auto& s : specs)
      if (s.python_only())
        throw std::invalid_argument(fmt::format(
            "--variants: '{}' is Python's (torch.compile, torch.ao quantisation); run it as python -m opcost compare "
            "MODULE:ATTR --input ... --variants {}",
            s.name, variants_));
    check_output_not_input(output_, "--output", {{model_.model, "the model file"}});
    // Every variant is built before anything is measured: a model that cannot be built at some
    // dtype fails before the rounds start, not in the middle of them.
    std::vector<std::unique_ptr<RunnableModel>> models;
    std::vector<CompareVariant> variants;
    for (const auto& s : specs) {
      ModelOptions m = model_;
      m.in.dtype = s.dtype;
      m.in.autocast = s.autocast;
      m.in.channels_last = s.channels_last;
      try {
        models.push_back(make_model(m.model, m.inputs, m.in));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("variant {}: {}", s.name, e.what()));
      }
      variants.push_back(CompareVariant{s.name, s.description, models.back().get(), m});
    }
    const CompareReport report = run_compare(variants, options_, Notes::to_stderr());
    const std::string json = to_json(report).dump(2) + "\n";
    fmt::print("{}", json_ ? json : render_compare(report, ::isatty(STDOUT_FILENO), options_.layer_rows));
    std::fflush(stdout);
    if (!output_.empty()) {
      write_file_atomically(output_, json);
      fmt::print(stderr, "opcost: comparison written to {}\n", output_);
    }
    return 0;
  }

 private:
  ModelOptions model_;
  std::string variants_;
  CompareOptions options_;
  RegistryOptions<CompareOptions> registry_;
  bool json_ = false;
  std::string output_;
};

}  // namespace

std::unique_ptr<Command> make_compare_command() { return std::make_unique<CompareCommand>(); }

}  // namespace opcost
