// The options registry: one declaration per option, defaults read from the structs, every
// identity option in the key, checks that name the option in both spellings.
#include "workflow/options.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

namespace opcost {
namespace {

template <typename Specs>
void expect_unique_names_and_flags(const Specs& specs) {
  std::set<std::string_view> names, flags;
  for (const auto& s : specs) {
    EXPECT_TRUE(names.insert(s.name).second) << "name twice: " << s.name;
    EXPECT_TRUE(flags.insert(s.flag).second) << "flag twice: " << s.flag;
    EXPECT_EQ(s.flag.substr(0, 2), "--") << s.name;
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_NE(s.commands, 0u) << s.name << " is offered by no command";
    EXPECT_TRUE(s.get && s.set) << s.name;
    if (s.type == OptionType::kText) EXPECT_NE(s.check_text, nullptr) << s.name;
  }
}

TEST(Options, NamesAndFlagsAreUniqueAndComplete) {
  expect_unique_names_and_flags(measure_option_specs());
  expect_unique_names_and_flags(predict_option_specs());
  expect_unique_names_and_flags(compare_option_specs());
  for (const auto& s : compare_option_specs()) EXPECT_EQ(s.commands, unsigned(kCompareCommand)) << s.name;
}

TEST(Options, AnOptionInBothRegistriesIsDeclaredAlike) {
  // max_time is one declaration bound to two structs: the faces must say the same of it.
  for (const auto& m : measure_option_specs()) {
    const PredictOptionSpec* p = find_predict_option(m.name);
    if (!p || m.name == "cache") continue;  // predict's cache is another option (auto|warm|cold)
    EXPECT_EQ(p->flag, m.flag) << m.name;
    EXPECT_EQ(p->type, m.type) << m.name;
    EXPECT_EQ(p->range.high, m.range.high) << m.name;
    EXPECT_EQ(p->range.low, m.range.low) << m.name;
  }
}

TEST(Options, DefaultsAreTheStructs) {
  // Nothing is restated: what the registry reports is what a default struct holds.
  const MeasureOptions d;
  const MeasureConfig c;
  const ReplayOptions r;
  EXPECT_EQ(std::get<double>(find_measure_option("max_time")->get(d)), c.time.max_seconds);
  EXPECT_EQ(std::get<double>(find_measure_option("energy_max_time_capped")->get(d)), c.energy_max_capped_s);
  EXPECT_EQ(std::get<std::int64_t>(find_measure_option("energy_min_windows")->get(d)),
            std::int64_t(c.energy_min_windows));
  EXPECT_EQ(std::get<std::string>(find_measure_option("cache")->get(d)), r.cache_mode);
  EXPECT_EQ(std::get<std::int64_t>(find_measure_option("cold_footprint")->get(d)),
            std::int64_t(r.cold_footprint_bytes));
  // Every default passes its own option's check (a default out of range would refuse every run).
  EXPECT_NO_THROW(check_options(d));
  for (auto command : {kPredictCommand, kValidateCommand, kModelCommand})
    EXPECT_NO_THROW(check_options(predict_preset(command))) << command;
  const CompareOptions compare;
  EXPECT_NO_THROW(check_options(compare));
  EXPECT_EQ(std::get<std::int64_t>(compare_option_specs().front().get(compare)), std::int64_t(compare.rounds));
}

TEST(Options, PresetsAsDataAreTheCommandsPresets) {
  // predict_presets() is the data PredictOptions' named presets are made from: `model`'s
  // target given to model_to lands, and its shorter loops come from the data.
  EXPECT_DOUBLE_EQ(PredictOptions::model_to(0.5).target, 0.5);
  // `model` and `validate` take the short loops from the first operator, `predict`'s are the full ones.
  EXPECT_LT(predict_preset(kModelCommand).op_config.time.max_seconds,
            predict_preset(kPredictCommand).op_config.time.max_seconds);
  EXPECT_LT(predict_preset(kValidateCommand).op_config.energy_max_s,
            predict_preset(kPredictCommand).op_config.energy_max_s);
  EXPECT_EQ(predict_preset(kModelCommand).short_loops_after, 0);
  EXPECT_EQ(predict_preset(kValidateCommand).short_loops_after, 0);
  EXPECT_TRUE(predict_preset(kValidateCommand).measure);
  EXPECT_TRUE(predict_preset(kValidateCommand).step_config.synchronous_calls);
  EXPECT_FALSE(predict_preset(kPredictCommand).measure);
  for (const auto& preset : predict_presets())
    for (const auto& v : preset.values) EXPECT_NE(find_predict_option(v.option), nullptr) << v.option;
}

// --cost-model's registry check: a file that is there (this test's own temporary one).
std::string a_file_that_is_there() {
  const auto path = std::filesystem::temp_directory_path() / "opcost-options-test-cost-model.json";
  std::ofstream(path) << "{}";
  return path.string();
}

TEST(Options, EachOptionTakesEffectAlone) {
  // Setting one option changes that option's setting and no other (the bug where Python's
  // energy_max_time was dropped unless max_time came too).
  auto check = [](const auto& specs, auto defaults, auto settings) {
    for (const auto& s : specs) {
      auto o = defaults;
      OptionValue other;
      switch (s.type) {
        case OptionType::kFlag:
          other = !std::get<bool>(s.get(o));
          break;
        case OptionType::kNumber:
          other = s.range.high == 1 ? 0.5 * s.range.high + 0.01 : 7.25;
          break;
        case OptionType::kWhole:
        case OptionType::kBytes:
          other = std::int64_t(s.range.low + 3);
          if (other == s.get(o)) other = std::int64_t(s.range.low + 4);
          break;
        case OptionType::kText:
          other = std::string(s.name == "device"       ? "cpu"
                              : s.name == "autocast"   ? "bf16"
                              : s.name == "cost_model" ? a_file_that_is_there()  // checked as there, read later
                                                       : "cold");
          for (std::string_view choice : s.choices)  // a fixed choice other than the current one
            if (choice != std::get<std::string>(s.get(o))) {
              other = std::string(choice);
              break;
            }
          break;
      }
      const auto before = settings(o);
      apply_option(o, s.name, other);
      const auto after = settings(o);
      ASSERT_EQ(before.size(), after.size());
      for (std::size_t i = 0; i < before.size(); ++i)
        if (before[i].first == s.name)
          EXPECT_NE(before[i].second, after[i].second) << s.name;
        else
          EXPECT_EQ(before[i], after[i]) << s.name << " changed " << before[i].first;
    }
  };
  check(measure_option_specs(), MeasureOptions{}, [](const MeasureOptions& o) { return settings_of(o); });
  check(predict_option_specs(), predict_preset(kValidateCommand),
        [](const PredictOptions& o) { return settings_of(o); });
  check(compare_option_specs(), CompareOptions{}, [](const CompareOptions& o) { return settings_of(o); });
}

TEST(Options, PredictEnergyIsTheOperatorsAndTheSteps) {
  PredictOptions o = predict_preset(kValidateCommand);
  apply_option(o, "energy", false);
  EXPECT_FALSE(o.op_config.energy);
  EXPECT_FALSE(o.step_config.energy);
  apply_option(o, "energy_max_time", 0.25);
  EXPECT_EQ(o.op_config.energy_max_s, 0.25);
  EXPECT_EQ(o.op_config.time.max_seconds,  // max_time not needed: the preset's stays
            predict_preset(kValidateCommand).op_config.time.max_seconds);
}

TEST(Options, EveryIdentityOptionChangesTheKeyAndNoOtherDoes) {
  const MeasureOptions d;
  const std::string base = settings_key(settings_of(d));
  EXPECT_EQ(base, settings_key(settings_of(MeasureOptions{})));  // stable
  std::size_t identity = 0;
  for (const auto& s : measure_option_specs()) {
    Settings changed = settings_of(d);
    for (auto& [name, value] : changed)
      if (name == s.name) value += "1";
    if (s.identity) {
      ++identity;
      EXPECT_NE(settings_key(changed), base) << s.name;
    } else {
      EXPECT_EQ(settings_key(changed), base) << s.name;
    }
  }
  // seed, both targets, the four budgets, energy, its windows, its graphs and the cold footprint.
  EXPECT_EQ(identity, 11u);
  // A setting order or an unknown name does not move the key.
  Settings reordered = settings_of(d);
  std::reverse(reordered.begin(), reordered.end());
  reordered.emplace_back("not_an_option", "x");
  EXPECT_EQ(settings_key(reordered), base);
}

TEST(Options, SettingsUseCanonicalText) {
  MeasureOptions o;
  apply_option_text(o, "max_time", "0.050");
  apply_option_text(o, "cold_footprint", "64MiB");
  apply_option_text(o, "energy", "false");
  apply_option_text(o, "device", "cuda:0");
  apply_option_text(o, "autocast", "fp16");
  const Settings s = settings_of(o);
  EXPECT_EQ(*find_setting(s, "max_time"), "0.05");
  EXPECT_EQ(*find_setting(s, "cold_footprint"), std::to_string(64 << 20));
  EXPECT_EQ(*find_setting(s, "energy"), "false");
  EXPECT_EQ(*find_setting(s, "device"), "cuda:0");
  EXPECT_EQ(*find_setting(s, "autocast"), "f16");
  EXPECT_EQ(o.config.time.max_seconds, 0.05);
  EXPECT_EQ(o.replay.cold_footprint_bytes, std::size_t(64) << 20);
}

std::string refusal(std::string_view name, const OptionValue& v) {
  MeasureOptions o;
  try {
    apply_option(o, name, v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(Options, BadValuesAreRefusedInOneLineNamingBothSpellings) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(refusal("max_time", -1.0),
            "max_time (--max-time) must be a number above 0 and at most 86400 seconds, not -1");
  EXPECT_EQ(refusal("max_time", nan),
            "max_time (--max-time) must be a finite number above 0 and at most 86400 seconds, not nan");
  EXPECT_NE(refusal("energy_settle", inf).find("energy_settle (--energy-settle) must be a finite number"),
            std::string::npos);
  EXPECT_EQ(refusal("energy_min_windows", std::int64_t(1)),
            "energy_min_windows (--energy-min-windows) must be a whole number from 2 to 100, not 1");
  EXPECT_EQ(refusal("energy_min_windows", 2.5),
            "energy_min_windows (--energy-min-windows) must be a whole number from 2 to 100, not 2.5");
  EXPECT_EQ(refusal("target_ci", std::string("1")), "target_ci (--target-ci) must be a number, not '1'");
  EXPECT_EQ(refusal("energy", 1.0), "energy (--no-energy) must be True or False (true or false), not 1");
  EXPECT_EQ(refusal("device", std::string("gpu")),
            "device (--device): unknown device 'gpu' (use auto, cpu, cuda or cuda:N)");
  EXPECT_NE(refusal("cache", std::string("tepid")).find("cache (--cache): "), std::string::npos);
  EXPECT_NE(refusal("seed", std::int64_t(-1)).find("seed (--seed) must be a whole number from 0"), std::string::npos);
  EXPECT_NE(refusal("no_such", 1.0).find("unknown option 'no_such'"), std::string::npos);
  for (const auto& s : measure_option_specs()) EXPECT_EQ(refusal(s.name, true).find('\n'), std::string::npos);
  // A wrong type is its own kind (Python's TypeError).
  MeasureOptions o;
  EXPECT_THROW(apply_option(o, "max_time", std::string("1")), OptionTypeError);
  // model's target: 0 (not a model) or a share from 0.01.
  PredictOptions p;
  EXPECT_NO_THROW(apply_option(p, "target", 0.0));
  EXPECT_THROW(apply_option(p, "target", 0.001), std::invalid_argument);
  // compare's, from its own registry: an interval needs two rounds.
  CompareOptions c;
  try {
    apply_option(c, "rounds", std::int64_t(1));
    ADD_FAILURE() << "one round passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "rounds (--rounds) must be a whole number from 2 to 1000, not 1");
  }
  c.layer_steps = 0;  // a struct filled in code is refused by its own check, naming the option
  try {
    c.check();
    ADD_FAILURE() << "zero traced steps passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("layer_steps (--layer-steps)"), std::string::npos) << e.what();
  }
}

TEST(Options, TheCommandLinesTextIsReadAndCheckedAlike) {
  const MeasureOptionSpec& max_time = *find_measure_option("max_time");
  EXPECT_EQ(option_text_error(max_time, "0.5"), "");
  EXPECT_EQ(option_text_error(max_time, "-1"), "must be a number above 0 and at most 86400 seconds, not -1");
  EXPECT_EQ(option_text_error(max_time, "1e999"), "must be a finite number above 0 and at most 86400 seconds, not inf");
  EXPECT_NE(option_text_error(max_time, "abc").find("must be a number"), std::string::npos);
  const MeasureOptionSpec& footprint = *find_measure_option("cold_footprint");
  EXPECT_EQ(std::get<std::int64_t>(parse_option_text(footprint, "1GiB")), std::int64_t(1) << 30);
  EXPECT_EQ(std::get<std::int64_t>(parse_option_text(footprint, "4096")), 4096);
  EXPECT_NE(option_text_error(footprint, "12 parsecs"), "");
  EXPECT_NE(option_text_error(footprint, "2TiB"), "");  // past the bound
  EXPECT_THROW(parse_option_text(max_time, "nan"), std::invalid_argument);
}

TEST(Options, CheckOptionsRefusesAStructFilledInCode) {
  MeasureOptions o;
  o.config.energy_max_s = -2;
  try {
    check_options(o);
    FAIL() << "a negative budget passed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("energy_max_time (--energy-max-time)"), std::string::npos);
  }
  PredictOptions p = predict_preset(kValidateCommand);
  p.short_loops_after = 2;
  EXPECT_THROW(check_options(p), std::invalid_argument);
  MeasureConfig c;
  c.time.target_rel_ci95 = 0;
  EXPECT_THROW(check_options(c), std::invalid_argument);
}

}  // namespace
}  // namespace opcost
