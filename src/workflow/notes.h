#pragma once
// How a workflow talks while it runs: notes on what it is doing or fell back to, errors it
// went past, and the status line of a long measurement. The CLI prints them on standard
// error; another face (the Python package) routes them where its users look. Torch-free.
#include <functional>
#include <memory>
#include <string>

#include "core/measure/watchdog.h"
#include "core/text/text.h"

namespace opcost {

struct Notes {
  std::function<void(const std::string&)> note;   // "measuring the whole step of resnet50 ..."
  std::function<void(const std::string&)> error;  // a failure the run went past
  ProgressFn progress;                            // status of a measurement past a few seconds
  std::function<void()> progress_done;            // the measurement ended: clear its status

  void say(const std::string& text) const {
    if (note) note(text);
  }
  // Cut to a few lines' worth, keeping both ends (the call and the reason): a failing call of
  // a list of hundreds of tensors (an optimizer's foreach ops) must not flood the terminal.
  void failed(const std::string& text) const {
    if (error) error(elide(text, 2000));
  }
  void done() const {
    if (progress_done) progress_done();
  }

  // "opcost: ..." and "opcost: error: ..." lines on standard error, with a status line
  // (rewritten in place on a terminal, plain lines otherwise).
  static Notes to_stderr();
};

}  // namespace opcost
