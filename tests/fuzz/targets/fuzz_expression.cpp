// The grid expression language (core/sweep/expression.h) in a scope like a grid item's. A bad
// expression is refused with ExpressionError in one line; one that evaluates gives the same
// value in parentheses (the parser's levels agree with each other) unless that passes the
// nesting limit.
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/sweep/expression.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const opcost::ExprScope scope = {{"batch", int64_t{8}},
                                          {"hw", int64_t{56}},
                                          {"k", int64_t{3}},
                                          {"stride", int64_t{2}},
                                          {"x", 0.5},
                                          {"dtype", std::string("f32")},
                                          {"flag", true},
                                          {"big", std::numeric_limits<int64_t>::max()}};
  const std::string text(reinterpret_cast<const char*>(data), size);
  opcost::ExprValue value;
  try {
    value = opcost::evaluate(text, scope);
  } catch (const opcost::ExpressionError& e) {
    opcost::fuzz::check_refusal(e.what());
    return 0;
  }
  opcost::fuzz::note_accepted();
  // One more level cannot pass the nesting limit when the text is shorter than the limit.
  if (text.size() + 1 < opcost::kMaxExpressionDepth) {
    std::string again;
    try {
      again = opcost::to_text(opcost::evaluate("(" + text + ")", scope));
    } catch (const opcost::ExpressionError& e) {
      opcost::fuzz::fail(fmt::format("an expression that evaluates fails in parentheses: {}", e.what()));
    }
    if (again != opcost::to_text(value))
      opcost::fuzz::fail(fmt::format("an expression gives {}, and {} in parentheses", opcost::to_text(value), again));
  }
  try {
    opcost::evaluate_condition(text, scope);
  } catch (const opcost::ExpressionError& e) {  // a value that is not true or false
    opcost::fuzz::check_refusal(e.what());
  }
  return 0;
}
