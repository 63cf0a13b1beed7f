#include "workflow/report_html.h"

#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "core/io/atomic_output_file.h"
#include "core/io/input_file.h"
#include "core/text/text.h"
#include "core/version.h"
#include "workflow/report_template_data.h"  // generated from workflow/report_template.html
#include "workflow/sweep_summary.h"

namespace opcost {

using nlohmann::json;

namespace {

constexpr const char* kWhatOpcostWrites =
    "expected the JSON of opcost validate/predict/model/trace/measure/compare --json or `opcost db export --json`";
constexpr std::size_t kMaxQuotedChars = 200;  // of a parser's message, which may quote the input

// Refuses nesting deeper than kMaxReportJsonDepth before the parser sees the text: counted
// outside strings, so that it costs one pass and no memory.
void check_depth(std::string_view text, const std::string& source) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxReportJsonDepth)
        throw std::invalid_argument(fmt::format("{}: JSON nested deeper than {} levels (at byte {}); {}", source,
                                                kMaxReportJsonDepth, i, kWhatOpcostWrites));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

bool is_positive_number(const json* v) {
  if (v == nullptr) return false;
  if (v->is_number()) return v->get<double>() > 0;
  if (v->is_string()) {  // the settings are written as text ("0.9")
    try {
      return std::stod(v->get<std::string>()) > 0;
    } catch (const std::exception&) {
      return false;
    }
  }
  return false;
}

const json* find(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

bool is_prediction(const json& doc) { return find(doc, "predicted") && (find(doc, "ops") || find(doc, "layers")); }
bool is_trace_table(const json& doc) { return find(doc, "rows") && find(doc, "group_by") && find(doc, "total"); }
// A measurement document, or the line a failed one leaves in measure's output ({op, args, error}).
bool is_measurement(const json& doc) {
  return find(doc, "op") && find(doc, "args") && (find(doc, "time_us") || find(doc, "error"));
}

std::string base_name(const std::string& path) {
  if (path.empty() || path == "-") return "standard input";
  return std::filesystem::path(path).filename().string();
}

}  // namespace

const char* report_kind_name(ReportKind kind) {
  switch (kind) {
    case ReportKind::kValidate:
      return "validate";
    case ReportKind::kPredict:
      return "predict";
    case ReportKind::kModel:
      return "model";
    case ReportKind::kTrace:
      return "trace";
    case ReportKind::kSweep:
      return "sweep";
    case ReportKind::kMeasure:
      return "measure";
    case ReportKind::kCompare:
      return "compare";
  }
  return "unknown";
}

json parse_result_json(std::string_view text, const std::string& source) {
  if (text.size() > kMaxReportInputBytes)
    throw std::invalid_argument(
        fmt::format("{}: larger than {} MiB: the report reads one run's result", source, kMaxReportInputBytes >> 20));
  check_depth(text, source);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond a double (out_of_range)
    std::string why = e.what();
    if (auto at = why.find("] "); at != std::string::npos) why.erase(0, at + 2);  // "[json.exception...] "
    throw std::invalid_argument(
        fmt::format("{}: not JSON ({}); {}", source, printable_one_line(why, kMaxQuotedChars), kWhatOpcostWrites));
  }
}

ReportKind detect_report_kind(const json& doc, const std::string& source) {
  if (doc.is_object()) {
    if (is_prediction(doc)) {
      const json* settings = find(doc, "settings");
      if (settings && is_positive_number(find(*settings, "target"))) return ReportKind::kModel;
      return find(doc, "measured") ? ReportKind::kValidate : ReportKind::kPredict;
    }
    if (is_trace_table(doc)) return ReportKind::kTrace;
    if (is_measurement(doc)) return ReportKind::kMeasure;
    // opcost compare --json (workflow/compare.h).
    if (const json* kind = find(doc, "kind"); kind && kind->is_string() && *kind == "compare" && find(doc, "variants"))
      return ReportKind::kCompare;
  } else if (doc.is_array()) {
    if (doc.empty())
      throw std::invalid_argument(
          fmt::format("{}: an empty array: nothing to report (was the database or the sweep empty?)", source));
    const json& first = doc.front();
    // db export --json gives every row "sweep" and "axes" (null for rows no sweep made).
    if (is_measurement(first) && find(first, "axes")) return ReportKind::kSweep;
    if (is_measurement(first)) return ReportKind::kMeasure;
  }
  throw std::invalid_argument(fmt::format("{}: not a result opcost writes; {}", source, kWhatOpcostWrites));
}

json report_data(const json& doc, ReportKind kind, const std::string& source_name) {
  json out = {{"kind", report_kind_name(kind)},
              {"source", source_name},
              {"generated_by", fmt::format("opcost {}", kOpcostVersion)},
              {"data", nullptr},
              {"aggregated", nullptr}};
  if (kind == ReportKind::kSweep) {
    json summary = summarize_sweep(doc);
    const bool inlined = doc.size() <= kSweepRowsInlined;
    summary["inlined_rows"] = inlined;
    summary["note"] = inlined ? json(nullptr)
                              : json(fmt::format("{} rows, more than {}: the page shows them aggregated per axis "
                                                 "value (count, mean, min, max) and per pair of axes (means)",
                                                 doc.size(), kSweepRowsInlined));
    if (inlined) {
      summary.erase("roofline_points");  // the page draws the embedded rows themselves
      summary.erase("roofline_points_left_out");
      json rows = json::array();
      for (const auto& row : doc) rows.push_back(slim_sweep_row(row));
      out["data"] = std::move(rows);
    }
    out["aggregated"] = std::move(summary);
  } else if (kind == ReportKind::kMeasure && doc.is_object()) {
    out["data"] = json::array({doc});  // one shape for the page: a single run's document or --spec's array
  } else {
    out["data"] = doc;
  }
  return out;
}

std::string escape_json_for_script(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') {
      out += "\\u003c";
    } else if (c == '>') {
      out += "\\u003e";
    } else if (c == '&') {
      out += "\\u0026";
    } else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";  // line separators: end a line in old parsers
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_report_html(std::string_view html_template, const json& envelope) {
  const std::size_t at = html_template.find(kReportDataToken);
  if (at == std::string_view::npos || html_template.find(kReportDataToken, at + 1) != std::string_view::npos)
    throw std::logic_error(fmt::format("the report's template must hold {} exactly once", kReportDataToken));
  // Invalid UTF-8 cannot come from a parsed input (the parser refuses it); replaced, never thrown, all the same.
  const std::string data = escape_json_for_script(envelope.dump(-1, ' ', false, json::error_handler_t::replace));
  std::string page;
  page.reserve(html_template.size() + data.size());
  page.append(html_template.substr(0, at));
  page.append(data);
  page.append(html_template.substr(at + kReportDataToken.size()));
  return page;
}

std::string_view report_template() { return {kReportTemplateHtml, kReportTemplateHtmlBytes}; }

std::string report_html_of(const json& doc, const std::string& source_name) {
  const ReportKind kind = detect_report_kind(doc, source_name);
  return render_report_html(report_template(), report_data(doc, kind, source_name));
}

ReportKind write_report(const std::string& input_path, const std::string& output_path) {
  if (output_path.empty() || output_path == "-")
    throw std::invalid_argument("report: name the HTML file to write with -o FILE");
  // Before anything is read: the page written over its result would lose the result.
  check_output_not_input(output_path, "-o", {{input_path, "the result file"}});
  const json doc =
      parse_result_json(read_text_file(input_path, "the result file", kMaxReportInputBytes,
                                       "the report reads one run's result; export one sweep (db export --sweep NAME)"),
                        input_path);
  const ReportKind kind = detect_report_kind(doc, input_path);
  write_file_atomically(output_path,
                        render_report_html(report_template(), report_data(doc, kind, base_name(input_path))));
  return kind;
}

ReportKind write_report_of(const json& doc, const std::string& source_name, const std::string& output_path) {
  const ReportKind kind = detect_report_kind(doc, source_name);
  write_file_atomically(output_path, render_report_html(report_template(), report_data(doc, kind, source_name)));
  return kind;
}

}  // namespace opcost
