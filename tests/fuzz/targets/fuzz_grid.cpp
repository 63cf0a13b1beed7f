// Sweep grid files (core/sweep/grid.h): YAML, templates and expressions. A bad grid is refused
// with std::invalid_argument (ExpressionError, SweepTooLarge) naming the file, in one line;
// a good one makes its items one at a time, each a call line that parses. The item limit is
// lowered so that a grid the limit allows runs in a fraction of a second.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "core/spec/op_call.h"
#include "core/spec/spec_file.h"
#include "core/sweep/grid.h"
#include "fuzz_support.h"

namespace {

constexpr std::uint64_t kMaxItems = 10'000;
constexpr const char* kOrigin = "fuzz-grid.yaml";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const opcost::GridDefinition grid = opcost::GridDefinition::read(text, kOrigin);
    grid.check_size(kMaxItems);
    grid.for_each_item([](opcost::GridItem& item) {
      const std::string canonical = opcost::format_args(item.call.args);
      std::string again;
      try {
        again = opcost::format_args(opcost::parse_call_line(item.call_line, "again").args);
      } catch (const std::invalid_argument& e) {
        opcost::fuzz::fail(
            fmt::format("a grid item's call line '{}' does not parse again: {}", item.call_line, e.what()));
      }
      if (again != canonical)
        opcost::fuzz::fail(
            fmt::format("a grid item's call line '{}' parses as '{}', not '{}'", item.call_line, again, canonical));
    });
  } catch (const std::invalid_argument& e) {
    opcost::fuzz::check_refusal(e.what(), kOrigin);
    return 0;
  }
  opcost::fuzz::note_accepted();
  return 0;
}
