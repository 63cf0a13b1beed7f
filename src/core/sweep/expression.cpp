// A recursive-descent parser that evaluates as it parses: grid expressions are short and
// evaluated once per item, so there is no tree to keep. Every input is hostile: integer
// arithmetic is checked (a wrapped number would be a wrong item, silently), exponentiation
// squares (a loop of y multiplications made 10 ** 10 ** 10 take half a minute), nesting is
// counted (each level is a dozen stack frames), and what a message echoes is cut.
#include "core/sweep/expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "core/text/text.h"

namespace opcost {

namespace {

constexpr const char* kInt64Rule =
    "grid integers are 64-bit (-9223372036854775808 to 9223372036854775807), unlike Python's; use smaller values, "
    "or a float (2.0 ** 64)";

// User text as a message echoes it: one line, cut (core/text: a 10 MB expression must not make
// 10 MB of standard error).
std::string echo(std::string_view text, std::size_t max_bytes) { return printable_one_line(text, max_bytes); }

// A value as a message shows it: numbers are short, a string (an axis value) may be anything.
std::string shown(const ExprValue& v) { return echo(to_text(v), 60); }

bool is_number(const ExprValue& v) { return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v); }

double as_double(const ExprValue& v) {
  return std::holds_alternative<int64_t>(v) ? double(std::get<int64_t>(v)) : std::get<double>(v);
}

template <typename T>
int three_way(T a, T b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// An integer against a float, exactly: converting the integer to double would round above 2^53
// (9007199254740993 == 9007199254740992.0 would hold). nullopt: the float is NaN (unordered).
std::optional<int> compare_int_double(int64_t i, double d) {
  if (std::isnan(d)) return std::nullopt;
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63) return -1;
  if (d < -kTwo63) return 1;
  const double whole = std::trunc(d);
  const auto t = static_cast<int64_t>(whole);  // exact: |whole| < 2^63
  if (i != t) return i < t ? -1 : 1;
  return three_way(0.0, d - whole);  // i == trunc(d): the fraction decides
}

// -1, 0 or 1 as a <, ==, > b; nullopt when unordered (NaN).
std::optional<int> compare_numbers(const ExprValue& a, const ExprValue& b) {
  const auto* ia = std::get_if<int64_t>(&a);
  const auto* ib = std::get_if<int64_t>(&b);
  if (ia && ib) return three_way(*ia, *ib);
  if (ia) return compare_int_double(*ia, std::get<double>(b));
  if (ib) {
    const auto c = compare_int_double(*ib, std::get<double>(a));
    return c ? std::optional<int>(-*c) : std::nullopt;
  }
  const double x = std::get<double>(a), y = std::get<double>(b);
  if (std::isnan(x) || std::isnan(y)) return std::nullopt;
  return three_way(x, y);
}

// base ** exp for exp >= 0 by squaring: at most 63 squarings before any |base| >= 2 overflows.
// False when the result does not fit in int64.
bool checked_power(int64_t base, int64_t exp, int64_t& out) {
  if (base == 0 || base == 1) {
    out = exp == 0 ? 1 : base;
    return true;
  }
  if (base == -1) {
    out = exp % 2 ? -1 : 1;
    return true;
  }
  int64_t result = 1;
  while (true) {
    if ((exp & 1) && __builtin_mul_overflow(result, base, &result)) return false;
    exp >>= 1;
    if (exp == 0) break;
    // More factors follow, each at least base²: if base² overflows, so does the result.
    if (__builtin_mul_overflow(base, base, &base)) return false;
  }
  out = result;
  return true;
}

class Evaluator {
 public:
  Evaluator(const std::string& text, const ExprScope& scope) : s_(text), scope_(scope) {}

  ExprValue run() {
    ExprValue v = disjunction();
    skip_space();
    if (i_ < s_.size())
      fail(s_[i_] == '=' ? "unexpected '=': compare with =="
                         : fmt::format("unexpected '{}'", echo(s_.substr(i_, 1), 1)));
    return v;
  }

 private:
  const std::string& s_;
  const ExprScope& scope_;
  std::size_t i_ = 0;
  std::size_t depth_ = 0;

  // One level of nesting for as long as it lives; refused past kMaxExpressionDepth.
  class Nested {
   public:
    explicit Nested(Evaluator& e) : e_(e) {
      if (++e_.depth_ > kMaxExpressionDepth)
        e_.fail(
            fmt::format("nested more than {} levels deep (parentheses, not, unary - or +, **, min/max); the "
                        "limit is {}: write it with fewer levels",
                        kMaxExpressionDepth, kMaxExpressionDepth));
    }
    ~Nested() { --e_.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Evaluator& e_;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw ExpressionError(fmt::format("expression \"{}\", at character {}: {}", echo(s_, 80), i_ + 1, what));
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool accept(std::string_view token) {
    skip_space();
    if (s_.compare(i_, token.size(), token) != 0) return false;
    // A keyword must end there: "and" is not the start of "android".
    const bool word = std::isalpha(static_cast<unsigned char>(token[0]));
    const std::size_t end = i_ + token.size();
    if (word && end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    i_ = end;
    return true;
  }
  bool truth(const ExprValue& v) const {
    if (const bool* b = std::get_if<bool>(&v)) return *b;
    fail("and / or / not need true or false (a comparison), not a number or string");
  }

  // `a or b or ...` over conjunctions, `a and b and ...` over negations. Both sides are
  // evaluated (no short circuit), so an error anywhere in a filter always shows.
  ExprValue logical(std::string_view word, ExprValue (Evaluator::*operand)()) {
    ExprValue v = (this->*operand)();
    const bool is_or = word == "or";
    while (accept(word)) {
      const bool left = truth(v);
      const bool right = truth((this->*operand)());
      v = is_or ? left || right : left && right;
    }
    return v;
  }
  ExprValue disjunction() { return logical("or", &Evaluator::conjunction); }
  ExprValue conjunction() { return logical("and", &Evaluator::negation); }
  ExprValue negation() {
    if (accept("not")) {
      Nested nested(*this);
      return !truth(negation());
    }
    return comparison();
  }
  ExprValue comparison() {
    ExprValue left = sum();
    static constexpr std::string_view ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (const std::string_view o : ops) {
      if (!accept(o)) continue;
      ExprValue right = sum();
      bool result;
      if (is_number(left) && is_number(right)) {
        const std::optional<int> c = compare_numbers(left, right);
        result = !c          ? o == "!="  // NaN: unordered, so only != holds
                 : o == "==" ? *c == 0
                 : o == "!=" ? *c != 0
                 : o == "<=" ? *c <= 0
                 : o == ">=" ? *c >= 0
                 : o == "<"  ? *c < 0
                             : *c > 0;
      } else if (left.index() == right.index() && (o == "==" || o == "!=")) {
        result = (left == right) == (o == "==");
      } else {
        fail(fmt::format("cannot compare {} with {} by {}", shown(left), shown(right), o));
      }
      for (const std::string_view again : ops)
        if (accept(again)) fail("comparisons do not chain: write a < b and b < c");
      return result;
    }
    return left;
  }
  [[noreturn]] void int_overflow(int64_t x, std::string_view op, int64_t y) const {
    fail(fmt::format("{} {} {} does not fit in a 64-bit integer: {}", x, op, y, kInt64Rule));
  }
  ExprValue int_arithmetic(int64_t x, int64_t y, std::string_view op) {
    int64_t r = 0;
    bool over = false;
    if (op == "+") {
      over = __builtin_add_overflow(x, y, &r);
    } else if (op == "-") {
      over = __builtin_sub_overflow(x, y, &r);
    } else if (op == "*") {
      over = __builtin_mul_overflow(x, y, &r);
    } else if (op == "//") {
      if (y == 0) fail("division by zero");
      over = x == INT64_MIN && y == -1;
      if (!over) r = x / y - ((x % y != 0) && ((x < 0) != (y < 0)) ? 1 : 0);  // floor, as Python's
    } else if (op == "%") {
      if (y == 0) fail("division by zero");
      r = y == -1 ? 0 : x % y;                     // INT64_MIN % -1 is undefined in C++; every n % -1 is 0
      if (r != 0 && ((r < 0) != (y < 0))) r += y;  // the sign of the divisor, as Python's
    } else {                                       // "**"
      if (y < 0) return float_arithmetic(double(x), double(y), op, x, y);  // Python: 2 ** -1 == 0.5
      over = !checked_power(x, y, r);
    }
    if (over) int_overflow(x, op, y);
    return r;
  }
  ExprValue float_arithmetic(double x, double y, std::string_view op, const ExprValue& a, const ExprValue& b) {
    if ((op == "/" || op == "//" || op == "%") && y == 0) fail("division by zero");
    if (op == "**" && x == 0 && y < 0) fail("division by zero (0 to a negative power)");
    const double r = op == "+"    ? x + y
                     : op == "-"  ? x - y
                     : op == "*"  ? x * y
                     : op == "/"  ? x / y
                     : op == "//" ? std::floor(x / y)
                     : op == "%"  ? x - y * std::floor(x / y)
                                  : std::pow(x, y);
    if (!std::isfinite(r))
      fail(fmt::format("{} {} {} is {}: {}", shown(a), op, shown(b), r,
                       std::isnan(r) ? "not a real number" : "beyond a 64-bit float; use smaller values"));
    return r;
  }
  ExprValue arithmetic(const ExprValue& a, const ExprValue& b, std::string_view op) {
    if (!is_number(a) || !is_number(b)) fail(fmt::format("{} needs numbers, not {} and {}", op, shown(a), shown(b)));
    if (std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b) && op != "/")
      return int_arithmetic(std::get<int64_t>(a), std::get<int64_t>(b), op);
    return float_arithmetic(as_double(a), as_double(b), op, a, b);
  }
  // One level of left-associative operators, tried in order ("//" before "/"); `next` parses
  // the operands. A loop, not recursion: 1 + 1 + ... is as deep as 1.
  ExprValue left_associative(std::initializer_list<std::string_view> ops, ExprValue (Evaluator::*next)()) {
    ExprValue v = (this->*next)();
    while (true) {
      const auto* op = std::find_if(ops.begin(), ops.end(), [&](std::string_view o) { return accept(o); });
      if (op == ops.end()) return v;
      v = arithmetic(v, (this->*next)(), *op);
    }
  }
  ExprValue sum() { return left_associative({"+", "-"}, &Evaluator::product); }
  // "**" never reaches "*" here: unary() takes it.
  ExprValue product() { return left_associative({"//", "*", "/", "%"}, &Evaluator::unary); }
  ExprValue unary() {
    if (accept("-")) {
      Nested nested(*this);
      const ExprValue v = unary();
      if (const auto* n = std::get_if<int64_t>(&v)) {
        if (*n == INT64_MIN) fail(fmt::format("-({}) does not fit in a 64-bit integer: {}", *n, kInt64Rule));
        return -*n;
      }
      if (const auto* d = std::get_if<double>(&v)) return -*d;
      fail(fmt::format("- needs a number, not {}", shown(v)));
    }
    if (accept("+")) {
      Nested nested(*this);
      const ExprValue v = unary();
      if (!is_number(v)) fail(fmt::format("+ needs a number, not {}", shown(v)));
      return v;
    }
    ExprValue base = atom();
    skip_space();
    if (s_.compare(i_, 2, "**") == 0) {
      i_ += 2;
      Nested nested(*this);
      return arithmetic(base, unary(), "**");  // right-associative, as Python's
    }
    return base;
  }
  ExprValue number() {
    const std::size_t start = i_;
    auto digits = [&] {
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    };
    digits();
    bool real = false;
    if (i_ < s_.size() && s_[i_] == '.') {
      real = true;
      ++i_;
      digits();
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      std::size_t j = i_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (j < s_.size() && std::isdigit(static_cast<unsigned char>(s_[j]))) {
        real = true;
        i_ = j;
        digits();
      }
    }
    const std::string token = s_.substr(start, i_ - start);
    const std::size_t end = i_;
    i_ = start;  // errors point at the number's start
    if (real) {
      char* stop = nullptr;
      const double d = std::strtod(token.c_str(), &stop);
      if (token == "." || stop != token.c_str() + token.size()) fail("not a number");
      if (!std::isfinite(d)) fail(fmt::format("{} is beyond a 64-bit float", echo(token, 40)));
      i_ = end;
      return d;
    }
    int64_t n = 0;
    const auto [stop, ec] = std::from_chars(token.data(), token.data() + token.size(), n);
    if (ec == std::errc::result_out_of_range)
      fail(fmt::format("{} does not fit in a 64-bit integer: {}", echo(token, 40), kInt64Rule));
    if (ec != std::errc() || stop != token.data() + token.size()) fail("not a number");
    i_ = end;
    return n;
  }
  ExprValue atom() {
    skip_space();
    if (i_ >= s_.size()) fail("the expression ends too early");
    const char c = s_[i_];
    if (c == '(') {
      Nested nested(*this);
      ++i_;
      ExprValue v = disjunction();
      if (!accept(")")) fail("missing ')'");
      return v;
    }
    if (c == '\'' || c == '"') {
      const std::size_t end = s_.find(c, i_ + 1);
      if (end == std::string::npos) fail("the string has no closing quote");
      std::string text = s_.substr(i_ + 1, end - i_ - 1);
      i_ = end + 1;
      return text;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = i_;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
      const std::string name = s_.substr(start, i_ - start);
      if (name == "true" || name == "True") return true;
      if (name == "false" || name == "False") return false;
      if (name == "min" || name == "max") return min_max(name);
      const auto it = scope_.find(name);
      if (it == scope_.end()) {
        std::string known;
        for (const auto& [k, v] : scope_) known += (known.empty() ? "" : ", ") + k;
        i_ = start;
        fail(fmt::format("unknown name '{}' (axes and derived values here: {})", echo(name, 60),
                         known.empty() ? "none" : echo(known, 200)));
      }
      return it->second;
    }
    fail(fmt::format("unexpected '{}'", echo(std::string_view(&s_[i_], 1), 1)));
  }
  // min(a, b, ...) / max(a, b, ...): the first of the least (greatest), as Python's, folded as
  // it parses (a million arguments take no list).
  ExprValue min_max(const std::string& name) {
    if (!accept("(")) fail(name + " needs arguments: " + name + "(a, b)");
    Nested nested(*this);
    ExprValue best;
    bool first = true;
    do {
      const ExprValue a = disjunction();
      if (!is_number(a)) fail(fmt::format("{} needs numbers, not {}", name, shown(a)));
      const std::optional<int> c = first ? std::nullopt : compare_numbers(a, best);
      if (first || (c && (name == "min" ? *c < 0 : *c > 0))) best = a;
      first = false;
    } while (accept(","));
    if (!accept(")")) fail("missing ')'");
    return best;
  }
};

}  // namespace

ExprValue evaluate(const std::string& expression, const ExprScope& scope) { return Evaluator(expression, scope).run(); }

bool evaluate_condition(const std::string& expression, const ExprScope& scope) {
  const ExprValue v = evaluate(expression, scope);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  throw ExpressionError(fmt::format("expression \"{}\" gives {}, not true or false: a filter needs a comparison",
                                    echo(expression, 80), shown(v)));
}

std::string to_text(const ExprValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

}  // namespace opcost
