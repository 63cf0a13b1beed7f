// opcost: what every PyTorch operator costs, in time and energy. The commands are in the
// command table (cli/command_table.cpp), one file each under cli/commands/.
#include "cli/command_line.h"

int main(int argc, char** argv) { return opcost::run_command_line(argc, argv); }
