#include "core/compare/variant_spec.h"

#include <fmt/format.h>

#include <set>
#include <stdexcept>

#include "core/text/text.h"

namespace opcost {

namespace {

constexpr std::size_t kMaxVariantText = 200, kMaxVariants = 32;

// torch.compile's modes (torch/_inductor/list_mode_options); anything else is refused here
// rather than deep inside torch.compile.
const std::set<std::string, std::less<>> kCompileModes = {"default", "reduce-overhead", "max-autotune",
                                                          "max-autotune-no-cudagraphs"};

std::vector<std::string> split(std::string_view text, char by) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(by, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

std::string known_variant_names() {
  return "fp32, bf16, fp16, autocast-bf16, autocast-fp16, channels_last, compile, compile:MODE (MODE: default, "
         "reduce-overhead, max-autotune, max-autotune-no-cudagraphs), int8; joined with + (bf16+channels_last)";
}

VariantSpec parse_variant(std::string_view text) {
  if (text.size() > kMaxVariantText)
    throw std::invalid_argument(fmt::format("variant name of {} characters: at most {}", text.size(), kMaxVariantText));
  VariantSpec v;
  v.name = std::string(text);
  std::vector<std::string> said;
  bool dtype_given = false;
  for (const std::string& part : split(text, '+')) {
    auto refuse = [&](const std::string& why) {
      return std::invalid_argument(fmt::format("variant '{}': {}", printable_one_line(text), why));
    };
    if (part == "fp32" || part == "bf16" || part == "fp16") {
      if (dtype_given || !v.autocast.empty()) throw refuse(fmt::format("'{}' is a second dtype; give one", part));
      dtype_given = true;
      v.dtype = part;
      if (part != "fp32")
        said.push_back(fmt::format("weights and floating inputs in {}", part == "bf16" ? "bfloat16" : "float16"));
    } else if (part == "autocast-bf16" || part == "autocast-fp16") {
      if (!v.autocast.empty() || (dtype_given && v.dtype != "fp32"))
        throw refuse(fmt::format("'{}' autocasts an fp32 model; drop the other dtype", part));
      v.autocast = part.substr(9);
      said.push_back(
          fmt::format("fp32 weights run under autocast to {}", v.autocast == "bf16" ? "bfloat16" : "float16"));
    } else if (part == "channels_last") {
      if (v.channels_last) throw refuse("channels_last is given twice");
      v.channels_last = true;
      said.push_back("weights and input in channels-last order (NHWC)");
    } else if (part == "compile" || part.rfind("compile:", 0) == 0) {
      if (v.compile) throw refuse("compile is given twice");
      v.compile = true;
      if (part.size() > 8) {
        v.compile_mode = part.substr(8);
        if (!kCompileModes.count(v.compile_mode))
          throw refuse(
              fmt::format("'{}' is not a torch.compile mode (default, reduce-overhead, max-autotune, "
                          "max-autotune-no-cudagraphs)",
                          printable_one_line(v.compile_mode)));
      }
      said.push_back(v.compile_mode.empty() ? "torch.compile(model)"
                                            : fmt::format("torch.compile(model, mode=\"{}\")", v.compile_mode));
    } else if (part == "int8") {
      if (v.int8) throw refuse("int8 is given twice");
      v.int8 = true;
      said.push_back("nn.Linear layers quantised to int8 (dynamic, per-tensor activations)");
    } else {
      throw refuse(fmt::format("'{}' is not a variant; use {}", printable_one_line(part), known_variant_names()));
    }
  }
  if (v.int8 && (v.dtype != "fp32" || !v.autocast.empty()))
    throw std::invalid_argument(
        fmt::format("variant '{}': int8 quantises an fp32 model; drop the dtype", printable_one_line(text)));
  v.description = said.empty() ? "the model as given (fp32)" : "";
  for (const auto& s : said) v.description += (v.description.empty() ? "" : "; ") + s;
  return v;
}

std::vector<VariantSpec> parse_variant_list(std::string_view text) {
  std::vector<VariantSpec> out;
  std::set<std::string> seen;
  for (const std::string& name : split(text, ',')) {
    if (name.empty())
      throw std::invalid_argument(
          fmt::format("--variants '{}': an empty name; separate names with one comma", printable_one_line(text)));
    if (out.size() == kMaxVariants)
      throw std::invalid_argument(fmt::format("--variants: more than {} variants", kMaxVariants));
    if (!seen.insert(name).second)
      throw std::invalid_argument(
          fmt::format("--variants: '{}' is given twice; name each once", printable_one_line(name)));
    out.push_back(parse_variant(name));
  }
  if (out.size() < 2)
    throw std::invalid_argument(fmt::format("--variants '{}': give at least two, the first the baseline (fp32,bf16)",
                                            printable_one_line(text)));
  return out;
}

}  // namespace opcost
