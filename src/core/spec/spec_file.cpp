#include "core/spec/spec_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "core/io/input_file.h"
#include "core/text/text.h"

#include <stdexcept>

namespace opcost {

namespace {

std::string where(const std::string& origin, const YAML::Node& n) {
  return fmt::format("{}:{}", origin, n.Mark().line + 1);
}

// A spec's lists obey the argument language's bounds (core/spec/arg_value.h): at most
// kMaxListDepth levels, and at most kMaxListValues values in one argument, which YAML's
// aliases could otherwise multiply without bound (a list of 10 aliases of a list of 10 aliases
// of ... grows tenfold per level while the file grows by a line).
constexpr std::size_t kMaxListValues = 100000;

// How much of a file's name, and of a YAML library's message, a message echoes.
constexpr std::size_t kMaxOriginChars = 1024;
constexpr std::size_t kMaxLibraryMessageChars = 200;

struct ValueBudget {
  std::size_t values = 0;
};

ArgValue to_value(const YAML::Node& n, const std::string& at, ValueBudget& budget, std::size_t depth = 0) {
  if (++budget.values > kMaxListValues)
    throw std::invalid_argument(fmt::format(
        "{}: more than {} values in one argument (YAML aliases can multiply a list); give fewer", at, kMaxListValues));
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return ArgValue{ArgValue::None{}};
    case YAML::NodeType::Scalar:
      try {
        return parse_value(n.Scalar());
      } catch (const ParseError& e) {
        // YAML's own quotes make a string: `equation: "bd,de->be"` is that text, as the
        // language's quotes would make it. Not where it holds a '[': that is a tensor or a list
        // with a typo ("f32[2,3"), said as such; such a string takes the language's quotes too.
        if (n.Tag() == "!" && n.Scalar().find('[') == std::string::npos) return ArgValue{ArgValue::Word{n.Scalar()}};
        throw std::invalid_argument(
            fmt::format("{}: {}; a string with commas, spaces or quotes is written in quotes", at, e.what()));
      }
    case YAML::NodeType::Sequence: {
      if (depth + 1 > kMaxListDepth)
        throw std::invalid_argument(fmt::format(
            "{}: lists nest deeper than {} levels (an argument is a value, or a list of values or of lists); "
            "flatten it",
            at, kMaxListDepth));
      ArgList items;
      for (const auto& item : n) items.push_back(to_value(item, at, budget, depth + 1));
      return ArgValue{std::move(items)};
    }
    case YAML::NodeType::Map:
      break;
  }
  throw std::invalid_argument(
      fmt::format("{}: an argument value cannot be a mapping; write a tensor as \"f32[2,3]\", a "
                  "list as [1, 2]",
                  at));
}

OpCall entry_to_call(const YAML::Node& e, const std::string& origin, std::size_t index) {
  const std::string at = fmt::format("{} (ops[{}])", where(origin, e), index);
  if (e.IsScalar()) return parse_call_line(e.Scalar(), at);
  // An entry of `opcost inventory --json`: its signature is a one-line call, measured with the
  // inputs it reads from memory rotated (cold_args); the other keys (count, layers, nested,
  // phase) describe the model and do not change the measurement.
  if (e.IsMap() && e["signature"] && e["signature"].IsScalar()) {
    OpCall c = parse_call_line(e["signature"].Scalar(), at);
    if (const YAML::Node cold = e["cold_args"]; cold && cold.IsSequence() && cold.size() > 0) {
      std::vector<std::string> names;
      for (const auto& n : cold) names.push_back(n.as<std::string>());
      c.cache_mode = fmt::format("cold:{}", fmt::join(names, ","));
    }
    return c;
  }
  if (!e.IsMap())
    throw std::invalid_argument(at + ": each entry must be a mapping {op: ..., args: {...}} or a one-line call string");
  if (!e["op"]) throw std::invalid_argument(at + ": missing 'op' (e.g. op: aten::conv2d)");
  if (!e["op"].IsScalar())
    throw std::invalid_argument(fmt::format("{}: 'op' must be one operator name such as aten::conv2d, not a {}", at,
                                            e["op"].IsSequence() ? "list" : "mapping"));
  for (const auto& kv : e) {
    const auto key = kv.first.as<std::string>();
    if (key != "op" && key != "args")
      throw std::invalid_argument(
          fmt::format("{}: unknown key '{}' (an entry has 'op' and 'args')", at, printable_one_line(key, 40)));
  }
  OpCall call;
  try {
    check_op_name(e["op"].Scalar());
  } catch (const std::invalid_argument& err) {
    throw std::invalid_argument(fmt::format("{}: {}", at, err.what()));
  }
  std::tie(call.op, call.overload) = split_op_name(e["op"].Scalar());
  call.origin = at;
  const YAML::Node args = e["args"];
  if (args && args.IsMap()) {
    for (const auto& kv : args) {
      const auto name = kv.first.as<std::string>();
      ValueBudget budget;
      call.args.push_back(
          {name,
           to_value(kv.second, fmt::format("{} argument '{}'", where(origin, kv.second), printable_one_line(name, 40)),
                    budget)});
    }
  } else if (args && args.IsSequence()) {
    for (const auto& v : args) {
      ValueBudget budget;
      call.args.push_back({"", to_value(v, where(origin, v), budget)});
    }
  } else if (args && !args.IsNull()) {
    throw std::invalid_argument(at + ": 'args' must be a mapping of name: value");
  }
  return call;
}

}  // namespace

std::vector<std::string> split_call_line(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  char quote = 0;        // the quote of the string being read, or 0
  bool escaped = false;  // the previous character was a backslash inside that string
  for (char c : line) {
    // Inside a string a space, a bracket or the other quote is text (equation="b d, d e").
    if (quote) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == quote)
        quote = 0;
      cur += c;
      continue;
    }
    if (c == '"' || c == '\'') quote = c;
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (std::isspace(static_cast<unsigned char>(c)) && depth <= 0) {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

OpCall parse_call_line(const std::string& line, const std::string& at) {
  auto tokens = split_call_line(line);
  if (tokens.empty()) throw std::invalid_argument(at + ": empty operator entry");
  const std::string name = tokens.front();
  tokens.erase(tokens.begin());
  try {
    OpCall c = parse_call(name, tokens);
    c.origin = at;
    return c;
  } catch (const std::invalid_argument& err) {
    throw std::invalid_argument(fmt::format("{}: {}", at, err.what()));
  }
}

SpecEntries parse_spec_text(const std::string& text, const std::string& given_origin) {
  // The file's name as every message (and each call's origin) shows it: a path may hold a newline.
  const std::string origin = printable_one_line(given_origin, kMaxOriginChars);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // yaml-cpp's message quotes the input ("unknown escape character: " and the character).
    throw std::invalid_argument(fmt::format("{}:{}:{}: malformed YAML/JSON: {}", origin, e.mark.line + 1,
                                            e.mark.column + 1, printable_one_line(e.msg, kMaxLibraryMessageChars)));
  }
  if (root.IsNull())
    throw std::invalid_argument(
        fmt::format("{}: the spec file is empty; list operators under 'ops:', e.g. ops: [\"aten::relu "
                    "self=f32[1024]\"]",
                    origin));
  // Constructed, never assigned: yaml-cpp's Node::operator= writes through to the node it
  // refers to, which would overwrite `root`.
  const YAML::Node ops = root.IsMap() ? root["ops"] : root;
  if (root.IsMap() && !ops)
    throw std::invalid_argument(
        fmt::format("{}: no 'ops' list: a spec file is a list of operator entries, or a mapping with "
                    "key 'ops'",
                    origin));
  if (ops.IsNull() || (ops.IsSequence() && ops.size() == 0))
    throw std::invalid_argument(origin + ": the spec file lists no operators ('ops' is empty)");
  if (!ops.IsSequence())
    throw std::invalid_argument(
        fmt::format("{}: 'ops' must be a list of entries, not a {}", origin, ops.IsMap() ? "mapping" : "single value"));
  SpecEntries out;
  // An inventory of an autocast run: its ops are measured under the same autocast.
  const std::string autocast =
      root.IsMap() && root["autocast"] && root["autocast"].IsScalar() ? root["autocast"].Scalar() : "";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    try {
      out.calls.push_back(entry_to_call(ops[i], origin, i));
      out.calls.back().autocast = autocast;
    } catch (const std::invalid_argument& e) {  // one bad entry: reported, the rest still run
      out.errors.push_back(e.what());
    } catch (const YAML::Exception& e) {  // a key or name that is no string ({[a]: 1})
      out.errors.push_back(fmt::format("{} (ops[{}]): {}; keys and names are plain words", where(origin, ops[i]), i,
                                       printable_one_line(e.msg, kMaxLibraryMessageChars)));
    }
  }
  return out;
}

SpecEntries load_spec_file(const std::string& path) {
  return parse_spec_text(read_text_file(path, "the spec file"), path);
}

}  // namespace opcost
