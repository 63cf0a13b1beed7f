#include "core/spec/op_call.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "core/text/text.h"

namespace opcost {

std::pair<std::string, std::string> split_op_name(std::string_view name) {
  std::string full(name);
  if (full.find("::") == std::string::npos) full = "aten::" + full;
  const auto ns_end = full.find("::") + 2;
  const auto dot = full.find('.', ns_end);
  if (dot == std::string::npos) return {full, ""};
  return {full.substr(0, dot), full.substr(dot + 1)};
}

namespace {
// Far above any real operator ("aten::_scaled_dot_product_flash_attention_backward.default").
constexpr std::size_t kMaxOpNameBytes = 256;
}  // namespace

void check_op_name(std::string_view op_name) {
  // An operator is ns::name.overload, identifiers all. Anything else refused here cannot reach a
  // later message, a database row or a job script: a newline, kilobytes, or a '[' or a space
  // that would read as the start of an argument when the call is written out and read back.
  const bool word = std::all_of(op_name.begin(), op_name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '.';
  });
  if (op_name.empty() || !word || op_name.size() > kMaxOpNameBytes)
    throw std::invalid_argument(
        fmt::format("'{}' is not an operator name: letters, digits, _, :: and . (at most {} bytes), such as "
                    "aten::conv2d or aten::add.Tensor",
                    printable_one_line(op_name, 60), kMaxOpNameBytes));
}

OpCall parse_call(std::string_view op_name, const std::vector<std::string>& tokens) {
  check_op_name(op_name);
  OpCall call;
  std::tie(call.op, call.overload) = split_op_name(op_name);
  for (const auto& tok : tokens) {
    NamedArg a;
    std::string_view text = tok;
    const auto eq = tok.find('=');
    // A name is an identifier before '='; anything else is a positional value.
    if (eq != std::string::npos && eq > 0) {
      bool ident = std::isalpha(static_cast<unsigned char>(tok[0])) || tok[0] == '_';
      for (std::size_t i = 0; i < eq && ident; ++i)
        ident = std::isalnum(static_cast<unsigned char>(tok[i])) || tok[i] == '_';
      if (ident) {
        a.name = tok.substr(0, eq);
        text = std::string_view(tok).substr(eq + 1);
      }
    }
    try {
      a.value = parse_value(text);
    } catch (const ParseError& e) {
      throw std::invalid_argument(fmt::format("{}: argument '{}': {}", printable_one_line(call.display_name()),
                                              printable_one_line(a.name.empty() ? tok : a.name, 40), e.what()));
    }
    call.args.push_back(std::move(a));
  }
  return call;
}

std::string format_args(const std::vector<NamedArg>& args) {
  std::string out;
  for (const auto& a : args) {
    if (!out.empty()) out += ' ';
    if (!a.name.empty()) out += a.name + "=";
    out += format_value(a.value);
  }
  return out;
}

}  // namespace opcost
