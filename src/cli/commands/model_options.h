#pragma once
// The options every command that runs a model takes (trace, inventory, predict, validate, model).
#include <CLI/CLI.hpp>

#include "workflow/model_inventory.h"

namespace opcost {

void add_model_options(CLI::App& cmd, ModelOptions& m);

}  // namespace opcost
