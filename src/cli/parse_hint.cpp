#include "cli/parse_hint.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/text/text.h"

namespace opcost {

namespace {

// The subcommand chain a command line names (app, measure; app, db, list), as far as it goes.
std::vector<CLI::App*> command_chain(CLI::App& app, int argc, char** argv) {
  std::vector<CLI::App*> chain = {&app};
  for (int i = 1; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok.empty() || tok[0] == '-') continue;
    auto subs = chain.back()->get_subcommands({});
    auto it = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->get_name() == tok; });
    if (it != subs.end()) chain.push_back(*it);
  }
  return chain;
}

}  // namespace

// "Did you mean" for a mistyped subcommand or option.
std::string parse_error_hint(CLI::App& app, int argc, char** argv) {
  const auto chain = command_chain(app, argc, argv);
  std::vector<std::string> options;
  for (CLI::App* level : chain)
    for (const CLI::Option* opt : level->get_options()) {
      for (const auto& l : opt->get_lnames()) options.push_back("--" + l);
      for (const auto& s : opt->get_snames()) options.push_back("-" + s);
    }
  for (int i = 1; i < argc; ++i) {
    std::string tok = argv[i];
    if (tok.rfind("--", 0) == 0) {
      tok = tok.substr(0, tok.find('='));
      if (std::find(options.begin(), options.end(), tok) != options.end()) continue;
      const auto near = closest(tok, options, 1);
      return fmt::format("unknown option '{}' for {}{}", printable(elide(tok, 40)),
                         chain.back()->get_name().empty() ? "opcost" : "opcost " + chain.back()->get_name(),
                         near.empty() ? "" : fmt::format(" (did you mean {}?)", near.front()));
    }
  }
  // A first word that is no command, where a command is required: the likeliest typo. (Where
  // a command may take a word of its own, `sweep FILE`, a word is no typo.)
  if (chain.back()->get_require_subcommand_min() > 0) {
    CLI::App* level = chain.back();
    std::vector<std::string> names, on_chain;
    for (CLI::App* s : level->get_subcommands({})) names.push_back(s->get_name());
    for (CLI::App* c : chain) on_chain.push_back(c->get_name());
    for (int i = 1; i < argc; ++i) {
      const std::string tok = argv[i];
      if (tok.empty() || tok[0] == '-' || std::find(names.begin(), names.end(), tok) != names.end() ||
          std::find(on_chain.begin(), on_chain.end(), tok) != on_chain.end())
        continue;
      if (i > 1 && std::string(argv[i - 1]) == "--db") continue;  // the value of an option
      const auto near = closest(tok, names, 1);
      return fmt::format("unknown command '{}'{}; the commands are: {}", printable(elide(tok, 40)),
                         near.empty() ? "" : fmt::format(" (did you mean {}?)", near.front()), fmt::join(names, ", "));
    }
  }
  return "";
}

}  // namespace opcost
