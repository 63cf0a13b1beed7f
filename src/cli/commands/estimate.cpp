// `opcost estimate OP ARGS...`: the cost of a call never measured, from the cost model fitted
// from the database (`opcost fit`): each figure with its interval, marked estimated, and where
// the call lies outside the rows the model was fitted on. Where the database has the call at
// another size, the estimate is scaled from that row, as predict --estimate's are
// (workflow/predict_estimates.h). Nothing is stored.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/exit_codes.h"
#include "core/estimate/cost_model.h"
#include "core/io/output_file.h"
#include "core/spec/spec_file.h"
#include "core/store/cost_model_store.h"
#include "core/store/database.h"
#include "core/text/text.h"
#include "workflow/predict_estimates.h"

namespace opcost {

namespace {

std::string with_interval(double v, double lo, double hi, const char* unit, double coverage) {
  return fmt::format("{:.4g} {}  [{:.4g}, {:.4g}] ({:.0f}% interval)", v, unit, lo, hi, 100 * coverage);
}

class EstimateCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    cmd.add_option("op", op_, "operator, e.g. aten::conv2d")->required();
    cmd.add_option("args", args_, "arguments as name=value: input=bf16[64,256,28,28] weight=bf16[512,256,3,3]");
    cmd.add_option("--gpu", gpu_, "the GPU, by its rows' device name (default: the model's only GPU)");
    cmd.add_option("--cache", cache_, "warm or cold, as measured")->check(CLI::IsMember({"warm", "cold"}));
    cmd.add_option("--cost-model,--model", model_,
                   "a cost model file (opcost fit -o FILE); default: the newest stored in --db");
    cmd.add_flag("--json", json_, "the estimate as JSON (marked \"estimated\": true)");
  }

  int run(const CommandContext& context) override {
    // The stored model is read from the database where no file is given; never written.
    std::optional<Database> db;
    if (model_.empty() && Database::exists(context.db)) db.emplace(context.db, Database::Access::kReadOnly);
    const auto [model, source] = load_cost_model(model_, db ? &*db : nullptr, context.db, "--cost-model");
    std::string gpu = gpu_;
    if (gpu.empty()) {
      if (model.gpus().size() != 1) {
        std::vector<std::string> names;
        for (const auto& [name, p] : model.gpus()) names.push_back(name);
        throw std::invalid_argument(fmt::format("--gpu: the cost model knows {}: name one", fmt::join(names, ", ")));
      }
      gpu = model.gpus().begin()->first;
    }
    const OpCall call = parse_call(op_, args_);
    // Its rows of the call at other sizes scale the estimate; a database that cannot be read
    // leaves the model's figure, with a note.
    const CallEstimate estimated =
        db ? estimate_call(model, call, cache_, gpu, &*db) : estimate_call(model, call, cache_, gpu, context.db);
    const CostEstimate& e = estimated.estimate;
    if (json_) {
      fmt::print("{}\n", call_estimate_document(call, gpu, estimated).dump(2));
      check_stdout();
      return kExitSuccess;
    }
    fmt::print("{} {} on {}, {} cache: estimated, not measured ({}; {} family)\n", call.display_name(),
               format_args(call.args), gpu, cache_, source, e.family);
    fmt::print("  time    {}\n", with_interval(e.time_us, e.time_low_us, e.time_high_us, "us", e.coverage));
    // Energy and power are fitted apart: a model may give either without the other.
    if (e.energy_mJ)
      fmt::print("  energy  {}\n", with_interval(*e.energy_mJ, *e.energy_low_mJ, *e.energy_high_mJ, "mJ", e.coverage));
    else
      fmt::print("  energy  none: {}\n", e.energy_unavailable);
    if (e.power_W)
      fmt::print("  power   {}\n", with_interval(*e.power_W, *e.power_low_W, *e.power_high_W, "W", e.coverage));
    if (e.host_us)
      fmt::print("  host    {} a call\n", with_interval(*e.host_us, *e.host_low_us, *e.host_high_us, "us", e.coverage));
    if (const auto& a = estimated.anchor)
      fmt::print(
          "  scaled from the row measured at {} where this call has {} ({}; its median {:.4g} us [{:.4g}, {:.4g}] "
          "95% interval): time and energy by the ratio of their roofline figures ({:.4g} for time); the "
          "intervals: time's {}, energy's {}\n",
          a->extents.row, a->extents.call, a->row_args, a->row_time_us, a->row_time_low_us, a->row_time_high_us,
          a->time_ratio, anchor_interval_words(a->time_interval_fitted),
          anchor_interval_words(a->energy_interval_fitted));
    for (const auto& note : e.notes) fmt::print("  note: {}\n", note);
    if (!e.out_of_range.empty())
      fmt::print("  out of the fit's data, so an extrapolation: {}\n", fmt::join(e.out_of_range, "; "));
    check_stdout();
    return kExitSuccess;
  }

 private:
  std::string op_, gpu_, cache_ = "warm", model_;
  std::vector<std::string> args_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_estimate_command() { return std::make_unique<EstimateCommand>(); }

}  // namespace opcost
