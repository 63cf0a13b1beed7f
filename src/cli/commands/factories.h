#pragma once
// The commands of the command table (cli/command_table.cpp), one file each under cli/commands/.
#include <memory>

#include "cli/command.h"

namespace opcost {

std::unique_ptr<Command> make_measure_command();
std::unique_ptr<Command> make_sweep_command();
std::unique_ptr<Command> make_db_command();
std::unique_ptr<Command> make_trace_command();
std::unique_ptr<Command> make_inventory_command();
// predict, validate and model share their options; each sets what it measures.
std::unique_ptr<Command> make_predict_command();
std::unique_ptr<Command> make_validate_command();
std::unique_ptr<Command> make_model_command();
std::unique_ptr<Command> make_models_command();
std::unique_ptr<Command> make_report_command();
std::unique_ptr<Command> make_compare_command();
// The cost model (issue 26): fitted from the database (in Python), and its estimates.
std::unique_ptr<Command> make_fit_command();
std::unique_ptr<Command> make_estimate_command();

}  // namespace opcost
