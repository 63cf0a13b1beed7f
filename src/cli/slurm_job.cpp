#include "cli/slurm_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "cli/exit_codes.h"
#include "core/io/output_file.h"
#include "core/store/database.h"
#include "core/sys/child_process.h"

namespace opcost {

namespace {

std::string shell_quote(const std::string& word) {
  if (!word.empty() &&
      word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+./=:,@%") ==
          std::string::npos)
    return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The task's command: the given one without what only the submission means (--slurm and its
// options, --dry-run, --workers), the sweep file made absolute (tasks start elsewhere), and the
// database named even when it came from $OPCOST_DB.
std::vector<std::string> task_command(const SweepCliOptions& o, const std::vector<std::string>& argv,
                                      const std::string& self) {
  const std::vector<std::string> with_value = {"--array", "--sbatch-option", "--workers"};
  const std::vector<std::string> flags = {"--slurm", "--dry-run"};
  std::vector<std::string> out{self};
  bool has_db = false, file_done = false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    const std::string name = a.substr(0, a.find('='));
    if (std::find(flags.begin(), flags.end(), a) != flags.end()) continue;
    if (std::find(with_value.begin(), with_value.end(), name) != with_value.end()) {
      if (name == a) ++i;  // the value is the next word
      continue;
    }
    if (name == "--db") has_db = true;
    if (!file_done && a == o.file) {
      out.push_back(std::filesystem::absolute(a).lexically_normal().string());
      file_done = true;
      continue;
    }
    out.push_back(a);
  }
  if (!has_db) {
    out.push_back("--db");
    out.push_back(o.measure.db);
  }
  out.push_back("--workers");
  out.push_back("1");
  return out;
}

}  // namespace

std::string slurm_sweep_script(const SweepCliOptions& o, const std::vector<std::string>& argv,
                               const std::string& self) {
  if (!is_postgres_url(o.measure.db))
    throw std::invalid_argument(fmt::format(
        "--slurm: --db {} is a SQLite file, and the tasks on other nodes need one database they all reach: give "
        "--db postgresql://USER@HOST/DBNAME (docs/sweeps.md)",
        o.measure.db));
  if (o.force || o.retry_failed)
    throw std::invalid_argument(fmt::format(
        "--slurm with {}: every task would reset the sweep while the others measure it; run `opcost sweep {} --db "
        "… {} --workers 1` on one GPU node first, then submit without it",
        o.force ? "--force" : "--retry-failed", o.file, o.force ? "--force" : "--retry-failed"));
  const std::string name = std::filesystem::path(o.file).stem().string();
  const bool gpu = o.measure.replay.device != "cpu";
  std::string script = "#!/bin/bash\n";
  script += fmt::format("# opcost sweep {} as a Slurm job array: each task is one worker on one {}.\n", o.file,
                        gpu ? "GPU" : "CPU");
  script += "# Written by `opcost sweep … --slurm`; every task shares the queue in the database.\n";
  script += fmt::format("#SBATCH --job-name=opcost-{}\n", name);
  script += fmt::format("#SBATCH --array=0-{}\n", o.slurm_tasks - 1);
  script += "#SBATCH --ntasks=1\n";
  if (gpu) script += "#SBATCH --gres=gpu:1\n";
  script += fmt::format("#SBATCH --output={}\n",
                        (std::filesystem::current_path() / fmt::format("opcost-{}-%A_%a.log", name)).string());
  for (const auto& extra : o.sbatch_options) script += fmt::format("#SBATCH {}\n", extra);
  script += "set -euo pipefail\n";
  std::string command;
  for (const auto& word : task_command(o, argv, self)) command += (command.empty() ? "" : " ") + shell_quote(word);
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
  const std::string path = fmt::format("opcost-{}.sbatch", std::filesystem::path(o.file).stem().string());
  OutputFile file(path);
  file.write(script);
  file.close();
  std::optional<ChildProcess> started;
  try {
    started.emplace(std::vector<std::string>{"sbatch", "--parsable", path});
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format(
        "--slurm: {} (is this a Slurm login node, with sbatch on PATH? --dry-run prints the script)", e.what()));
  }
  ChildProcess& sbatch = *started;
  std::string out;
  while (const auto line = sbatch.read_line()) out += *line + "\n";
  const std::string ended = sbatch.wait();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (!ended.empty()) {
    std::replace(out.begin(), out.end(), '\n', ' ');  // sbatch's lines, in our one line
    throw std::runtime_error(
        fmt::format("--slurm: sbatch {} {}{}{} (is this a Slurm login node? --dry-run prints the "
                    "script)",
                    path, ended, out.empty() ? "" : ": ", out));
  }
  fmt::print(stderr, "opcost: submitted {} as Slurm job {} ({} tasks); `opcost sweep status {} --db …` follows it\n",
             path, out, o.slurm_tasks, o.file);
  return kExitSuccess;
}

}  // namespace opcost
