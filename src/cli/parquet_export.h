#pragma once
// `opcost db export --parquet FILE`: the dataset's CSV, converted by pyarrow. Debian 12 has no
// Arrow C++ package, and linking the C++ library that a pyarrow wheel bundles would tie this
// binary to one wheel's ABI and some 60 MB of libraries; the people who read Parquet have
// pyarrow already (docs/sweeps.md, "Export").
#include <functional>
#include <string>

namespace opcost {

class OutputFile;

// Writes the CSV through `write_csv` to a file beside `path`, converts it with the Python of
// $OPCOST_PYTHON (else python3 on the PATH) and removes it. Throws std::invalid_argument saying
// what is missing (Python, pyarrow) and the fix, std::runtime_error when the conversion fails.
void export_parquet(const std::string& path, const std::function<void(OutputFile&)>& write_csv);

}  // namespace opcost
