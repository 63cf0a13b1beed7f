#include "core/sys/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>

extern char** environ;

namespace opcost {

ChildProcess::ChildProcess(const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::invalid_argument("ChildProcess: no program given");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("cannot start {}: pipe: {}", argv[0], std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawnp(&pid_, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  out_ = fdopen(fds[0], "r");
  if (!out_) {
    close(fds[0]);
    kill(pid_, SIGKILL);
    wait();
    throw std::runtime_error(fmt::format("cannot read from {}: {}", argv[0], std::strerror(errno)));
  }
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    wait();
  }
  if (out_) std::fclose(out_);
}

std::optional<std::string> ChildProcess::read_line() {
  if (!out_) return std::nullopt;
  std::string line;
  for (int c; (c = std::fgetc(out_)) != EOF;) {
    if (c == '\n') return line;
    line += char(c);
  }
  if (line.empty()) return std::nullopt;
  return line;  // the last line, without its newline
}

std::string ChildProcess::wait() {
  if (reaped_) return ended_;
  int status = 0;
  pid_t r;
  do r = waitpid(pid_, &status, 0);
  while (r < 0 && errno == EINTR);
  reaped_ = true;
  if (r < 0)
    ended_ = fmt::format("could not be waited for: {}", std::strerror(errno));
  else if (WIFEXITED(status))
    ended_ = WEXITSTATUS(status) == 0 ? "" : fmt::format("exited with status {}", WEXITSTATUS(status));
  else if (WIFSIGNALED(status) && (signal_ = WTERMSIG(status)))
    ended_ = fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    ended_ = "ended in an unknown way";
  return ended_;
}

bool process_alive(pid_t pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
  // A killed process stays a zombie until its parent (or init) reaps it: that is not alive.
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');  // the state follows the command name, which may hold spaces
  if (close == std::string::npos || close + 2 >= text.size()) return true;
  const char state = text[close + 2];
  return state != 'Z' && state != 'X';
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace opcost
