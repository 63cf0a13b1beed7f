#pragma once
// `opcost report` and --html: any result JSON opcost writes (validate / predict / model, a trace
// table, a measurement or several, a `db export --json` array) as ONE self-contained HTML file:
// the page's template (workflow/report_template.html, embedded at build time) with the result
// embedded in its `<script id="opcost-data" type="application/json">` element, escaped so that
// no input can close that element. Torch-free.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace opcost {

// A result file larger than this is refused, naming the file: the report is for one run's results.
inline constexpr std::size_t kMaxReportInputBytes = std::size_t{256} << 20;
// Nesting deeper than this is refused before parsing: opcost's own documents nest a few levels,
// and the writer (nlohmann's dump) recurses per level.
inline constexpr std::size_t kMaxReportJsonDepth = 64;
// The token the template holds exactly once, where the data goes.
inline constexpr std::string_view kReportDataToken = "/*OPCOST_DATA*/";

enum class ReportKind { kValidate, kPredict, kModel, kTrace, kSweep, kMeasure, kCompare };

// "validate", "predict", "model", "trace", "sweep", "measure", "compare": the envelope's "kind".
const char* report_kind_name(ReportKind kind);

// Parses a result file's text; `source` names it in errors (one line each: not JSON, nesting
// too deep, too large).
nlohmann::json parse_result_json(std::string_view text, const std::string& source);

// Which command wrote `doc`; std::invalid_argument naming `source` and what opcost reads otherwise.
ReportKind detect_report_kind(const nlohmann::json& doc, const std::string& source);

// What the page reads: {"kind", "source", "generated_by", "data", "aggregated"} (docs/report.md).
// "data" is the document as it is (a lone measurement as a one-element array); for a sweep, its
// rows trimmed to what the page draws (slim_sweep_row) when there are at most kSweepRowsInlined,
// else null; "aggregated" is a sweep's summary (workflow/sweep_summary.h), else null.
nlohmann::json report_data(const nlohmann::json& doc, ReportKind kind, const std::string& source_name);

// JSON text safe inside a <script> element: every <, >, & and the line separators U+2028 and
// U+2029 written as \u escapes (they occur only inside strings, where the escape means the
// same), so that "</script>" or "<!--" in any input string cannot end or alter the element.
std::string escape_json_for_script(std::string_view json_text);

// The page: `html_template` with kReportDataToken replaced by the escaped envelope. Throws
// std::logic_error when the template does not hold the token exactly once.
std::string render_report_html(std::string_view html_template, const nlohmann::json& envelope);

// The template compiled into opcost.
std::string_view report_template();

// The page for `doc` (kind detected), its source named `source_name` (a file's base name).
std::string report_html_of(const nlohmann::json& doc, const std::string& source_name);

// `opcost report INPUT -o OUTPUT`: reads INPUT (at most kMaxReportInputBytes; "-": standard
// input), writes the page to OUTPUT atomically, every write checked. OUTPUT naming the same file
// as INPUT is refused. Returns the kind written.
ReportKind write_report(const std::string& input_path, const std::string& output_path);

// --html FILE of validate / predict / model / trace, and Python's opcost.report: the page of a
// document already in memory, written atomically. Returns the kind written.
ReportKind write_report_of(const nlohmann::json& doc, const std::string& source_name, const std::string& output_path);

}  // namespace opcost
