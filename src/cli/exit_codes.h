#pragma once
// The exit status of every opcost command (README, "Exit status").
namespace opcost {

enum ExitCode : int {
  kExitSuccess = 0,
  // Some measurements failed (an error inside the op, abandoned, the database stopped taking
  // rows); everything else was measured, printed and stored.
  kExitMeasurementFailed = 1,
  // Bad input: the command line, a spec entry or a model that cannot be run as given. A spec
  // file's other entries are still measured.
  kExitBadInput = 2,
  // predict / validate: some signatures have no measurement, so the prediction is partial.
  kExitIncomplete = 3,
};

}  // namespace opcost
