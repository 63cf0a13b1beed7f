#pragma once
// The options registry: every measuring option declared once — its name as Python spells it,
// its flag as the command line spells it, its type, unit, help, valid values and whether it is
// part of a measurement's identity key — with how to read and write it on the options struct it
// belongs to. The faces (CLI11, the pybind11 module, the Python signatures and argparse) are
// derived from these tables, and every result records the settings it ran with by these names.
//
// Defaults are never written here: a face reads an option's default off a default-constructed
// struct (MeasureConfig{} in torch/runner.h, ReplayOptions{} in torch/replay.h) or a
// PredictOptions preset (workflow/predict.h), which stay the one place a default is written.
// Torch-free header.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/measurement.h"  // Settings
#include "workflow/compare.h"
#include "workflow/measure.h"
#include "workflow/predict.h"

namespace opcost {

// An option's value as it crosses a face: a flag, a number, a whole number (counts, seeds, bytes)
// or text (device, cache mode, autocast).
using OptionValue = std::variant<bool, double, std::int64_t, std::string>;

enum class OptionType {
  kFlag,    // bool
  kNumber,  // double (seconds, shares, relative intervals)
  kWhole,   // std::int64_t (counts, seeds)
  kBytes,   // std::int64_t; as text also "256MiB", "1GiB" (binary units)
  kText,    // std::string, checked by OptionInfo::check_text
};

// The commands that offer an option (a bit set).
enum OptionCommand : unsigned {
  kMeasureCommand = 1u << 0,
  kSweepCommand = 1u << 1,
  kPredictCommand = 1u << 2,
  kValidateCommand = 1u << 3,
  kModelCommand = 1u << 4,
  kCompareCommand = 1u << 5,
};

// A number's valid values: finite, above `low` (from it when `low_included`), at most `high`;
// when `zero_allowed`, 0 too (an option whose 0 means "off", like model's target).
struct OptionRange {
  double low = 0;
  bool low_included = true;
  double high = 0;
  bool zero_allowed = false;
};

// What a face needs to offer an option: everything but how to reach it on a struct.
struct OptionInfo {
  std::string_view name;  // Python's keyword, the settings' name: "energy_max_time"
  std::string_view flag;  // the command line's: "--energy-max-time" (a flag: "--no-energy")
  OptionType type = OptionType::kNumber;
  std::string_view unit;  // "s", "bytes", or "" (a share, a count, text)
  std::string_view help;  // one line, for --help and the Python docstrings
  OptionRange range;      // kNumber, kWhole, kBytes
  // kText: the fixed choices, when there are (empty: any text check_text accepts).
  std::vector<std::string_view> choices;
  // kText: checks `text` and returns its canonical spelling ("cuda:0", "cold:weight"); throws
  // std::invalid_argument with a one-line reason (the caller names the option).
  std::string (*check_text)(std::string_view text) = nullptr;
  bool flag_sets = false;  // kFlag: the value the command line's flag sets (--no-energy: false)
  bool identity = false;   // part of settings_key: the same call at another value is another measurement
  unsigned commands = 0;   // OptionCommand bits: the commands that offer it

  // "max_time (--max-time)": how every message names an option, for either face's user.
  std::string both_spellings() const;
  bool offered_by(OptionCommand c) const { return (commands & c) != 0; }
};

// An option bound to the options struct it is set on. `set` takes a value already checked
// (apply_option checks it): it sets the option alone, whatever the others are.
template <typename Options>
struct OptionSpec : OptionInfo {
  std::function<OptionValue(const Options&)> get;
  std::function<void(Options&, const OptionValue&)> set;
};
using MeasureOptionSpec = OptionSpec<MeasureOptions>;  // measure, sweep
using PredictOptionSpec = OptionSpec<PredictOptions>;  // predict, validate, model
using CompareOptionSpec = OptionSpec<CompareOptions>;  // compare

// The registries, in the order help and settings list them. Names and flags are unique within
// each; an option in both (max_time) is declared once and bound to both structs.
const std::vector<MeasureOptionSpec>& measure_option_specs();
const std::vector<PredictOptionSpec>& predict_option_specs();
const std::vector<CompareOptionSpec>& compare_option_specs();
// nullptr when there is none of that name.
const MeasureOptionSpec* find_measure_option(std::string_view name);
const PredictOptionSpec* find_predict_option(std::string_view name);

// The presets of the predicting commands, as data: what each changes from PredictOptions{}
// (validate: a longer step budget; model: shorter loops, from the start, to a target).
struct PresetValue {
  std::string_view option;  // a predict registry name
  OptionValue value;
};
struct PredictPreset {
  OptionCommand command;  // kPredictCommand, kValidateCommand or kModelCommand
  bool measure = false;   // PredictOptions::measure: it measures what the database lacks, and the step
  std::vector<PresetValue> values;
};
const std::vector<PredictPreset>& predict_presets();
// PredictOptions{} with the command's preset applied: the defaults its options show. Any other
// command: PredictOptions{}.
PredictOptions predict_preset(OptionCommand command);

// A value of the wrong type for its option (text for a number): Python's TypeError.
class OptionTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Checks `value` against the option (type, range, text) and returns it in canonical form
// (text canonical, an integral double of a kWhole option as a whole number); throws
// std::invalid_argument (OptionTypeError for a wrong type) in one line naming the option in both
// spellings: "max_time (--max-time) must be a number above 0 and at most 86400 seconds, not -1".
OptionValue checked_option_value(const OptionInfo& option, const OptionValue& value);
// Parses the command line's text of an option ("0.5", "256MiB", "cuda:1", "true"), checked as
// above; throws std::invalid_argument naming the option likewise.
OptionValue parse_option_text(const OptionInfo& option, std::string_view text);
// For a CLI11 validator: "" when `text` is valid for the option, else the one-line reason
// (without the option's name, which CLI11 prefixes).
std::string option_text_error(const OptionInfo& option, std::string_view text);
// The canonical text of a value: "0.05", "true", "256", "cold:weight" (the settings' values).
std::string option_value_text(const OptionValue& value);

// Sets one option by its registry name, checked; throws std::invalid_argument naming it in both
// spellings (an unknown name: the known ones). The option takes effect on its own.
void apply_option(MeasureOptions& o, std::string_view name, const OptionValue& value);
void apply_option(PredictOptions& o, std::string_view name, const OptionValue& value);
void apply_option(CompareOptions& o, std::string_view name, const OptionValue& value);
// The same from the command line's text.
void apply_option_text(MeasureOptions& o, std::string_view name, std::string_view text);
void apply_option_text(PredictOptions& o, std::string_view name, std::string_view text);
void apply_option_text(CompareOptions& o, std::string_view name, std::string_view text);

// Checks every registry option's current value (as the workflows do first, so that a struct
// filled in code is refused as the faces refuse): throws std::invalid_argument naming the first
// bad one in both spellings. Replaces check_measure_config and PredictOptions::check's rules.
void check_options(const MeasureOptions& o);
void check_options(const PredictOptions& o);
void check_options(const CompareOptions& o);
// The MeasureConfig options alone (the measure registry's, on `c`).
void check_options(const MeasureConfig& c);

// The settings a run used, by registry name, in registry order (canonical text values).
// A measurement's: its replay options and the loops it ran (a short loop's halved budgets show).
Settings settings_of(const ReplayOptions& replay, const MeasureConfig& config);
Settings settings_of(const MeasureOptions& o);
Settings settings_of(const PredictOptions& o);
Settings settings_of(const CompareOptions& o);  // compare's, by registry name
// The stable hash of the identity members of `settings` (measure registry membership, in
// registry order; names it does not know, and identity members it lacks, are skipped): equal
// for two measurements exactly when every setting that changes the figure is equal.
std::string settings_key(const Settings& settings);
// The setting of that name, or nullptr.
const std::string* find_setting(const Settings& settings, std::string_view name);

}  // namespace opcost
