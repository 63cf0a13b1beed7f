#include "core/spec/arg_value.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <type_traits>

#include "core/text/text.h"

namespace opcost {

const std::vector<DtypeName>& dtype_names() {
  static const std::vector<DtypeName> names = {
      {"f64", "float64", {"float64", "double", "fp64"}, 8},
      {"f32", "float32", {"float32", "float", "fp32"}, 4},
      {"f16", "float16", {"float16", "half", "fp16"}, 2},
      {"bf16", "bfloat16", {"bfloat16"}, 2},
      {"i64", "int64", {"int64", "long"}, 8},
      {"i32", "int32", {"int32", "int"}, 4},
      {"i16", "int16", {"int16", "short"}, 2},
      {"i8", "int8", {"int8"}, 1},
      {"u8", "uint8", {"uint8"}, 1},
      {"bool", "bool", {"b8"}, 1},
      {"c64", "complex64", {"complex64", "cfloat"}, 8},
      {"c128", "complex128", {"complex128", "cdouble"}, 16},
      {"f8e4m3", "float8_e4m3fn", {"float8_e4m3fn"}, 1},
      {"f8e5m2", "float8_e5m2", {"float8_e5m2"}, 1},
  };
  return names;
}

int dtype_bytes(std::string_view canonical) {
  for (const auto& d : dtype_names())
    if (canonical == d.canonical) return d.bytes;
  return 4;
}

std::optional<std::string> canonical_dtype(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  for (const auto& d : dtype_names()) {
    if (lower == d.canonical) return d.canonical;
    for (const char* a : d.aliases)
      if (lower == a) return d.canonical;
  }
  return std::nullopt;
}

namespace {

std::string format_double(double d);

// The values an integer dtype holds ([low, high], both included); nullopt for floats.
std::optional<std::pair<double, double>> value_bounds(const std::string& dtype) {
  if (dtype == "bool") return std::pair{0.0, 1.0};
  if (dtype == "u8") return std::pair{0.0, 255.0};
  if (dtype == "i8") return std::pair{-128.0, 127.0};
  if (dtype == "i16") return std::pair{-32768.0, 32767.0};
  if (dtype == "i32") return std::pair{-2147483648.0, 2147483647.0};
  if (dtype == "i64") return std::pair{-9223372036854775808.0, 9223372036854775807.0};
  return std::nullopt;
}

// The characters of a bare word (and of numbers, which are words that read as numbers).
bool is_word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' || c == '+' || c == ':';
}

// How much of the user's text an error message echoes (whole words and the parsed text alike).
constexpr std::size_t kEchoChars = 80;
constexpr std::size_t kEchoWordChars = 40;

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  ArgValue parse_all() {
    skip_ws();
    ArgValue v = parse_one();
    skip_ws();
    if (pos_ != s_.size())
      fail(fmt::format("unexpected '{}' after a complete value (a string holding it goes in quotes: \"...\")",
                       echo(s_.substr(pos_, 1))));
    return v;
  }

 private:
  // Every piece of the user's text a message shows goes through here (core/text): cut to a
  // readable length and escaped, so that the message stays one short line whatever the input.
  static std::string echo(std::string_view text, std::size_t max_chars = kEchoWordChars) {
    return printable_one_line(text, max_chars);
  }
  [[noreturn]] void fail(const std::string& msg) const {
    throw ParseError(fmt::format("{} at column {} of '{}'", msg, pos_ + 1, echo(s_, kEchoChars)), pos_);
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!eat(c)) fail(fmt::format("expected '{}' {}", c, what));
  }
  std::string_view word() {
    skip_ws();
    const std::size_t start = pos_;
    while (pos_ < s_.size() && is_word_char(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }

  // `what` names the list: "a tensor shape", "':stride[...]'".
  std::vector<int64_t> int_list(const std::string& what) {
    expect('[', "to open " + what);
    std::vector<int64_t> out;
    if (eat(']')) return out;
    do {
      out.push_back(number<int64_t>(fmt::format("an integer in {}", what)));
    } while (eat(','));
    expect(']', "to close " + what);
    return out;
  }

  ArgValue parse_one() {
    skip_ws();
    if (pos_ >= s_.size()) fail("expected a value");
    if (s_[pos_] == '[') return parse_list();
    if (s_[pos_] == '"' || s_[pos_] == '\'') return ArgValue{ArgValue::Word{quoted()}};
    const std::size_t start = pos_;
    // Tensor: dtype immediately followed by '['.
    std::string_view w = word();
    if (w.empty()) fail(fmt::format("unexpected '{}'", echo(s_.substr(pos_, 1))));
    if (pos_ < s_.size() && s_[pos_] == '[') {
      auto dt = canonical_dtype(w);
      if (!dt) {
        pos_ = start;
        fail(
            fmt::format("unknown dtype '{}' (known: f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool "
                        "c64 c128 f8e4m3 f8e5m2)",
                        echo(w)));
      }
      return ArgValue{parse_tensor_rest(*dt)};
    }
    return scalar_from_word(w, start);
  }

  // A string in double or single quotes, from the opening quote at pos_; escapes as the
  // header lists. Its length is bounded by the input's.
  std::string quoted() {
    const char quote = s_[pos_++];
    const std::size_t open = pos_ - 1;
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) {
        pos_ = open;
        fail(fmt::format("a string opened here is not closed (end it with {})", quote));
      }
      const char c = s_[pos_++];
      if (c == quote) return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) fail("a '\\' ends the text; write '\\\\' for a backslash");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\'':
        case '\\':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'x': {
          unsigned value = 0;
          const auto* first = s_.data() + pos_;
          const auto* last = s_.data() + std::min(s_.size(), pos_ + 2);
          auto [p, ec] = std::from_chars(first, last, value, 16);
          if (ec != std::errc() || p != first + 2) fail("'\\x' needs two hex digits, as in \\x0a");
          pos_ += 2;
          out += char(value);
          break;
        }
        default:
          pos_ -= 2;
          fail(fmt::format("unknown escape '\\{}' in a string (known: \\\" \\' \\\\ \\n \\t \\r \\xHH)",
                           echo(std::string_view(&e, 1))));
      }
    }
  }

  TensorSpec parse_tensor_rest(std::string dtype) {
    TensorSpec t;
    t.dtype = std::move(dtype);
    t.shape = int_list("a tensor shape");
    for (long d : t.shape)
      if (d < 0) fail("a tensor dimension cannot be negative");
    // Modifiers: ':stride[...]', ':range[lo,hi]', ':zeros[fraction]', ':distinct[N]', ':cpu', ':cuda',
    // ':cuda:N', ':same[name]'.
    while (pos_ < s_.size() && s_[pos_] == ':') {
      ++pos_;
      const std::size_t start = pos_;
      std::string_view name;
      while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      name = s_.substr(start, pos_ - start);
      auto once = [&](bool given) {
        if (given) {
          pos_ = start;
          fail(fmt::format("':{}' given twice", echo(name)));
        }
      };
      if (name == "stride") {
        once(t.strides.has_value());
        t.strides = int_list("':stride[...]'");
        if (t.strides->size() != t.shape.size())
          fail(fmt::format("':stride' has {} entries but the shape has {} dimensions", t.strides->size(),
                           t.shape.size()));
      } else if (name == "range") {
        once(t.range.has_value());
        expect('[', "after ':range'");
        const double lo = number<double>("a number for the low end of ':range'");
        expect(',', "between the ends of ':range[low,high]'");
        const double hi = number<double>("a number for the high end of ':range'");
        expect(']', "to close ':range'");
        if (!(hi > lo)) fail("':range[low,high]' needs high > low");
        if (auto bounds = value_bounds(t.dtype); bounds && (lo < bounds->first || hi > bounds->second + 1))
          fail(fmt::format("':range[{},{}]' is outside what {} holds ([{}, {}])", format_double(lo), format_double(hi),
                           t.dtype, bounds->first, bounds->second));
        t.range = {lo, hi};
      } else if (name == "zeros") {
        once(t.zeros_fraction.has_value());
        expect('[', "after ':zeros'");
        const double f = number<double>("the fraction of elements that are zero, in ':zeros[fraction]'");
        expect(']', "to close ':zeros'");
        if (!(f >= 0 && f <= 1)) fail("':zeros[fraction]' needs a fraction from 0 to 1");
        t.zeros_fraction = f;
      } else if (name == "distinct") {
        once(t.distinct.has_value());
        expect('[', "after ':distinct'");
        const int64_t n = number<int64_t>("the number of distinct groups, in ':distinct[N]'");
        expect(']', "to close ':distinct'");
        if (n < 0) fail("':distinct[N]' needs N >= 0");
        t.distinct = n;
      } else if (name == "same") {
        once(t.same_as.has_value());
        expect('[', "after ':same'");
        const std::size_t n0 = pos_;
        while (pos_ < s_.size() && pos_ - n0 < kMaxArgumentNameBytes &&
               (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
          ++pos_;
        if (pos_ == n0 || std::isdigit(static_cast<unsigned char>(s_[n0])))
          fail("':same[name]' needs the name of an earlier tensor argument, such as ':same[query]'");
        if (pos_ - n0 == kMaxArgumentNameBytes && pos_ < s_.size() && s_[pos_] != ']')
          fail(fmt::format("':same[name]' reads argument names of at most {} bytes", kMaxArgumentNameBytes));
        t.same_as = std::string(s_.substr(n0, pos_ - n0));
        expect(']', "to close ':same'");
      } else if (name == "cpu" || name == "cuda") {
        once(t.device.has_value());
        std::string dev(name);
        if (pos_ < s_.size() && s_[pos_] == ':' && pos_ + 1 < s_.size() &&
            std::isdigit(static_cast<unsigned char>(s_[pos_ + 1]))) {
          ++pos_;
          const std::size_t d0 = pos_;
          while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
          dev += ":" + std::string(s_.substr(d0, pos_ - d0));
        }
        t.device = dev;
      } else {
        pos_ = start;
        fail(
            fmt::format("unknown tensor modifier ':{}' (known: :stride[...], :range[lo,hi], "
                        ":zeros[fraction], :distinct[N], :cpu, :cuda, :same[name])",
                        echo(name)));
      }
    }
    return t;
  }

  // The next word as a number of type T; `what` completes "expected ...".
  template <typename T>
  T number(const std::string& what) {
    skip_ws();
    const std::size_t start = pos_;
    auto w = word();
    T x{};
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), x);
    if (ec == std::errc::result_out_of_range && p == w.data() + w.size()) {
      pos_ = start;
      fail(
          fmt::format("'{}' is out of range for {}", echo(w), std::is_integral_v<T> ? "a 64-bit integer" : "a double"));
    }
    if (w.empty() || ec != std::errc() || p != w.data() + w.size()) {
      pos_ = start;
      fail("expected " + what);
    }
    return x;
  }

  ArgValue scalar_from_word(std::string_view w, std::size_t start) {
    if (w == "None" || w == "none_t" || w == "null" || w == "~") return ArgValue{ArgValue::None{}};
    if (w == "true" || w == "True") return ArgValue{true};
    if (w == "false" || w == "False") return ArgValue{false};
    int64_t i = 0;
    auto [pi, eci] = std::from_chars(w.data(), w.data() + w.size(), i);
    if (eci == std::errc() && pi == w.data() + w.size()) return ArgValue{i};
    const bool integral = w.find_first_of(".eEn") == std::string_view::npos;  // digits only (inf/nan aside)
    if (eci == std::errc::result_out_of_range && pi == w.data() + w.size() && integral) {
      pos_ = start;
      fail(fmt::format("'{}' is out of range for a 64-bit integer (-9223372036854775808 to 9223372036854775807)",
                       echo(w)));
    }
    double d = 0;
    auto [pd, ecd] = std::from_chars(w.data(), w.data() + w.size(), d);
    if (ecd == std::errc() && pd == w.data() + w.size()) return ArgValue{d};
    if (ecd == std::errc::result_out_of_range && pd == w.data() + w.size()) {
      pos_ = start;
      fail(fmt::format("'{}' is out of range for a double", echo(w)));
    }
    if (w == "inf" || w == "-inf" || w == "nan") {
      return ArgValue{w == "nan" ? NAN : (w[0] == '-' ? -INFINITY : INFINITY)};
    }
    if (auto c = complex_number(w)) return ArgValue{*c};
    if (std::isdigit(static_cast<unsigned char>(w[0])) || w[0] == '-' || w[0] == '+') {
      pos_ = start;
      fail(fmt::format("'{}' is not a number", echo(w)));
    }
    return ArgValue{ArgValue::Word{std::string(w)}};
  }

  // A whole word that reads as a double (from_chars: digits, exponents, inf, nan; a leading '+'
  // is accepted here as Python writes it in the imaginary part).
  static std::optional<double> whole_double(std::string_view w) {
    if (!w.empty() && w[0] == '+') w.remove_prefix(1);
    double d = 0;
    auto [p, ec] = std::from_chars(w.data(), w.data() + w.size(), d);
    if (w.empty() || ec != std::errc() || p != w.data() + w.size()) return std::nullopt;
    return d;
  }

  // Python's spelling of a complex number: 1.5+2.0j, -1e-3-4j, 2.0j.
  static std::optional<ArgValue::Complex> complex_number(std::string_view w) {
    if (w.size() < 2 || w.back() != 'j') return std::nullopt;
    const std::string_view body = w.substr(0, w.size() - 1);
    // The imaginary part starts at the last sign that is not an exponent's.
    std::size_t split = std::string_view::npos;
    for (std::size_t i = 1; i < body.size(); ++i)
      if ((body[i] == '+' || body[i] == '-') && body[i - 1] != 'e' && body[i - 1] != 'E') split = i;
    if (split == std::string_view::npos) {
      auto imag = whole_double(body);
      if (!imag) return std::nullopt;
      return ArgValue::Complex{0.0, *imag};
    }
    auto real = whole_double(body.substr(0, split));
    auto imag = whole_double(body.substr(split));
    if (!real || !imag) return std::nullopt;
    return ArgValue::Complex{*real, *imag};
  }

  ArgValue parse_list() {
    // Each level is a call of parse_one: bounded, so that no input can exhaust the stack.
    if (++depth_ > kMaxListDepth)
      fail(
          fmt::format("lists nest deeper than {} levels (an argument is a value, or a list of values or of lists); "
                      "flatten it",
                      kMaxListDepth));
    expect('[', "to open a list");
    ArgList items;
    if (!eat(']')) {
      do {
        items.push_back(parse_one());
      } while (eat(','));
      expect(']', "to close a list");
    }
    --depth_;
    return ArgValue{std::move(items)};
  }

  std::string_view s_;
  std::size_t pos_ = 0;
  std::size_t depth_ = 0;  // lists open at pos_
};

std::string join_ints(const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

std::string format_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest text that round-trips, always with a '.' or exponent so it reads as a float.
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

ArgValue parse_value(std::string_view text) { return Parser(text).parse_all(); }

std::string format_string(std::string_view text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), is_word_char)) {
    try {  // bare only where it reads back as this string (not None, true, 1.5, 2j ...)
      const ArgValue back = parse_value(text);
      if (const auto* w = std::get_if<ArgValue::Word>(&back.v); w && w->text == text) return std::string(text);
    } catch (const ParseError&) {  // such as '1abc': not a number, so it needs quotes
    }
  }
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c >= 0x20 && c < 0x7f)
          out += c;
        else
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    }
  }
  return out + "\"";
}

std::string format_tensor(const TensorSpec& t) {
  std::string s = fmt::format("{}[{}]", t.dtype, join_ints(t.shape));
  if (t.strides) s += fmt::format(":stride[{}]", join_ints(*t.strides));
  if (t.range) s += fmt::format(":range[{},{}]", format_double(t.range->first), format_double(t.range->second));
  if (t.zeros_fraction) s += fmt::format(":zeros[{}]", format_double(*t.zeros_fraction));
  if (t.distinct) s += fmt::format(":distinct[{}]", *t.distinct);
  if (t.device) s += ":" + *t.device;
  if (t.same_as) s += fmt::format(":same[{}]", *t.same_as);
  return s;
}

std::string format_value(const ArgValue& v) {
  struct Visitor {
    std::string operator()(const ArgValue::None&) const { return "None"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_double(d); }
    std::string operator()(const ArgValue::Word& w) const { return format_string(w.text); }
    std::string operator()(const ArgValue::Complex& c) const {
      return fmt::format("{}{}{}j", format_double(c.real), std::signbit(c.imag) ? "-" : "+",
                         format_double(std::fabs(c.imag)));
    }
    std::string operator()(const TensorSpec& t) const { return format_tensor(t); }
    std::string operator()(const ArgList& l) const {
      std::string s = "[";
      for (std::size_t i = 0; i < l.size(); ++i) s += (i ? "," : "") + format_value(l[i]);
      return s + "]";
    }
  };
  return std::visit(Visitor{}, v.v);
}

}  // namespace opcost
