#pragma once
// A child process whose standard output is read line by line (the sweep's workers, pyarrow's
// conversion), and how it ended, in words. Torch-free.
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace opcost {

class ChildProcess {
 public:
  // Starts argv[0] (a path, or a name looked up in $PATH) with argv and this process's
  // environment plus `env` (NAME, value); its standard error is this process's. Throws
  // std::runtime_error naming the program when it cannot be started.
  explicit ChildProcess(const std::vector<std::string>& argv,
                        const std::vector<std::pair<std::string, std::string>>& env = {});
  ~ChildProcess();  // kills a child still running, and reaps it
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Its output's file descriptor, for poll(); -1 once the output is closed.
  int output_fd() const { return fd_; }
  // The next line of its output, without the newline, waiting for it; none once it has
  // closed its output.
  std::optional<std::string> read_line();
  // The lines that are complete after one read of what is there (call when poll() says the
  // output is readable); at the end of the output, the last unterminated line too.
  std::vector<std::string> read_available_lines();
  // Waits for it to end; "" when it exited with status 0, else how it ended ("exited with
  // status 3", "was killed by signal 9 (Killed)").
  std::string wait();
  int signal() const { return signal_; }  // after wait(): the signal that ended it, else 0

 private:
  bool fill();  // one read into the buffer; false at the end of the output
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
  bool reaped_ = false;
  std::string ended_;
  int signal_ = 0;
};

// Whether a process of this host with this pid still runs (a zombie does not).
bool process_alive(pid_t pid);
std::string host_name();

}  // namespace opcost
