#include "core/io/atomic_output_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

namespace opcost {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw WriteError(fmt::format("{}: {}: {}", path, what, err ? std::strerror(err) : "unknown error"));
}

// A name no other writer uses: the pid and a random number (O_EXCL makes sure).
std::string temp_name(const fs::path& target) {
  static std::mt19937_64 random{std::random_device{}()};
  // Long names are cut so that the temporary one stays within NAME_MAX.
  return fmt::format(".{}.{}-{:08x}.tmp", target.filename().string().substr(0, 200), getpid(),
                     static_cast<uint32_t>(random()));
}

}  // namespace

AtomicOutputFile::AtomicOutputFile(const std::string& path) : path_(path) {
  if (path.empty() || path == "-") {
    direct_ = true;
    temp_ = "-";
    return;
  }
  std::error_code ec;
  fs::path target = path;
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    const fs::path resolved = fs::canonical(target, ec);
    if (!ec) target = resolved;  // a dangling link is replaced by the file
  }
  struct stat old {};
  const bool exists = ::stat(target.c_str(), &old) == 0;
  if (exists && S_ISDIR(old.st_mode)) throw WriteError(fmt::format("{}: is a directory; name a file", path));
  if (exists && !S_ISREG(old.st_mode)) {  // /dev/null, a pipe: nothing to replace
    direct_ = true;
    temp_ = path;
    return;
  }
  target_ = target.string();
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  for (int attempt = 0;; ++attempt) {
    temp_ = (dir / temp_name(target)).string();
    // 0666 less the umask, as a new file gets; a replaced file keeps its mode.
    const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      const bool moded = !exists || ::fchmod(fd, old.st_mode & 07777) == 0;
      const int err = errno;
      ::close(fd);
      if (!moded) {
        ::unlink(temp_.c_str());
        fail(path, "cannot set the mode of its temporary file", err);
      }
      return;
    }
    if (errno != EEXIST || attempt >= 100) fail(path, "cannot create the file", errno);
  }
}

AtomicOutputFile::~AtomicOutputFile() {
  file_.reset();  // closed without throwing: an error path
  if (!committed_ && !direct_) ::unlink(temp_.c_str());
}

OutputFile& AtomicOutputFile::file() {
  if (!file_) file_.emplace(temp_, path_);
  return *file_;
}

void AtomicOutputFile::commit() {
  if (file_) file_->close();
  if (direct_) {
    committed_ = true;
    return;
  }
  // The data reaches the disk before the name does: after a crash the path holds the old file
  // or the new one, never a part of the new one.
  const int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path_, "cannot reopen its temporary file", errno);
  const bool synced = ::fsync(fd) == 0;
  const int sync_errno = errno;
  ::close(fd);
  if (!synced) fail(path_, "cannot write (the data did not reach the disk)", sync_errno);
  if (std::rename(temp_.c_str(), target_.c_str()) != 0) fail(path_, "cannot replace the file", errno);
  committed_ = true;
  // The rename itself is durable once the directory is synced; a directory that refuses
  // (some network file systems) still has the complete file, so this is best effort.
  const fs::path dir = fs::path(target_).parent_path().empty() ? fs::path(".") : fs::path(target_).parent_path();
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::string& path, std::string_view text) {
  AtomicOutputFile out(path);
  out.file().write(text);
  out.commit();
}

void check_output_not_input(const std::string& output, const std::string& option,
                            const std::vector<CommandInput>& inputs) {
  if (output.empty() || output == "-") return;
  std::error_code ec;
  for (const auto& in : inputs) {
    if (in.path.empty() || in.path == "-") continue;
    // equivalent() follows symbolic links and compares device and inode; a missing path is
    // an error code, never a clash.
    if (fs::equivalent(output, in.path, ec) && !ec)
      throw std::invalid_argument(fmt::format(
          "{} {}: that is {} this command reads ({}): an output never replaces an input; choose another file", option,
          output, in.what, in.path));
  }
}

}  // namespace opcost
