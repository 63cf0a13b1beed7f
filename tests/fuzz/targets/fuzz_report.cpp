// The HTML report (workflow/report_html.h, workflow/sweep_summary.h): the input is a result
// file's text. Text that is not a result opcost writes is refused with std::invalid_argument
// naming the input, in one line; a result it reads becomes a page whose data element holds no
// `<`, `>` or `&` (nothing can close it) and reads back as exactly the data put in.
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "fuzz_support.h"
#include "workflow/report_html.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using nlohmann::json;
  constexpr const char* kName = "fuzz-input.json";
  constexpr std::string_view kOpen = "<script id=\"opcost-data\" type=\"application/json\">";
  const std::string page_template = std::string("<p>") + std::string(kOpen) + "/*OPCOST_DATA*/</script>";
  json envelope;
  try {
    const json doc = opcost::parse_result_json(std::string_view(reinterpret_cast<const char*>(data), size), kName);
    envelope = opcost::report_data(doc, opcost::detect_report_kind(doc, kName), kName);
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::check_refusal(e.what(), kName);
    return 0;
  }
  opcost::fuzz::note_accepted();
  const std::string page = opcost::render_report_html(page_template, envelope);
  const std::size_t from = page.find(kOpen) + kOpen.size();
  const std::size_t to = page.rfind("</script>");
  const std::string inside = page.substr(from, to - from);
  if (inside.find_first_of("<>&") != std::string::npos) opcost::fuzz::fail("the data element holds <, > or &");
  if (json::parse(inside) != envelope) opcost::fuzz::fail("the data element does not read back as the data");
  return 0;
}
