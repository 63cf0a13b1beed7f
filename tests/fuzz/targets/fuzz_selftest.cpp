// A target that fails on purpose, to test the driver (tests/fuzz/driver_selftest.sh): inputs
// containing @CRASH@, @HANG@, @THROW@ or @OOM@ fail that way, and one with 1000 '[' in a row crashes,
// which only mutation reaches from the seed "[x]" (the driver's repetition and wrapping).
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find("@CRASH@") != std::string::npos) {
    volatile int* null = nullptr;
    *null = 1;  // SIGSEGV
  }
  if (text.find("@HANG@") != std::string::npos) {
    volatile bool forever = true;
    while (forever) {}
  }
  if (text.find("@THROW@") != std::string::npos) throw std::logic_error("thrown on purpose");
  if (text.find("@OOM@") != std::string::npos) {
    std::vector<std::vector<char>> hog;
    for (;;) hog.emplace_back(std::size_t(64) << 20, 'x');  // touched, so it is really held
  }
  if (text.find(std::string(1000, '[')) != std::string::npos) opcost::fuzz::fail("1000 '[' in a row");
  if (text.rfind("OK", 0) == 0) opcost::fuzz::note_accepted();
  return 0;
}
