// Profile files the CLI reads and writes: CSV, JSON Lines, and an agent's
// local SQLite store. CSV and JSON Lines share one set of columns (see
// ProfileColumns(): the workload's key parts, models/profile_columns.h, the
// content hash), so an export imports back unchanged.
//
// Required columns: family, batch_size, mean_ms, and node or gpu (a catalog
// GPU name: the row then belongs to a node named after the GPU, registered
// from the catalog on import). Everything else is optional; median/min/max/
// p95 default to the mean, count to 1.
#ifndef PERFCAST_CLIENT_PROFILE_FILES_H_
#define PERFCAST_CLIENT_PROFILE_FILES_H_

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/hardware.h"
#include "models/profile.h"

namespace perfcast::client {

enum class ProfileFormat { kCsv, kJsonLines, kAgentSqlite };

// "csv", "jsonl" (or "json"), "sqlite". InvalidArgument otherwise.
absl::StatusOr<ProfileFormat> ParseProfileFormat(absl::string_view name);
// By extension: .csv, .jsonl/.json/.ndjson, .sqlite/.db. InvalidArgument if
// the extension says nothing (use --format).
absl::StatusOr<ProfileFormat> FormatOfPath(absl::string_view path);

// The CSV header, in export order.
const std::vector<std::string>& ProfileColumns();

// Receives what a file holds, in file order.
struct ProfileSink {
  // A node the following profiles name (agent files; catalog GPUs of CSV rows).
  std::function<void(const models::Node&)> node;
  // A parsed profile; `line` is its 1-based line (row) in the file.
  std::function<void(int64_t line, const models::Profile&)> profile;
  // A record that could not be parsed (it is skipped; the rest go on).
  std::function<void(int64_t line, const std::string& reason)> bad_record;
  // Optional. A node that rows naming both a node and a catalog GPU (an
  // export's rows) describe, announced once per node before its first
  // profile: the sink registers it only where no node of that name exists
  // yet, so that an export imports into a fresh server. Rows whose GPU the
  // catalog does not know announce nothing.
  std::function<void(const models::Node&)> node_if_absent;
  // Optional. Asked after each record; true ends the read there (the reader
  // then returns OK), for a sink that has seen enough of an endless file.
  std::function<bool()> stop;
};

// Reads a whole file into `sink`. File-level problems fail the call before
// any record is delivered where possible: unreadable file (NotFound),
// a CSV header with unknown/duplicate/missing required columns
// (InvalidArgument), a CSV or JSON Lines file without a single record
// (InvalidArgument: empty, blank, or a header alone), a file that is not SQLite (DataLoss) or an SQLite file
// of another application (FailedPrecondition).
absl::Status ReadProfiles(const std::string& path, ProfileFormat format, const ProfileSink& sink);
// Reads CSV or JSON Lines text from `in` the same way; `name` prefixes the
// file-level errors. InvalidArgument for kAgentSqlite (SQLite needs a file).
absl::Status ReadProfiles(std::istream& in, absl::string_view name, ProfileFormat format,
                          const ProfileSink& sink);

// Writes profiles as CSV (header first) or JSON Lines.
class ProfileWriter {
 public:
  // `out` must outlive the writer. kAgentSqlite is not a writable format here.
  // With `to_terminal`, control characters and invalid UTF-8 in CSV cells are
  // written as \xNN (see Printable), so that stored text cannot drive the
  // terminal (JSON escapes them itself); a file keeps every byte, so that an
  // export imports back unchanged.
  static absl::StatusOr<std::unique_ptr<ProfileWriter>> Create(ProfileFormat format,
                                                               std::ostream& out,
                                                               bool to_terminal = false);
  virtual ~ProfileWriter() = default;
  // `gpu_model` fills the gpu column: the GPU of the profile's node, so that
  // an import into a server that lacks the node registers it from the
  // catalog (see ProfileSink::node_if_absent). Empty leaves it blank.
  virtual void Write(const models::Profile& profile, absl::string_view gpu_model) = 0;
  void Write(const models::Profile& profile) { Write(profile, {}); }
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_PROFILE_FILES_H_
