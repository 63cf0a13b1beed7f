#pragma once
// `opcost db copy FROM TO`: every measurement and the sweeps' state of one database into
// another, across engines (a local SQLite file into the team's PostgreSQL, and back). Rows get
// new ids in the destination; the sweeps' items follow them. Copying again adds only what is
// new: a row already there is recognised by its result document and moment. Torch-free.
#include <cstddef>
#include <functional>

namespace opcost {

class Database;

struct CopyCounts {
  std::size_t rows_added = 0, rows_present = 0;  // measurements
  std::size_t items = 0;                         // sweep items written or updated
  std::size_t memberships = 0;                   // (sweep, item) pairs
};

// `progress` hears of each measurement copied (rows so far).
CopyCounts copy_database(const Database& from, Database& to, const std::function<void(std::size_t)>& progress = {});

}  // namespace opcost
