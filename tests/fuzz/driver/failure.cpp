#include "driver/failure.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <initializer_list>

namespace opcost::fuzz {

namespace {

char target_name[512] = "fuzz";
char artifacts_dir[2048] = "";
const uint8_t* volatile current_data = nullptr;
volatile std::size_t current_size = 0;
volatile sig_atomic_t reporting = 0;
// A stack overflow leaves no stack to report it on: the handlers run on this one instead.
alignas(16) char alternate_stack[1 << 16];

// An allocation-free text buffer: appends what fits, always NUL-terminated.
struct Text {
  char* out;
  std::size_t cap, n = 0;
  Text(char* o, std::size_t c) : out(o), cap(c) {
    if (cap) out[0] = '\0';
  }
  bool full() const { return n + 1 >= cap; }
  void add(char c) {
    if (full()) return;
    out[n++] = c;
    out[n] = '\0';
  }
  void add(const char* s) {
    while (*s) add(*s++);
  }
  void add_uint(uint64_t v) {
    char digits[24];
    int k = 0;
    do digits[k++] = char('0' + v % 10);
    while ((v /= 10) != 0);
    while (k) add(digits[--k]);
  }
  void add_hex_byte(unsigned char c) {
    static const char hex[] = "0123456789abcdef";
    add('\\');
    add('x');
    add(hex[c >> 4]);
    add(hex[c & 15]);
  }
  void add_escaped(unsigned char c) {
    if (c == '\\') {
      add("\\\\");
    } else if (c == '\n') {
      add("\\n");
    } else if (c >= 0x20 && c < 0x7f) {
      add(char(c));
    } else {
      add_hex_byte(c);
    }
  }
};

void put(const char* s) {
  for (std::size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(2, s, n);
    if (w <= 0) return;  // nothing more to do for a report that cannot be written
    s += w;
    n -= std::size_t(w);
  }
}

// How a finding is titled in its report, and named in its file.
struct KindNames {
  const char* title;
  const char* slug;
};

KindNames names_of(Finding kind) {
  switch (kind) {
    case Finding::kCrash:
      return {"CRASH", "crash"};
    case Finding::kHang:
      return {"HANG", "hang"};
    case Finding::kOutOfMemory:
      return {"OUT OF MEMORY", "oom"};
    case Finding::kUndocumentedException:
      return {"UNDOCUMENTED EXCEPTION", "exception"};
  }
  return {"FAILURE", "failure"};
}

const char* kind_name(Finding kind) { return names_of(kind).title; }
const char* kind_slug(Finding kind) { return names_of(kind).slug; }

// Saves the input as <artifacts>/<target>-<kind>-<hash>; writes the path into `path`.
bool save_input(Finding kind, const uint8_t* data, std::size_t size, char* path, std::size_t cap) {
  if (!artifacts_dir[0]) return false;
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a: the same input always gets the same name
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ULL;
  Text p(path, cap);
  p.add(artifacts_dir);
  p.add('/');
  const char* base = std::strrchr(target_name, '/');
  p.add(base ? base + 1 : target_name);
  p.add('-');
  p.add(kind_slug(kind));
  p.add('-');
  static const char hex[] = "0123456789abcdef";
  for (int s = 60; s >= 0; s -= 4) p.add(hex[(h >> s) & 15]);
  if (p.full()) return false;
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (std::size_t done = 0; done < size && ok;) {
    const ssize_t w = ::write(fd, data + done, size - done);
    ok = w > 0;
    if (ok) done += std::size_t(w);
  }
  return ::close(fd) == 0 && ok;
}

void on_signal(int sig) {
  if (sig == SIGALRM) report_finding(Finding::kHang, "ran past the per-input time limit (--timeout-s)", true);
  const char* what = sig == SIGSEGV   ? "signal SIGSEGV (a bad access; a stack overflow when the stack repeats)"
                     : sig == SIGBUS  ? "signal SIGBUS"
                     : sig == SIGILL  ? "signal SIGILL"
                     : sig == SIGFPE  ? "signal SIGFPE (an integer division by zero or overflow)"
                     : sig == SIGABRT ? "signal SIGABRT (a failed check, or an exception thrown where none may be)"
                                      : "a signal";
  report_finding(Finding::kCrash, what, true);
}

}  // namespace

void set_report_context(const char* name, const char* artifacts) {
  Text(target_name, sizeof target_name).add(name);
  Text(artifacts_dir, sizeof artifacts_dir).add(artifacts);
}

void set_current_input(const uint8_t* data, std::size_t size) {
  current_data = data;
  current_size = size;
}

void install_failure_handlers() {
  void* warm[2];
  backtrace(warm, 2);  // its first call loads libgcc (allocates): not in a signal handler
  stack_t ss{};
  ss.ss_sp = alternate_stack;
  ss.ss_size = sizeof alternate_stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM}) sigaction(sig, &sa, nullptr);
}

void describe_input(const uint8_t* data, std::size_t size, char* out, std::size_t cap) {
  Text t(out, cap);
  constexpr std::size_t kShown = 480;  // characters of the input's description, then "..."
  std::size_t i = 0;
  while (i < size && t.n < kShown && !t.full()) {
    // The shortest unit (1 to 8 bytes) that repeats here 8 times or more: shown once, with its count.
    std::size_t best_unit = 0, best_reps = 0;
    for (std::size_t unit = 1; unit <= 8 && i + unit <= size; ++unit) {
      std::size_t reps = 1;
      while (i + (reps + 1) * unit <= size && std::memcmp(data + i, data + i + reps * unit, unit) == 0) ++reps;
      if (reps >= 8 && reps * unit >= 16) {
        best_unit = unit;
        best_reps = reps;
        break;
      }
    }
    if (best_unit) {
      t.add('<');
      for (std::size_t k = 0; k < best_unit; ++k) t.add_escaped(data[i + k]);
      t.add(">{x");
      t.add_uint(best_reps);
      t.add('}');
      i += best_unit * best_reps;
    } else {
      t.add_escaped(data[i++]);
    }
  }
  if (i < size) t.add("...");
}

void report_finding(Finding kind, const char* detail, bool stack) {
  if (reporting) _exit(int(kind));  // a second failure while reporting the first
  reporting = 1;
  alarm(0);
  const uint8_t* data = current_data;
  const std::size_t size = current_size;
  static char line[4096], described[1024], path[2600];
  Text t(line, sizeof line);
  t.add(target_name);
  t.add(": ");
  t.add(kind_name(kind));
  t.add(": ");
  t.add(detail);
  t.add("\n  input (");
  t.add_uint(size);
  t.add(" bytes): ");
  describe_input(data, size, described, sizeof described);
  t.add(described);
  t.add('\n');
  if (data && save_input(kind, data, size, path, sizeof path)) {
    t.add("  saved to ");
    t.add(path);
    t.add("; run it again with: ");
    t.add(target_name);
    t.add(' ');
    t.add(path);
    t.add('\n');
  }
  put(line);
  if (stack) {
    put("  stack:\n");
    void* frames[48];
    backtrace_symbols_fd(frames, backtrace(frames, 48), 2);
  }
  _exit(int(kind));
}

}  // namespace opcost::fuzz
