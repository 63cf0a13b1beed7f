#pragma once
// How the committed driver reports a finding: the input it was running saved under the
// artifacts directory and shown (escaped, long runs folded, cut), what went wrong, and the
// stack; then the process exits with the finding's code. Safe to call from a signal handler
// (a crash, a stack overflow, the per-input alarm): only write(2), open(2) and backtrace(3),
// no allocation.
#include <cstddef>
#include <cstdint>

namespace opcost::fuzz {

// Exit codes, one per kind of finding (the minimiser keeps a smaller input only when it fails
// the same way).
enum class Finding : int {
  kCrash = 71,                  // a signal: SIGSEGV (often a stack overflow), SIGABRT (a failed check), ...
  kHang = 72,                   // one input ran past the per-input time limit
  kOutOfMemory = 73,            // std::bad_alloc under the address-space limit
  kUndocumentedException = 74,  // an exception the parser does not document
};

// Set once before running: the target's name (for messages) and where inputs are saved
// ("" saves nothing: the minimiser's children). Both copied.
void set_report_context(const char* target_name, const char* artifacts_dir);
// The input being run, for the signal handlers; cleared with (nullptr, 0).
void set_current_input(const uint8_t* data, std::size_t size);
// Installs the handlers of SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (on an alternate stack,
// so that a stack overflow is reported too) and SIGALRM.
void install_failure_handlers();

// Reports the current input as a finding of `kind`, with `detail` (a signal's name, an
// exception's type and message), and exits. `stack` prints this thread's stack.
[[noreturn]] void report_finding(Finding kind, const char* detail, bool stack);

// Writes the input escaped and cut into `out` (NUL-terminated, at most `cap` bytes): printable
// ASCII as is, other bytes as \xNN, a unit of up to 8 bytes repeated 8 times or more as
// <unit>{xN}. Allocation-free (used in signal handlers).
void describe_input(const uint8_t* data, std::size_t size, char* out, std::size_t cap);

}  // namespace opcost::fuzz
