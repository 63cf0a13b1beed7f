#include "core/sweep/model_list.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "core/sweep/odometer.h"
#include "core/text/text.h"

namespace opcost {

namespace {

const char* const kKeys[] = {"model", "input", "batch", "seq", "dtype", "autocast", "train"};
// A model is a name or a path; a forward takes a few tensors. Each configuration copies both, so
// they are bounded (a YAML alias could otherwise repeat a long list into every configuration).
constexpr std::size_t kMaxModelBytes = 4096;
constexpr std::size_t kMaxInputs = 64;

// How much of a file's name, and of a YAML library's message, a message echoes.
constexpr std::size_t kMaxOriginChars = 1024;
constexpr std::size_t kMaxLibraryMessageChars = 200;

YAML::Node load(const std::string& yaml, const std::string& origin) {
  try {
    return YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's message quotes the input ("unknown escape character: " and the character).
    throw std::invalid_argument(fmt::format("{}:{}: not YAML: {}", origin, e.mark.line + 1,
                                            printable_one_line(e.msg, kMaxLibraryMessageChars)));
  }
}

// Sets one key of a configuration from a scalar, with the value's type checked.
void set(ModelConfig& c, const std::string& key, const YAML::Node& v, const std::string& at) {
  auto as_int = [&] {
    try {
      const auto i = v.as<int64_t>();
      if (i > 0) return i;
    } catch (const YAML::Exception&) {}
    throw std::invalid_argument(
        fmt::format("{}: {} is a positive integer, not '{}'", at, key, printable_one_line(v.Scalar(), 40)));
  };
  if (key == "batch") {
    c.batch = as_int();
  } else if (key == "seq") {
    c.seq = as_int();
  } else if (key == "dtype") {
    c.dtype = v.Scalar();
    if (c.dtype != "fp32" && c.dtype != "bf16" && c.dtype != "fp16")
      throw std::invalid_argument(
          fmt::format("{}: dtype is fp32, bf16 or fp16, not '{}'", at, printable_one_line(c.dtype, 40)));
  } else if (key == "autocast") {
    c.autocast = v.Scalar();
    if (c.autocast != "bf16" && c.autocast != "fp16")
      throw std::invalid_argument(
          fmt::format("{}: autocast is bf16 or fp16, not '{}'", at, printable_one_line(c.autocast, 40)));
  } else if (key == "train") {
    if (v.Scalar() != "true" && v.Scalar() != "false")
      throw std::invalid_argument(
          fmt::format("{}: train is true or false, not '{}'", at, printable_one_line(v.Scalar(), 40)));
    c.train = v.Scalar() == "true";
  }
}

}  // namespace

bool is_model_list_text(const std::string& yaml) {
  try {
    const YAML::Node root = YAML::Load(yaml);
    return root.IsMap() && root["models"];
  } catch (const YAML::Exception&) {
    return false;
  }
}

namespace {

// The keys of a mapping, each once (YAML keeps a repeated key and a lookup finds the first, so a
// repeated one would be dropped without a word).
std::vector<std::pair<std::string, YAML::Node>> entries(const YAML::Node& map, const std::string& where) {
  std::vector<std::pair<std::string, YAML::Node>> out;
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw std::invalid_argument(fmt::format("{}: a key is a name, not a list or a mapping", where));
    if (!seen.insert(kv.first.Scalar()).second)
      throw std::invalid_argument(fmt::format("{}: '{}' is given twice; keep one (YAML would silently use the first)",
                                              where, printable_one_line(kv.first.Scalar(), 40)));
    out.emplace_back(kv.first.Scalar(), kv.second);
  }
  return out;
}

// One entry of `models`, read but not expanded: its lists are kept as the YAML nodes they are
// (aliases share them), so counting a hostile file's configurations copies nothing.
struct Entry {
  std::string at;     // "m.yaml: models[3]"
  std::string model;  // as written: the labels' start
  ModelConfig base;
  std::vector<std::pair<std::string, YAML::Node>> axes;  // key, and its list (or one value)
  std::uint64_t configurations = 1;
};

Entry read_entry(const YAML::Node& e, const std::string& at, const std::string& base_dir) {
  if (!e.IsMap() || !e["model"] || !e["model"].IsScalar())
    throw std::invalid_argument(fmt::format("{}: each entry is a mapping with a model, e.g. {{model: resnet50}}", at));
  Entry entry{at, e["model"].Scalar(), {}, {}, 1};
  ModelConfig& base = entry.base;
  base.model = entry.model;
  if (base.model.empty() || base.model.size() > kMaxModelBytes)
    throw std::invalid_argument(fmt::format("{}: model is a name or a path of 1 to {} bytes", at, kMaxModelBytes));
  // Python models are inventoried by the Python package, which runs them.
  base.python = base.model.find(':') != std::string::npos && !std::filesystem::exists(base.model);
  if (base.python && base.model.find(".py:") != std::string::npos && !base_dir.empty() &&
      std::filesystem::path(base.model).is_relative())
    base.model = (std::filesystem::path(base_dir) / base.model).string();
  if (base.model.size() > 3 && base.model.substr(base.model.size() - 3) == ".pt" && !base_dir.empty() &&
      std::filesystem::path(base.model).is_relative())
    base.model = (std::filesystem::path(base_dir) / base.model).string();
  // The axes of this entry: every key whose value is a list (input's own list excepted).
  for (const auto& [key, value] : entries(e, at)) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
      throw std::invalid_argument(fmt::format("{}: unknown key '{}' (an entry has {})", at, printable_one_line(key, 40),
                                              "model, input, batch, seq, dtype, autocast and train"));
    if (key == "model") continue;
    if (key == "input") {
      if (value.IsSequence() && value.size() > kMaxInputs)
        throw std::invalid_argument(
            fmt::format("{}: input has {} tensor specs; a forward takes at most {}", at, value.size(), kMaxInputs));
      auto add = [&](const YAML::Node& spec) {
        if (!spec.IsScalar() || spec.Scalar().size() > kMaxModelBytes)
          throw std::invalid_argument(
              fmt::format("{}: input is a tensor spec (f32[1,3,224,224]) or a list of them", at));
        base.inputs.push_back(spec.Scalar());
      };
      if (value.IsSequence())
        for (const auto& spec : value) add(spec);
      else
        add(value);
      continue;
    }
    if (value.IsSequence() && value.size() == 0)
      throw std::invalid_argument(fmt::format("{}: {} is an empty list", at, key));
    entry.configurations = saturating_product(entry.configurations, value.IsSequence() ? value.size() : 1);
    entry.axes.emplace_back(key, value);
  }
  return entry;
}

}  // namespace

ModelList read_model_list_text(const std::string& yaml, const std::string& given_origin, const std::string& base_dir,
                               std::uint64_t max_configs) {
  // The file's name as every message shows it: a path may hold a newline.
  const std::string origin = printable_one_line(given_origin, kMaxOriginChars);
  const YAML::Node root = load(yaml, origin);
  if (!root.IsMap() || !root["models"] || !root["models"].IsSequence() || root["models"].size() == 0)
    throw std::invalid_argument(fmt::format(
        "{}: a model list has `models:`, a list of entries such as {{model: resnet50, batch: [1, 8]}}", origin));
  for (const auto& [key, value] : entries(root, origin))
    if (key != "name" && key != "models")
      throw std::invalid_argument(
          fmt::format("{}: unknown key '{}' (a model list has name and models)", origin, printable_one_line(key, 40)));
  ModelList list;
  if (root["name"] && !root["name"].IsScalar())
    throw std::invalid_argument(fmt::format("{}: name is one word, e.g. name: zoo-ops", origin));
  list.name = root["name"] ? root["name"].Scalar() : std::filesystem::path(given_origin).stem().string();
  check_sweep_name(list.name, origin);
  // Every entry read and its configurations counted before any is made.
  const YAML::Node models = root["models"];
  std::vector<Entry> read;
  std::uint64_t count = 0;
  std::string counts;
  for (std::size_t i = 0; i < models.size(); ++i) {
    read.push_back(read_entry(models[i], fmt::format("{}: models[{}]", origin, i), base_dir));
    count = saturating_sum(count, read.back().configurations);
    if (counts.size() < 200) counts += fmt::format("{}{}", counts.empty() ? "" : " + ", read.back().configurations);
  }
  check_item_count(count, max_configs, origin,
                   fmt::format("model configurations ({} over the entries)", printable_one_line(counts, 200)));
  for (const Entry& entry : read) {
    std::vector<std::size_t> pos(entry.axes.size(), 0), sizes;
    for (const auto& [key, value] : entry.axes) sizes.push_back(value.IsSequence() ? value.size() : 1);
    for (bool more = true; more; more = next_combination(pos, sizes)) {
      ModelConfig c = entry.base;
      c.label = entry.model;
      for (std::size_t a = 0; a < entry.axes.size(); ++a) {
        const auto& [key, value] = entry.axes[a];
        const YAML::Node v = value.IsSequence() ? value[pos[a]] : value;
        if (!v.IsScalar())
          throw std::invalid_argument(
              fmt::format("{}: {}: each value is one word or number, not a list", entry.at, key));
        set(c, key, v, entry.at);
        c.label += fmt::format(" {}={}", key, v.Scalar());
      }
      list.configs.push_back(std::move(c));
    }
  }
  return list;
}

}  // namespace opcost
