// Spec files (core/spec/spec_file.h): YAML or JSON lists of operator calls. A file that is not
// a spec is refused with std::invalid_argument naming it, in one line; a bad entry becomes one
// message of the same kind while the good ones still parse.
#include <stdexcept>
#include <string>

#include "core/spec/spec_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  constexpr const char* kOrigin = "fuzz-spec.yaml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  opcost::SpecEntries entries;
  try {
    entries = opcost::parse_spec_text(text, kOrigin);
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::check_refusal(e.what(), kOrigin);
    return 0;
  }
  for (const auto& error : entries.errors) opcost::fuzz::check_refusal(error, kOrigin);
  if (!entries.calls.empty()) opcost::fuzz::note_accepted();
  return 0;
}
