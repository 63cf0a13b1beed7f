#include "cli/parquet_export.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "core/io/atomic_output_file.h"
#include "core/io/output_file.h"
#include "core/sys/child_process.h"

namespace opcost {

namespace {

// Reads the CSV with every column's type inferred over the whole file (a column empty in the
// first rows is still numeric), writes Parquet, and says why when it cannot.
constexpr const char* kConvert = R"py(
import sys
try:
    import pyarrow.csv as csv, pyarrow.parquet as pq
except ImportError:
    print("pyarrow is not installed in " + sys.executable + " (pip install pyarrow, or set OPCOST_PYTHON)")
    sys.exit(3)
table = csv.read_csv(sys.argv[1], read_options=csv.ReadOptions(block_size=1 << 30))
pq.write_table(table, sys.argv[2])
print(f"{table.num_rows} rows, {table.num_columns} columns")
)py";

}  // namespace

void export_parquet(const std::string& path, const std::function<void(OutputFile&)>& write_csv) {
  if (path.empty() || path == "-")
    throw std::invalid_argument(
        "--parquet needs a file (--parquet ops.parquet): Parquet is not written to standard output");
  // pyarrow writes a temporary file beside `path`, renamed onto it only once the conversion
  // succeeded: a failed export leaves the old file as it was and no partial one.
  AtomicOutputFile parquet(path);
  const std::string csv_path = parquet.temp_path() + ".csv";
  struct Remove {
    std::string p;
    ~Remove() {
      std::error_code ec;
      std::filesystem::remove(p, ec);
    }
  } remove{csv_path};
  {
    OutputFile csv(csv_path, path);
    write_csv(csv);
    csv.close();
  }
  const char* env = std::getenv("OPCOST_PYTHON");
  const std::string python = env && *env ? env : "python3";
  std::string said;
  std::string ended;
  try {
    ChildProcess convert({python, "-c", kConvert, csv_path, parquet.temp_path()});
    while (auto line = convert.read_line()) said += (said.empty() ? "" : "; ") + *line;
    ended = convert.wait();
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(
        fmt::format("--parquet: {} (Parquet is written by pyarrow: set OPCOST_PYTHON to a Python "
                    "that has it, or use --csv)",
                    e.what()));
  }
  if (ended == "exited with status 3")  // no pyarrow: the fix is the user's
    throw std::invalid_argument(fmt::format("--parquet {}: {}", path, said));
  if (!ended.empty())
    throw std::runtime_error(
        fmt::format("--parquet {}: {} {}{}", path, python, ended, said.empty() ? "" : fmt::format(": {}", said)));
  parquet.commit();
}

}  // namespace opcost
