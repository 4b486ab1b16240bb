#include "client/atomic_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace perfcast::client {
namespace {

// The permissions a plain new file gets (0666 less the umask); mkstemp
// makes its file 0600.
mode_t NewFileMode() {
  const mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

absl::Status ErrnoStatus(const std::string& what, int error) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  if (error == ENOENT || error == ENOTDIR) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM || error == EROFS) {
    return absl::PermissionDeniedError(message);
  }
  return absl::DataLossError(message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string directory = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temporary = absl::StrCat(directory, ".", base, ".partial-XXXXXX");
  const int fd = mkstemp(temporary.data());
  if (fd < 0) return ErrnoStatus(absl::StrCat("cannot write ", path), errno);
  fchmod(fd, NewFileMode());
  close(fd);
  std::unique_ptr<AtomicFile> file(new AtomicFile(path, temporary));
  file->out_.open(temporary, std::ios::binary | std::ios::trunc);
  if (!file->out_) return absl::DataLossError(absl::StrCat("cannot write ", path));
  return file;
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  out_.close();
  std::remove(temporary_.c_str());
}

absl::Status AtomicFile::Commit() {
  out_.flush();
  const bool written = out_.good();
  out_.close();
  if (!written || out_.fail()) {
    return absl::DataLossError(absl::StrCat("writing ", path_, " failed; it was left as it was"));
  }
  // The data reaches the disk before the name does.
  if (const int fd = open(temporary_.c_str(), O_RDONLY); fd >= 0) {
    const int error = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    if (error != 0) return ErrnoStatus(absl::StrCat("cannot write ", path_), error);
  }
  if (std::rename(temporary_.c_str(), path_.c_str()) != 0) {
    return ErrnoStatus(absl::StrCat("cannot write ", path_), errno);
  }
  committed_ = true;
  return absl::OkStatus();
}

}  // namespace perfcast::client
