#include "workflow/notes.h"

#include <fmt/format.h>

#include "core/report/progress.h"
#include "core/text/text.h"

namespace opcost {

Notes Notes::to_stderr() {
  auto line = std::make_shared<ProgressLine>(stderr);
  Notes n;
  n.note = [line](const std::string& text) {
    line->clear();
    fmt::print(stderr, "opcost: {}\n", text);
  };
  n.error = [line](const std::string& text) {
    line->clear();
    fmt::print(stderr, "opcost: error: {}\n", user_message(text));
  };
  n.progress = [line](const std::string& text) { line->update(text); };
  n.progress_done = [line] { line->clear(); };
  return n;
}

}  // namespace opcost
