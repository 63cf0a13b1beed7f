#pragma once
// Spec files: many operator calls in one YAML or JSON file (JSON is read as YAML).
//
//   ops:
//     - op: aten::conv2d
//       args: {input: "f32[32,64,56,56]", weight: "f32[64,64,3,3]", padding: [1, 1]}
//     - "aten::relu self=f32[32,64,56,56]"     # the command-line form also works
//
// A top-level list is accepted as the `ops` list. Errors name the file, line and entry.
#include <string>
#include <vector>

#include "core/spec/op_call.h"

namespace opcost {

// A spec file's entries: those that parse, and one message per entry that does not (with
// its file, line and index), so that every bad entry is reported at once and the good ones
// still run.
struct SpecEntries {
  std::vector<OpCall> calls;
  std::vector<std::string> errors;
};

// Throws std::invalid_argument only for what spoils the whole file: it cannot be read, is
// not YAML/JSON, or lists no operators.
SpecEntries load_spec_file(const std::string& path);
SpecEntries parse_spec_text(const std::string& text, const std::string& origin);

// Splits a one-line call ("aten::relu self=f32[4]") into the op name and argument tokens,
// keeping brackets together.
std::vector<std::string> split_call_line(const std::string& line);

// One call as written on a command line or in an inventory ("aten::conv2d input=f32[1,3,8,8]
// padding=[1]"); errors are prefixed with `origin`.
OpCall parse_call_line(const std::string& line, const std::string& origin);

}  // namespace opcost
