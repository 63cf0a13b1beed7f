#pragma once
// Ctrl-C where the process lives on. The command line keeps SIGINT's default action (the
// process ends at once; each stored row is its own transaction, so what was stored stays).
// The Python package cannot: Python's handler only sets a flag, and the interpreter (a
// notebook, a script's `except KeyboardInterrupt`) must live on. So a face installs a check,
// long loops call stop_if_interrupted() between calls, and a check that says yes unwinds the
// run with Interrupted: the measurement in progress is dropped, nothing more is measured.
// Torch-free.

namespace opcost {

// Not a std::exception, on purpose: workflows catch std::exception to note one operator's
// failure and go on with the next; an interruption must pass every such handler and end the
// run (cleanup written as `catch (...) { ...; throw; }` still runs).
struct Interrupted {};

// Says whether the user asked to stop. Called often, between measured calls: it must be cheap.
using InterruptCheck = bool (*)();

// Installs the check for the whole process (nullptr: none, the default).
void set_interrupt_check(InterruptCheck check);

// Throws Interrupted when the installed check says so.
void stop_if_interrupted();

}  // namespace opcost
