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

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::pair<std::string, std::string>>& env) {
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
  // This environment, with `env` replacing or adding its names.
  std::vector<std::string> entries;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [n, v] : env) replaced = replaced || n == name;
    if (!replaced) entries.push_back(entry);
  }
  for (const auto& [n, v] : env) entries.push_back(n + "=" + v);
  std::vector<char*> envp;
  for (auto& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = posix_spawnp(&pid_, argv[0].c_str(), &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw std::runtime_error(fmt::format("cannot start {}: {}", argv[0], std::strerror(rc)));
  }
  fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    wait();
  }
  if (fd_ >= 0) close(fd_);
}

bool ChildProcess::fill() {
  if (fd_ < 0) return false;
  char chunk[4096];
  ssize_t n;
  do n = read(fd_, chunk, sizeof chunk);
  while (n < 0 && errno == EINTR);
  if (n <= 0) {
    close(fd_);
    fd_ = -1;
    return false;
  }
  buffer_.append(chunk, std::size_t(n));
  return true;
}

std::optional<std::string> ChildProcess::read_line() {
  while (true) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (!fill()) break;
  }
  if (buffer_.empty()) return std::nullopt;
  std::string last;
  last.swap(buffer_);
  return last;  // the last line, without its newline
}

std::vector<std::string> ChildProcess::read_available_lines() {
  const bool more = fill();
  std::vector<std::string> lines;
  for (std::size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
    lines.push_back(buffer_.substr(0, nl));
    buffer_.erase(0, nl + 1);
  }
  if (!more && !buffer_.empty()) {
    lines.push_back(buffer_);
    buffer_.clear();
  }
  return lines;
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
