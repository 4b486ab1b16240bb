// A file that appears whole or not at all: written beside its final path
// under a temporary name and renamed over it only when Commit() succeeds, so
// that a failed or interrupted export neither replaces an existing file nor
// leaves one that looks complete.
//
// Not thread-safe; one writer.
#ifndef PERFCAST_CLIENT_ATOMIC_FILE_H_
#define PERFCAST_CLIENT_ATOMIC_FILE_H_

#include <fstream>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfcast::client {

class AtomicFile {
 public:
  // Creates the temporary file in `path`'s directory. NotFound or
  // PermissionDenied (naming `path`) when it cannot be created.
  static absl::StatusOr<std::unique_ptr<AtomicFile>> Create(const std::string& path);
  // Removes the temporary file unless committed.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }

  // Flushes, syncs and renames the file into place. DataLoss (naming the
  // path) when a write failed; the temporary file is then removed and
  // `path` is left as it was.
  absl::Status Commit();

 private:
  AtomicFile(std::string path, std::string temporary)
      : path_(std::move(path)), temporary_(std::move(temporary)) {}

  const std::string path_;
  const std::string temporary_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_ATOMIC_FILE_H_
