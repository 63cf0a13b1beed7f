#pragma once
// The options registry (workflow/options.h) on the command line: each option a command offers
// becomes a CLI11 option with the registry's flag, help and check, its default read off the
// command's preset. Each is taken as text and applied through the registry once parsed, so the
// command line accepts exactly what the Python package does, with the same messages.
#include <CLI/CLI.hpp>
#include <deque>
#include <string>

#include "workflow/options.h"

namespace opcost {

template <typename Options>
class RegistryOptions {
 public:
  // Adds every option of `specs` that `command` offers; `defaults` shows in --help.
  void add(CLI::App& cmd, const std::vector<OptionSpec<Options>>& specs, OptionCommand command,
           const Options& defaults);
  // Sets the options given on the command line (the rest keep the struct's values).
  void apply(Options& o) const;

 private:
  struct Bound {
    const OptionSpec<Options>* spec = nullptr;
    std::string text;         // a valued option's text
    bool flag_given = false;  // a flag's
    CLI::Option* cli = nullptr;
  };
  std::deque<Bound> bound_;  // stable addresses: CLI11 writes into them
};

extern template class RegistryOptions<MeasureOptions>;
extern template class RegistryOptions<PredictOptions>;
extern template class RegistryOptions<CompareOptions>;

}  // namespace opcost
