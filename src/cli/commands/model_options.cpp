#include "cli/commands/model_options.h"

#include "cli/option_checks.h"

namespace opcost {

void add_model_options(CLI::App& cmd, ModelOptions& m) {
  cmd.add_option("model", m.model, "built-in model (see opcost models) or a TorchScript file")->required();
  cmd.add_option("--input", m.inputs,
                 "TorchScript: one tensor per forward argument, e.g. f32[1,3,224,224] "
                 "or i64[1,128]:range[0,50257]");
  cmd.add_option("--batch", m.in.batch, "batch size (built-in models)")
      ->check(whole_number_between(1, kMaxWholeNumber))
      ->capture_default_str();
  cmd.add_option("--seq", m.in.seq, "tokens per sequence (distilgpt2)")
      ->check(whole_number_between(1, kMaxWholeNumber))
      ->capture_default_str();
  cmd.add_option("--dtype", m.in.dtype, "model dtype: fp32, bf16 or fp16")->capture_default_str();
  cmd.add_option("--device", m.in.device, "auto (CUDA when present), cpu, cuda")->capture_default_str();
  cmd.add_flag(
      "--train", m.in.train,
      "forward, the output's sum as the loss, and backward; backward ops attributed to their forward layer (the "
      "sum gives every sample the same gradient: the backward's energy reads below a real loss's, "
      "docs/energy-method.md)");
  cmd.add_option("--autocast", m.in.autocast, "run the fp32 model under autocast to bf16 or fp16");
}

}  // namespace opcost
