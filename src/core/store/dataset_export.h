#pragma once
// A database as a dataset: one row per measurement, and for the rows a sweep made, the sweep's
// name and one column per axis (`axis_<name>`: a grid's axis may be called `dtype`, which is
// also a measured column). Torch-free.
#include <string>

namespace opcost {

class Database;
class OutputFile;

enum class ExportFormat { kCsv, kJson };

// `sweep`: only that sweep's rows ("" for every row; rows from no sweep get empty axes).
// Throws std::invalid_argument for a sweep the database does not have.
void export_dataset(Database& db, ExportFormat format, OutputFile& out, const std::string& sweep = "");

}  // namespace opcost
