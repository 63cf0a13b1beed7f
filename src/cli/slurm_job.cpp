#include "cli/slurm_job.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "cli/exit_codes.h"
#include "core/spec/arg_value.h"
#include "core/spec/cache_mode.h"
#include "core/spec/device_spec.h"
#include "core/store/database.h"
#include "core/sys/child_process.h"
#include "core/text/text.h"

namespace opcost {

namespace {

// The variable that carries the database to every task (and that opcost reads without --db).
constexpr const char* kDatabaseEnv = "OPCOST_DB";

// User input as a message echoes it: cut (a huge value never makes a huge message) and on
// one line (control characters as \xNN).
std::string shown(const std::string& text, std::size_t max_chars = 80) {
  return printable(elide(text, max_chars), false);
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./=:,@%") ==
          std::string::npos)
    return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The sweep file's name as the job's name and in its files' names: letters, digits, '.', '_'
// and '-' only (Slurm expands '%' in --output; a newline would end the #SBATCH line and run the
// rest as a command), at most 64 of them.
std::string job_label(const std::string& file) {
  std::string label;
  for (const char c : std::filesystem::path(file).stem().string())
    label += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  if (label.size() > 64) label.resize(64);
  return label.empty() ? "sweep" : label;
}

// An --sbatch-option becomes a #SBATCH line as it is (the user's own sbatch option), so it must
// be one: sbatch reads the header line by line, and whatever follows a newline is a shell
// command. Refused, never escaped.
void check_sbatch_option(const std::string& option) {
  const bool control = std::any_of(option.begin(), option.end(),
                                   [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (control)
    throw std::invalid_argument(fmt::format(
        "--sbatch-option '{}' holds a newline or another control character: a #SBATCH line ends there and the rest "
        "would run as a shell command; give each sbatch option on one line (repeat --sbatch-option for more)",
        shown(option)));
  if (option.rfind("-", 0) != 0)
    throw std::invalid_argument(
        fmt::format("--sbatch-option '{}' is not an sbatch option: give one such as --sbatch-option=--partition=gpu",
                    shown(option)));
  const std::string name = option.substr(0, option.find('='));
  const std::string value = name == option ? "" : option.substr(name.size() + 1);
  if (name == "--export" && value.find("ALL") == std::string::npos && value.find(kDatabaseEnv) == std::string::npos)
    throw std::invalid_argument(fmt::format(
        "--sbatch-option '{}': the tasks get the database from the environment sbatch exports ($OPCOST_DB, never "
        "written in the script); keep ALL or name OPCOST_DB, e.g. --export=ALL",
        shown(option)));
}

// --device, --cache and --autocast as each task will parse them, checked before anything is
// written: a value no task can use fails here, once, not in every task of the array.
void check_task_options(const MeasureOptions& m) {
  // Parsed as the tasks parse them (core/spec): one rule, refused here with the --slurm reason.
  DeviceSpec device;
  try {
    device = parse_device_spec(m.replay.device);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(
        fmt::format("--slurm --device '{}': use auto, cpu or cuda (each task's one GPU)", shown(m.replay.device)));
  }
  if (device.index && *device.index != 0)
    throw std::invalid_argument(
        fmt::format("--slurm --device {}: each task sees only the one GPU Slurm gives it (cuda:0): give --device cuda",
                    m.replay.device));
  try {
    parse_cache_mode(m.replay.cache_mode);
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument(
        fmt::format("--slurm --cache '{}': use warm, cold or cold:ARG,... (the names of the op's arguments)",
                    shown(m.replay.cache_mode)));
  }
  if (!m.replay.autocast.empty()) {
    const auto code = canonical_dtype(m.replay.autocast);
    if (!code || (*code != "bf16" && *code != "f16"))
      throw std::invalid_argument(fmt::format("--slurm --autocast '{}': use bf16 or fp16", shown(m.replay.autocast)));
  }
}

// The task's command: the given one without what only the submission means (--slurm and its
// options, --dry-run, --workers) and without --db (the database reaches the task as $OPCOST_DB,
// never in the script), every other word in its place. The script changes to the directory
// of the submission first, so the sweep file and other relative paths name what they named
// here: nothing is rewritten, so no value can be mistaken for the file.
std::vector<std::string> task_command(const std::vector<std::string>& argv, const std::string& self) {
  std::vector<std::string> out =
      command_without(argv, {"--db", "--array", "--sbatch-option", "--workers"}, {"--slurm", "--dry-run"});
  out[0] = self;
  out.push_back("--workers");
  out.push_back("1");
  return out;
}

// The script, 0600 (it holds no password; a job script is still its owner's own): written whole
// to a fresh file beside its name (mkstemp: 0600, never an existing file or a planted link),
// every write checked, then renamed over the name.
void write_private_file(const std::string& path, const std::string& text) {
  std::string temporary = path + ".XXXXXX";
  const int fd = mkstemp(temporary.data());
  if (fd < 0) throw std::runtime_error(fmt::format("--slurm: cannot write {}: {}", path, std::strerror(errno)));
  auto fail = [&](const char* what, int err) {
    close(fd);
    unlink(temporary.c_str());
    throw std::runtime_error(fmt::format("--slurm: cannot write {}: {}: {}", path, what, std::strerror(err)));
  };
  for (std::size_t at = 0; at < text.size();) {
    const ssize_t n = write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write", n < 0 ? errno : EIO);
    at += std::size_t(n);
  }
  if (fsync(fd) != 0) fail("fsync", errno);
  if (close(fd) != 0) {
    const int err = errno;
    unlink(temporary.c_str());
    throw std::runtime_error(fmt::format("--slurm: cannot write {}: close: {}", path, std::strerror(err)));
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(temporary.c_str());
    throw std::runtime_error(fmt::format("--slurm: cannot write {}: rename: {}", path, std::strerror(err)));
  }
}

}  // namespace

std::string slurm_sweep_script(const SweepCliOptions& o, const std::vector<std::string>& argv,
                               const std::string& self) {
  if (!is_postgres_url(o.measure.db))
    throw std::invalid_argument(fmt::format(
        "--slurm: --db {} is a SQLite file, and the tasks on other nodes need one database they all reach: give "
        "--db postgresql://USER@HOST/DBNAME (docs/sweeps.md)",
        shown(o.measure.db, 200)));
  if (o.force || o.retry_failed)
    throw std::invalid_argument(fmt::format(
        "--slurm with {}: every task would reset the sweep while the others measure it; run `opcost sweep {} --db "
        "… {} --workers 1` on one GPU node first, then submit without it",
        o.force ? "--force" : "--retry-failed", shown(o.file, 200), o.force ? "--force" : "--retry-failed"));
  for (const auto& extra : o.sbatch_options) check_sbatch_option(extra);
  check_task_options(o.measure);
  const std::string label = job_label(o.file);
  const bool gpu = o.measure.replay.device != "cpu";
  std::string cwd;
  try {
    cwd = std::filesystem::current_path().string();
  } catch (const std::filesystem::filesystem_error& e) {
    throw std::runtime_error(fmt::format("--slurm: the current directory: {}", e.what()));
  }
  // Comments show user input through printable() (control characters as \xNN): one line each.
  std::string script = "#!/bin/bash\n";
  script += fmt::format("# opcost sweep {} as a Slurm job array: each task is one worker on one {}.\n",
                        printable(o.file, false), gpu ? "GPU" : "CPU");
  script += "# Written by `opcost sweep … --slurm`; every task shares the queue in the database.\n";
  script += fmt::format(
      "# The database ({}) reaches each task as $OPCOST_DB, from the environment sbatch exports: never written here.\n",
      printable(display_location(o.measure.db), false));
  script += fmt::format("#SBATCH --job-name=opcost-{}\n", label);
  script += fmt::format("#SBATCH --array=0-{}\n", o.slurm_tasks - 1);
  script += "#SBATCH --ntasks=1\n";
  if (gpu) script += "#SBATCH --gres=gpu:1\n";
  // Relative: Slurm opens it in the job's working directory, the submission's.
  script += fmt::format("#SBATCH --output=opcost-{}-%A_%a.log\n", label);
  for (const auto& extra : o.sbatch_options) script += fmt::format("#SBATCH {}\n", extra);
  script += "set -euo pipefail\n";
  script += fmt::format(
      "if [ -z \"${{{0}:-}}\" ]; then\n"
      "  echo \"opcost: \\${0} is not set in this task: the database reaches the tasks through the environment "
      "sbatch exports (its default --export=ALL), never through this file; submit with {0}=postgresql://… sbatch "
      "SCRIPT\" >&2\n"
      "  exit 2\n"
      "fi\n",
      kDatabaseEnv);
  script += "cd " + shell_quote(cwd) + "\n";
  std::string command;
  for (const auto& word : task_command(argv, self)) command += (command.empty() ? "" : " ") + shell_quote(word);
  script += "exec " + command + "\n";
  return script;
}

int run_slurm_sweep(const SweepCliOptions& o, const std::vector<std::string>& argv, const std::string& self) {
  const std::string script = slurm_sweep_script(o, argv, self);
  if (o.dry_run) {
    fmt::print("{}", script);
    return kExitSuccess;
  }
  // The database is reachable and has the tables before any task starts.
  Database check(o.measure.db);
  const std::string path = fmt::format("opcost-{}.sbatch", job_label(o.file));
  write_private_file(path, script);
  // The tasks' database: in sbatch's environment, which Slurm hands to every task; neither on
  // sbatch's command line nor in the script.
  const std::vector<std::pair<std::string, std::string>> env = {{kDatabaseEnv, o.measure.db}};
  const std::string kept = fmt::format(
      "{} is kept, without the password: `OPCOST_DB=postgresql://… sbatch {}` submits it (--dry-run prints it)", path,
      path);
  std::optional<ChildProcess> started;
  try {
    started.emplace(std::vector<std::string>{"sbatch", "--parsable", path}, env);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(
        fmt::format("--slurm: {} (is this a Slurm login node, with sbatch on PATH?); {}", e.what(), kept));
  }
  ChildProcess& sbatch = *started;
  std::string out;
  while (const auto line = sbatch.read_line()) out += *line + "\n";
  const std::string ended = sbatch.wait();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (!ended.empty()) {
    std::replace(out.begin(), out.end(), '\n', ' ');  // sbatch's lines, in our one line
    throw std::runtime_error(fmt::format("--slurm: sbatch {} {}{}{} (is this a Slurm login node?); {}", path, ended,
                                         out.empty() ? "" : ": ", shown(out, 400), kept));
  }
  fmt::print(stderr, "opcost: submitted {} as Slurm job {} ({} tasks); `opcost sweep status {} --db …` follows it\n",
             path, shown(out), o.slurm_tasks, shown(o.file, 200));
  return kExitSuccess;
}

}  // namespace opcost
