// `opcost fit`: fits the cost model (issue 26) from the database's rows. The learning is
// scikit-learn's, so this runs `python -m opcost fit` with the same words, in a Python that has
// opcost and scikit-learn ($OPCOST_PYTHON, else python3). The database goes to it in $OPCOST_DB,
// never on its command line, where a URL's password would show to every user of the machine.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "cli/command.h"
#include "cli/commands/factories.h"
#include "cli/exit_codes.h"
#include "core/io/output_file.h"
#include "core/sys/child_process.h"

namespace opcost {

namespace {

class FitCommand : public Command {
 public:
  void add_options(CLI::App& cmd) override {
    cmd.add_option("--csv", csv_, "also fit the rows of these `opcost db export --csv` files")
        ->check(CLI::ExistingFile);
    cmd.add_option("--train-gpu", train_gpus_,
                   "fit on this GPU's rows only (the others' rows still give their achieved rates: a cross-GPU "
                   "estimate); repeatable");
    cmd.add_option("--coverage", coverage_, "the intervals' coverage")->check(CLI::Range(0.5, 0.99));
    cmd.add_option("-o,--output", output_, "also write the model to this JSON file");
    cmd.add_flag("--no-store", no_store_, "do not store the model in the database's cost_models table");
    cmd.add_option("--json", json_, "write the held-out errors of every family as JSON to this file");
  }

  int run(const CommandContext& context) override {
    const char* env = std::getenv("OPCOST_PYTHON");
    const std::string python = env && *env ? env : "python3";
    // Each value joined to its option (--csv=FILE): a value that starts with "-" stays a value.
    std::vector<std::string> argv = {python, "-m", "opcost", "fit", fmt::format("--coverage={}", coverage_)};
    for (const auto& f : csv_) argv.push_back("--csv=" + f);
    for (const auto& g : train_gpus_) argv.push_back("--train-gpu=" + g);
    if (!output_.empty()) argv.push_back("--output=" + output_);
    if (!json_.empty()) argv.push_back("--json=" + json_);
    if (no_store_) argv.push_back("--no-store");
    std::string ended;
    int signal = 0;
    try {
      ChildProcess child(argv, {{"OPCOST_DB", context.db}});
      while (auto line = child.read_line()) fmt::print("{}\n", *line);
      std::fflush(stdout);
      ended = child.wait();
      signal = child.signal();
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(
          fmt::format("opcost fit runs in Python: {} (set OPCOST_PYTHON to a Python where "
                      "`pip install 'opcost[fit]'` was run)",
                      e.what()));
    }
    check_stdout();
    if (ended.empty()) return kExitSuccess;
    // The child said why on standard error (ours); its status is passed on.
    if (ended.rfind("exited with status ", 0) == 0) return std::stoi(ended.substr(19));
    fmt::print(stderr, "opcost: error: fit: {} {}\n", python, ended);
    return signal == SIGINT ? 128 + SIGINT : kExitMeasurementFailed;  // Ctrl-C: as a shell reports it
  }

 private:
  std::vector<std::string> csv_, train_gpus_;
  std::string output_, json_;
  double coverage_ = 0.95;
  bool no_store_ = false;
};

}  // namespace

std::unique_ptr<Command> make_fit_command() { return std::make_unique<FitCommand>(); }

}  // namespace opcost
