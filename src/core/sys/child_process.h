#pragma once
// A child process whose standard output is read line by line (the sweep's worker), and how it
// ended, in words. Torch-free.
#include <sys/types.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace opcost {

class ChildProcess {
 public:
  // Starts argv[0] (a path, or a name looked up in $PATH) with argv; its standard error is this process's. Throws
  // std::runtime_error naming the program when it cannot be started.
  explicit ChildProcess(const std::vector<std::string>& argv);
  ~ChildProcess();  // kills a child still running, and reaps it
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // The next line of its output, without the newline; none once it has closed its output.
  std::optional<std::string> read_line();
  // Waits for it to end; "" when it exited with status 0, else how it ended ("exited with
  // status 3", "was killed by signal 9 (Killed)").
  std::string wait();
  int signal() const { return signal_; }  // after wait(): the signal that ended it, else 0

 private:
  pid_t pid_ = -1;
  std::FILE* out_ = nullptr;
  bool reaped_ = false;
  std::string ended_;
  int signal_ = 0;
};

// Whether a process of this host with this pid still runs.
bool process_alive(pid_t pid);
std::string host_name();

}  // namespace opcost
