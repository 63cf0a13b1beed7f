#pragma once
// A file that replaces its path only when it is complete: written to a temporary file in the
// same directory (so that the final rename is atomic) and renamed onto the path by commit().
// A failed or interrupted write leaves no partial file and the old file untouched. Any writer
// can fill it: file() (an OutputFile), or another writer or process given temp_path() (a
// GzipFile, pyarrow). Torch-free.
#include <optional>
#include <string>
#include <vector>

#include "core/io/output_file.h"

namespace opcost {

class AtomicOutputFile {
 public:
  // "" or "-": standard output, written directly. An existing path that is no regular file (a
  // device such as /dev/null, a pipe) is written in place too: it cannot be replaced. A
  // symbolic link is followed: the file it names is replaced, the link stays. Throws WriteError
  // when the temporary file cannot be made (no such directory, no permission).
  explicit AtomicOutputFile(const std::string& path);
  ~AtomicOutputFile();  // removes the temporary file unless commit() succeeded
  AtomicOutputFile(const AtomicOutputFile&) = delete;
  AtomicOutputFile& operator=(const AtomicOutputFile&) = delete;

  // Where the content goes until commit(); "-" for standard output.
  const std::string& temp_path() const { return temp_; }
  // An OutputFile on temp_path() whose errors name the final path (made on first use).
  OutputFile& file();
  // Closes file() (checked), flushes the data to the disk and renames it onto the path.
  // Throws WriteError naming the path; the temporary file is then removed by the destructor.
  void commit();

 private:
  std::string path_;    // as the user gave it: what messages name
  std::string target_;  // the file replaced (a symbolic link's target)
  std::string temp_;
  bool direct_ = false;  // standard output, a device or a pipe: written in place
  bool committed_ = false;
  std::optional<OutputFile> file_;
};

// Writes `text` to `path` through an AtomicOutputFile ("" or "-": standard output).
void write_file_atomically(const std::string& path, std::string_view text);

// One input of a command, for check_output_not_input: its path and what it is ("the
// database", "the spec file").
struct CommandInput {
  std::string path;
  std::string what;
};

// Throws std::invalid_argument when `output` is the same file as one of `inputs`, compared by
// the file system's identity (device and inode: a symbolic link, ./x or a hard link count), so
// that no command overwrites what it reads. Paths that do not exist (a new output, a
// postgresql:// URL) never clash. `option` names the output in the message ("-o", "--parquet").
void check_output_not_input(const std::string& output, const std::string& option,
                            const std::vector<CommandInput>& inputs);

}  // namespace opcost
