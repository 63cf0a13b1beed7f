// Chrome trace import (core/trace/chrome_import.h, through event_chunks.h): the input is the
// file, plain JSON or gzip. A file that is not a trace it can read is refused with
// std::invalid_argument naming it, in one line; a trace it reads has no range that ends before
// it starts (a negative or overflowing dur, a ts of 1e308, must be skipped, not imported).
#include <fmt/format.h>

#include <stdexcept>
#include <string>

#include "core/trace/chrome_import.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static opcost::fuzz::InputFile file(".json");
  const std::string& path = file.write(data, size);
  opcost::fuzz::check_trace_import(path, [](const std::string& file) { return opcost::import_chrome_trace(file); });
  return 0;
}
