#include "cli/commands/registry_options.h"

#include <fmt/format.h>

namespace opcost {

namespace {

// --help's type column, as CLI11 names its own: FLOAT, INT, SIZE, TEXT.
const char* type_column(OptionType type) {
  switch (type) {
    case OptionType::kNumber:
      return "FLOAT";
    case OptionType::kWhole:
      return "INT";
    case OptionType::kBytes:
      return "SIZE";
    default:
      return "TEXT";
  }
}

// What --help says of the valid values: "NUMBER above 0 and at most 86400", "{auto,warm,cold}".
std::string values_column(const OptionInfo& o) {
  if (!o.choices.empty()) return fmt::format("{{{}}}", fmt::join(o.choices, ","));
  if (o.type == OptionType::kText) return "";
  const OptionRange& r = o.range;
  const char* kind = o.type == OptionType::kNumber ? "NUMBER" : "INTEGER";
  // A bound past what a double counts exactly (a seed's) is no bound a user needs to read.
  const bool unbounded = r.high >= 9007199254740992.0;
  const std::string range = unbounded        ? fmt::format("of {} or more", r.low)
                            : r.low_included ? fmt::format("from {} to {}", r.low, r.high)
                                             : fmt::format("above {} and at most {}", r.low, r.high);
  return fmt::format("{} {}{}", kind, r.zero_allowed ? "0, or " : "", range);
}

// The registry's check, as a CLI11 validator (CLI11 prefixes the reason with the flag).
CLI::Validator registry_check(const OptionInfo& o) {
  return CLI::Validator([&o](std::string& text) { return option_text_error(o, text); }, values_column(o));
}

}  // namespace

template <typename Options>
void RegistryOptions<Options>::add(CLI::App& cmd, const std::vector<OptionSpec<Options>>& specs, OptionCommand command,
                                   const Options& defaults) {
  for (const auto& spec : specs) {
    if (!spec.offered_by(command)) continue;
    Bound& b = bound_.emplace_back();
    b.spec = &spec;
    const std::string flag(spec.flag), help(spec.help);
    if (spec.type == OptionType::kFlag) {
      b.cli = cmd.add_flag(flag, b.flag_given, help);
      continue;
    }
    b.cli = cmd.add_option(flag, b.text, help)->type_name(type_column(spec.type));
    // Numbers are checked as they are parsed; text (a device, a cache mode) when applied, so that
    // its refusal is the registry's one line, as every face words it.
    if (spec.type != OptionType::kText) b.cli->check(registry_check(spec));
    const std::string shown = option_value_text(spec.get(defaults));
    // Text and bytes left unset ("" / 0) have no default worth showing (the help says what happens).
    const bool unset =
        (spec.type == OptionType::kText && shown.empty()) || (spec.type == OptionType::kBytes && shown == "0");
    if (!unset) b.cli->default_str(shown);
  }
}

template <typename Options>
void RegistryOptions<Options>::apply(Options& o) const {
  for (const Bound& b : bound_) {
    if (b.cli->count() == 0) continue;
    if (b.spec->type == OptionType::kFlag)
      apply_option(o, b.spec->name, OptionValue(b.spec->flag_sets));
    else
      apply_option_text(o, b.spec->name, b.text);
  }
}

template class RegistryOptions<MeasureOptions>;
template class RegistryOptions<PredictOptions>;
template class RegistryOptions<CompareOptions>;

}  // namespace opcost
