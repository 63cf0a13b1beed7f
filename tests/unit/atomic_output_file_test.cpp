// Files in and out: atomic output, bounded input.
#include "core/io/atomic_output_file.h"
#include "core/io/input_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace opcost;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("opcost-atomic-{}-{}", name, getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t entries(const fs::path& d) { return std::distance(fs::directory_iterator(d), fs::directory_iterator()); }

}  // namespace

TEST(AtomicOutputFile, ReplacesThePathOnlyWhenCommitted) {
  const fs::path d = fresh_dir("commit");
  const fs::path p = d / "out.csv";
  std::ofstream(p) << "old";
  {
    AtomicOutputFile out(p.string());
    out.file().write("new, half written");
    EXPECT_EQ(read(p), "old");  // nothing reaches the path before commit
  }                             // an error path: no commit
  EXPECT_EQ(read(p), "old");
  EXPECT_EQ(entries(d), 1u) << "the temporary file is removed";
  AtomicOutputFile out(p.string());
  out.file().write("new");
  out.commit();
  EXPECT_EQ(read(p), "new");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicOutputFile, FollowsALinkAndWritesDevicesInPlace) {
  const fs::path d = fresh_dir("link");
  std::ofstream(d / "real.json") << "old";
  fs::create_symlink("real.json", d / "link.json");
  write_file_atomically((d / "link.json").string(), "new");
  EXPECT_TRUE(fs::is_symlink(d / "link.json")) << "the link stays a link";
  EXPECT_EQ(read(d / "real.json"), "new");
  write_file_atomically("/dev/null", "discarded");  // never replaced by a regular file
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_THROW(AtomicOutputFile((d / "no/such/dir/x").string()), WriteError);
  fs::remove_all(d);
}

TEST(AtomicOutputFile, AnOutputThatIsAnInputIsRefusedByIdentity) {
  const fs::path d = fresh_dir("identity");
  const fs::path db = d / "ops.db";
  std::ofstream(db) << "rows";
  fs::create_symlink(db, d / "link.db");
  fs::create_hard_link(db, d / "hard.db");
  for (const fs::path& out : {db, d / "link.db", d / "hard.db", d / "." / "ops.db"})
    EXPECT_THROW(check_output_not_input(out.string(), "-o", {{db.string(), "the database"}}), std::invalid_argument)
        << out;
  EXPECT_NO_THROW(check_output_not_input((d / "new.csv").string(), "-o", {{db.string(), "the database"}}));
  EXPECT_NO_THROW(check_output_not_input(db.string(), "-o", {{"postgresql://u@h/db", "the database"}}));
  EXPECT_NO_THROW(check_output_not_input("-", "-o", {{db.string(), "the database"}}));
  fs::remove_all(d);
}

TEST(InputFile, AFileOverItsBoundIsRefusedNamingItTheBoundAndTheFix) {
  const fs::path dir = fresh_dir("input");
  const std::string path = (dir / "grid.yaml").string();
  {
    std::ofstream out(path);
    out << std::string(3u << 20, 'x');  // 3 MiB
  }
  EXPECT_EQ(opcost::read_text_file(path, "the grid file").size(), std::size_t{3} << 20);  // under the default
  try {
    opcost::read_text_file(path, "the grid file", std::size_t{2} << 20, "split it");
    FAIL() << "read past its bound";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), (path + ": the grid file is larger than 2 MiB: split it").c_str());
  }
  EXPECT_THROW(opcost::read_text_file((dir / "missing.yaml").string(), "the grid file"), std::invalid_argument);
  fs::remove_all(dir);
}
