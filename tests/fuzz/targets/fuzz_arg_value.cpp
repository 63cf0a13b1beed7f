// The argument language (core/spec/arg_value.h, op_call.h): one value ("f32[2,3]:stride[3,1]",
// "[[1,2],None]"), and the same bytes as a one-line call ("aten::x a=1 [f32[2]]"). What parses
// must print back to text that parses to the same print (format(parse(format(v))) ==
// format(v)); what does not must be refused with ParseError (std::invalid_argument for a
// call) in one line.
#include <fmt/format.h>

#include <string>
#include <string_view>

#include "core/spec/arg_value.h"
#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "fuzz_support.h"

namespace {

void value_round_trip(std::string_view text) {
  opcost::ArgValue v;
  try {
    v = opcost::parse_value(text);
  } catch (const opcost::ParseError& e) {
    opcost::fuzz::check_refusal(e.what());
    return;
  }
  opcost::fuzz::note_accepted();
  const std::string printed = opcost::format_value(v);
  std::string again;
  try {
    again = opcost::format_value(opcost::parse_value(printed));
  } catch (const opcost::ParseError& e) {
    opcost::fuzz::fail(fmt::format("an accepted value prints as '{}', which does not parse: {}", printed, e.what()));
  }
  if (again != printed) opcost::fuzz::fail(fmt::format("'{}' parses and prints back as '{}'", printed, again));
}

void call_round_trip(const std::string& line) {
  opcost::OpCall call;
  try {
    call = opcost::parse_call_line(line, "fuzz");
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::check_refusal(e.what(), "fuzz");
    return;
  }
  // The op name is checked against the schemas later (LibTorch); the arguments' canonical form
  // must read back as itself.
  const std::string args = opcost::format_args(call.args);
  std::string again;
  try {
    again = opcost::format_args(opcost::parse_call_line("aten::x " + args, "again").args);
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::fail(fmt::format("accepted arguments print as '{}', which do not parse: {}", args, e.what()));
  }
  if (again != args) opcost::fuzz::fail(fmt::format("arguments '{}' parse and print back as '{}'", args, again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  value_round_trip(text);
  call_round_trip(text);
  return 0;
}
