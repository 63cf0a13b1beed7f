#pragma once
// An operator call as a user writes it: `aten::conv2d input=f32[...] padding=[1,1]`, from the
// command line or a spec file. Torch-free; the adapter binds it to the operator's schema.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/arg_value.h"
// A call's key (stable_hash, signature_hash) is its canonical signature's: callers of this header key by it.
#include "core/spec/signature.h"

namespace opcost {

struct NamedArg {
  std::string name;  // empty for a positional argument
  ArgValue value;
};

struct OpCall {
  std::string op;        // qualified name, e.g. "aten::conv2d"
  std::string overload;  // "" for the default overload
  std::vector<NamedArg> args;
  std::string origin;    // where it came from, for error messages ("spec.yaml:12")
  std::string autocast;  // "" or the autocast dtype the call ran under (an inventory's)
  // "" or "cold:<arg>,<arg>": the inputs an inventory found read from memory, to be rotated.
  std::string cache_mode;

  // "aten::add.Tensor" style display name.
  std::string display_name() const { return overload.empty() ? op : op + "." + overload; }
};

// Splits "aten::add.Tensor" or "add.Tensor" into ("aten::add", "Tensor"). A name without a
// namespace is taken to be in aten.
std::pair<std::string, std::string> split_op_name(std::string_view name);

// std::invalid_argument unless `op_name` could name an operator: 1 to 256 bytes of letters,
// digits, '_', ':' and '.' (a newline would make a message, a row or a job script two lines; a
// '[' or a space would read back as an argument).
void check_op_name(std::string_view op_name);

// Parses `name=value` (or positional `value`) tokens, after check_op_name. Errors name the token.
OpCall parse_call(std::string_view op_name, const std::vector<std::string>& tokens);

// Canonical argument signature: `name=value` pairs joined by a space, in the order given.
std::string format_args(const std::vector<NamedArg>& args);

}  // namespace opcost
