#pragma once
// The reporters of each format (reporter.h's make_reporter chooses among them).
#include <memory>

#include "workflow/reporters/reporter.h"

namespace opcost {

std::unique_ptr<Reporter> make_text_reporter();
std::unique_ptr<Reporter> make_json_reporter();

}  // namespace opcost
