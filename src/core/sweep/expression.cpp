// A recursive-descent parser that evaluates as it parses: grid expressions are short and
// evaluated once per item, so there is no tree to keep.
#include "core/sweep/expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <vector>

namespace opcost {

namespace {

class Evaluator {
 public:
  Evaluator(const std::string& text, const ExprScope& scope) : s_(text), scope_(scope) {}

  ExprValue run() {
    ExprValue v = disjunction();
    skip_space();
    if (i_ < s_.size()) fail(fmt::format("unexpected '{}'", s_.substr(i_, 1)));
    return v;
  }

 private:
  const std::string& s_;
  const ExprScope& scope_;
  std::size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw ExpressionError(fmt::format("expression \"{}\", at character {}: {}", s_, i_ + 1, what));
  }
  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool accept(const std::string& token) {
    skip_space();
    if (s_.compare(i_, token.size(), token) != 0) return false;
    // A keyword must end there: "and" is not the start of "android".
    const bool word = std::isalpha(static_cast<unsigned char>(token[0]));
    const std::size_t end = i_ + token.size();
    if (word && end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    i_ = end;
    return true;
  }
  static bool truth(const ExprValue& v, const Evaluator& at) {
    if (const bool* b = std::get_if<bool>(&v)) return *b;
    at.fail("and / or / not need true or false (a comparison), not a number or string");
  }
  static bool is_number(const ExprValue& v) {
    return std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v);
  }
  static double as_double(const ExprValue& v) {
    return std::holds_alternative<int64_t>(v) ? double(std::get<int64_t>(v)) : std::get<double>(v);
  }

  // `a or b or ...` over conjunctions, `a and b and ...` over negations. Both sides are
  // evaluated (no short circuit), so an error anywhere in a filter always shows.
  ExprValue logical(const char* word, ExprValue (Evaluator::*operand)()) {
    ExprValue v = (this->*operand)();
    const bool is_or = std::string(word) == "or";
    while (accept(word)) {
      const bool left = truth(v, *this);
      const bool right = truth((this->*operand)(), *this);
      v = is_or ? left || right : left && right;
    }
    return v;
  }
  ExprValue disjunction() { return logical("or", &Evaluator::conjunction); }
  ExprValue conjunction() { return logical("and", &Evaluator::negation); }
  ExprValue negation() {
    if (accept("not")) return !truth(negation(), *this);
    return comparison();
  }
  ExprValue comparison() {
    ExprValue left = sum();
    static const char* const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (const char* op : ops) {
      if (!accept(op)) continue;
      ExprValue right = sum();
      const std::string o = op;
      bool result;
      if (is_number(left) && is_number(right)) {
        const double a = as_double(left), b = as_double(right);
        result = o == "=="   ? a == b
                 : o == "!=" ? a != b
                 : o == "<=" ? a <= b
                 : o == ">=" ? a >= b
                 : o == "<"  ? a < b
                             : a > b;
      } else if (left.index() == right.index() && (o == "==" || o == "!=")) {
        result = (left == right) == (o == "==");
      } else {
        fail(fmt::format("cannot compare {} with {} by {}", to_text(left), to_text(right), o));
      }
      for (const char* again : ops)
        if (accept(again)) fail("comparisons do not chain: write a < b and b < c");
      return result;
    }
    return left;
  }
  ExprValue arithmetic(const ExprValue& a, const ExprValue& b, const std::string& op) {
    if (!is_number(a) || !is_number(b))
      fail(fmt::format("{} needs numbers, not {} and {}", op, to_text(a), to_text(b)));
    const bool ints = std::holds_alternative<int64_t>(a) && std::holds_alternative<int64_t>(b);
    if ((op == "/" || op == "//" || op == "%") && as_double(b) == 0) fail("division by zero");
    if (ints && op != "/") {
      const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
      if (op == "+") return x + y;
      if (op == "-") return x - y;
      if (op == "*") return x * y;
      if (op == "//") return int64_t(std::floor(double(x) / double(y)));
      if (op == "%") return x - y * int64_t(std::floor(double(x) / double(y)));
      if (op == "**") {
        if (y < 0) return std::pow(double(x), double(y));
        int64_t r = 1;
        for (int64_t k = 0; k < y; ++k) r *= x;
        return r;
      }
    }
    const double x = as_double(a), y = as_double(b);
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "/") return x / y;
    if (op == "//") return std::floor(x / y);
    if (op == "%") return x - y * std::floor(x / y);
    return std::pow(x, y);
  }
  // One level of left-associative operators, tried in order ("//" before "/"); `next` parses
  // the operands.
  ExprValue left_associative(std::initializer_list<const char*> ops, ExprValue (Evaluator::*next)()) {
    ExprValue v = (this->*next)();
    while (true) {
      const char* const* op = std::find_if(ops.begin(), ops.end(), [&](const char* o) { return accept(o); });
      if (op == ops.end()) return v;
      v = arithmetic(v, (this->*next)(), *op);
    }
  }
  ExprValue sum() { return left_associative({"+", "-"}, &Evaluator::product); }
  // "**" never reaches "*" here: unary() takes it.
  ExprValue product() { return left_associative({"//", "*", "/", "%"}, &Evaluator::unary); }
  ExprValue unary() {
    if (accept("-")) return arithmetic(int64_t(0), unary(), "-");
    if (accept("+")) return unary();
    ExprValue base = atom();
    skip_space();
    if (s_.compare(i_, 2, "**") == 0) {
      i_ += 2;
      return arithmetic(base, unary(), "**");  // right-associative, as Python's
    }
    return base;
  }
  ExprValue atom() {
    skip_space();
    if (i_ >= s_.size()) fail("the expression ends too early");
    const char c = s_[i_];
    if (c == '(') {
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
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      std::size_t used = 0;
      const std::string rest = s_.substr(i_);
      const bool real = rest.find_first_of(".eE") < rest.find_first_not_of("0123456789.eE+-");
      try {
        if (real) {
          const double d = std::stod(rest, &used);
          i_ += used;
          return d;
        }
        const int64_t n = std::stoll(rest, &used);
        i_ += used;
        return n;
      } catch (const std::exception&) {
        fail("not a number");
      }
    }
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
        fail(fmt::format("unknown name '{}' (axes and derived values here: {})", name, known.empty() ? "none" : known));
      }
      return it->second;
    }
    fail(fmt::format("unexpected '{}'", std::string(1, c)));
  }
  ExprValue min_max(const std::string& name) {
    if (!accept("(")) fail(name + " needs arguments: " + name + "(a, b)");
    std::vector<ExprValue> args{disjunction()};
    while (accept(",")) args.push_back(disjunction());
    if (!accept(")")) fail("missing ')'");
    ExprValue best = args[0];
    for (const auto& a : args) {
      if (!is_number(a)) fail(name + " needs numbers, not " + to_text(a));
      if (name == "min" ? as_double(a) < as_double(best) : as_double(a) > as_double(best)) best = a;
    }
    return best;
  }
};

}  // namespace

ExprValue evaluate(const std::string& expression, const ExprScope& scope) { return Evaluator(expression, scope).run(); }

bool evaluate_condition(const std::string& expression, const ExprScope& scope) {
  const ExprValue v = evaluate(expression, scope);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  throw ExpressionError(fmt::format("expression \"{}\" gives {}, not true or false: a filter needs a comparison",
                                    expression, to_text(v)));
}

std::string to_text(const ExprValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  return std::get<std::string>(v);
}

}  // namespace opcost
