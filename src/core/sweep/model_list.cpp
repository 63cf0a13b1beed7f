#include "core/sweep/model_list.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "core/sweep/odometer.h"

namespace opcost {

namespace {

const char* const kKeys[] = {"model", "input", "batch", "seq", "dtype", "autocast", "train"};

YAML::Node load(const std::string& yaml, const std::string& origin) {
  try {
    return YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(fmt::format("{}:{}: not YAML: {}", origin, e.mark.line + 1, e.msg));
  }
}

// Sets one key of a configuration from a scalar, with the value's type checked.
void set(ModelConfig& c, const std::string& key, const YAML::Node& v, const std::string& at) {
  auto as_int = [&] {
    try {
      const auto i = v.as<int64_t>();
      if (i > 0) return i;
    } catch (const YAML::Exception&) {}
    throw std::invalid_argument(fmt::format("{}: {} is a positive integer, not '{}'", at, key, v.Scalar()));
  };
  if (key == "batch") {
    c.batch = as_int();
  } else if (key == "seq") {
    c.seq = as_int();
  } else if (key == "dtype") {
    c.dtype = v.Scalar();
    if (c.dtype != "fp32" && c.dtype != "bf16" && c.dtype != "fp16")
      throw std::invalid_argument(fmt::format("{}: dtype is fp32, bf16 or fp16, not '{}'", at, c.dtype));
  } else if (key == "autocast") {
    c.autocast = v.Scalar();
    if (c.autocast != "bf16" && c.autocast != "fp16")
      throw std::invalid_argument(fmt::format("{}: autocast is bf16 or fp16, not '{}'", at, c.autocast));
  } else if (key == "train") {
    if (v.Scalar() != "true" && v.Scalar() != "false")
      throw std::invalid_argument(fmt::format("{}: train is true or false, not '{}'", at, v.Scalar()));
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

ModelList read_model_list_text(const std::string& yaml, const std::string& origin, const std::string& base_dir) {
  const YAML::Node root = load(yaml, origin);
  if (!root.IsMap() || !root["models"] || !root["models"].IsSequence() || root["models"].size() == 0)
    throw std::invalid_argument(fmt::format(
        "{}: a model list has `models:`, a list of entries such as {{model: resnet50, batch: [1, 8]}}", origin));
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (key != "name" && key != "models")
      throw std::invalid_argument(fmt::format("{}: unknown key '{}' (a model list has name and models)", origin, key));
  }
  ModelList list;
  list.name = root["name"] ? root["name"].as<std::string>() : std::filesystem::path(origin).stem().string();
  const YAML::Node models = root["models"];
  for (std::size_t i = 0; i < models.size(); ++i) {
    const YAML::Node e = models[i];
    const std::string at = fmt::format("{}: models[{}]", origin, i);
    if (!e.IsMap() || !e["model"] || !e["model"].IsScalar())
      throw std::invalid_argument(
          fmt::format("{}: each entry is a mapping with a model, e.g. {{model: resnet50}}", at));
    ModelConfig base;
    base.model = e["model"].Scalar();
    // Python models are inventoried by the Python package, which runs them.
    base.python = base.model.find(':') != std::string::npos && !std::filesystem::exists(base.model);
    if (base.python && base.model.find(".py:") != std::string::npos && !base_dir.empty() &&
        std::filesystem::path(base.model).is_relative())
      base.model = (std::filesystem::path(base_dir) / base.model).string();
    if (base.model.size() > 3 && base.model.substr(base.model.size() - 3) == ".pt" && !base_dir.empty() &&
        std::filesystem::path(base.model).is_relative())
      base.model = (std::filesystem::path(base_dir) / base.model).string();
    // The axes of this entry: every key whose value is a list (input's own list excepted).
    std::vector<std::pair<std::string, std::vector<YAML::Node>>> axes;
    for (const auto& kv : e) {
      const auto key = kv.first.as<std::string>();
      if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys))
        throw std::invalid_argument(fmt::format("{}: unknown key '{}' (an entry has {})", at, key,
                                                "model, input, batch, seq, dtype, autocast and train"));
      if (key == "model") continue;
      if (key == "input") {
        const YAML::Node v = kv.second;
        if (v.IsScalar())
          base.inputs = {v.Scalar()};
        else
          for (const auto& s : v) base.inputs.push_back(s.Scalar());
        continue;
      }
      std::vector<YAML::Node> values;
      if (kv.second.IsSequence()) {
        if (kv.second.size() == 0) throw std::invalid_argument(fmt::format("{}: {} is an empty list", at, key));
        for (const auto& v : kv.second) values.push_back(v);
      } else {
        values.push_back(kv.second);
      }
      axes.emplace_back(key, std::move(values));
    }
    std::vector<std::size_t> pos(axes.size(), 0), sizes;
    for (const auto& a : axes) sizes.push_back(a.second.size());
    for (bool more = true; more;) {
      ModelConfig c = base;
      c.label = e["model"].Scalar();
      for (std::size_t a = 0; a < axes.size(); ++a) {
        set(c, axes[a].first, axes[a].second[pos[a]], at);
        c.label += fmt::format(" {}={}", axes[a].first, axes[a].second[pos[a]].Scalar());
      }
      list.configs.push_back(std::move(c));
      more = next_combination(pos, sizes);
    }
  }
  return list;
}

}  // namespace opcost
