#pragma once
// The small expression language of sweep grids: derived axis values ("k // 2"), filters
// ("hw >= 7 * stride and dtype != 'f32'") and the "{...}" templates of operator arguments.
// Python's meaning where it has one: integers stay integers under + - * // % **, `/` gives a
// float, `//` and `%` floor, comparisons do not chain (a < b < c is an error), `and` / `or` / `not`,
// min(...) and max(...). Strings in single or double quotes compare with == and !=. Torch-free.
//
// Where it departs from Python, it refuses rather than answer wrongly: integers are 64-bit, so
// a result outside int64 (2 ** 64, 9223372036854775807 + 1) is an error naming the expression
// (Python's integers have no bound); a float result that is not finite (1e308 * 10) is an error;
// nesting (parentheses, `not`, unary - and +, the right side of **, min/max's arguments) is
// bounded by kMaxExpressionDepth, so hostile input cannot overflow the stack.
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <variant>

namespace opcost {

using ExprValue = std::variant<int64_t, double, bool, std::string>;
using ExprScope = std::map<std::string, ExprValue>;

// Levels of nesting an expression may have; far above what a grid needs ("((k + 1) // 2)" is
// 2), far below what would exhaust a thread's stack.
inline constexpr std::size_t kMaxExpressionDepth = 200;

// A bad expression, or one that cannot be evaluated in its scope: the message names the
// expression (cut when long), the position and the fix.
struct ExpressionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

ExprValue evaluate(const std::string& expression, const ExprScope& scope);
// True or false, or ExpressionError when the value is not a boolean.
bool evaluate_condition(const std::string& expression, const ExprScope& scope);
// As it would be written in a call: 3, 0.5, true, bf16.
std::string to_text(const ExprValue& v);

}  // namespace opcost
