#include "core/spec/signature.h"

#include <fmt/format.h>

#include <cstdint>

#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"

namespace opcost {

std::string to_string(const Signature& signature) {
  return signature.args.empty() ? signature.display_name() : signature.display_name() + " " + signature.args;
}

Signature parse_signature(std::string_view text) {
  const std::size_t space = text.find(' ');
  const std::string_view name = text.substr(0, space);
  const std::string args(space == std::string_view::npos ? std::string_view() : text.substr(space + 1));
  // parse_call checks the name (bounded, one line) and names the token that does not parse.
  const OpCall call = parse_call(name, split_call_line(args));
  return {call.op, call.overload, format_args(call.args)};
}

std::string identity_key_text(const Signature& signature) {
  return fmt::format("{}.{} {}", signature.op, signature.overload, signature.args);
}

std::string stable_hash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", h);
}

std::string signature_hash(const Signature& signature) { return stable_hash(identity_key_text(signature)); }

std::string signature_hash(std::string_view op, std::string_view overload, std::string_view canonical_args) {
  return signature_hash(Signature{std::string(op), std::string(overload), std::string(canonical_args)});
}

}  // namespace opcost
