#pragma once
// The built-in variants compare knows by name, shared by the command line and Python: "fp32",
// "bf16", "fp16", "autocast-bf16", "autocast-fp16", "channels_last", "compile" (or
// "compile:MODE", torch.compile's mode), "int8", and '+' combinations of a dtype or autocast
// with the others ("bf16+channels_last", "channels_last+compile"). Torch-free.
#include <string>
#include <string_view>
#include <vector>

namespace opcost {

struct VariantSpec {
  std::string name;            // as given, canonical ("bf16+channels_last")
  std::string dtype = "fp32";  // fp32 | bf16 | fp16: the weights' and floating inputs' dtype
  std::string autocast;        // "" | bf16 | fp16: an fp32 model run under autocast
  bool channels_last = false;
  bool compile = false;      // torch.compile (Python only)
  std::string compile_mode;  // "" (default), "reduce-overhead", "max-autotune", ...
  bool int8 = false;         // linears quantised to int8 (Python only; see docs/compare.md)
  std::string description;   // one line: what the variant does to the model
  bool python_only() const { return compile || int8; }
};

// Throws std::invalid_argument naming the text, the part at fault and the names that fit.
VariantSpec parse_variant(std::string_view text);
// A comma-separated list ("fp32,bf16,compile"); at least two, each once.
std::vector<VariantSpec> parse_variant_list(std::string_view text);
// The names parse_variant knows, for help texts.
std::string known_variant_names();

}  // namespace opcost
