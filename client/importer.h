// Streams profile files into perfcastd's ProfileStore.Import in one
// transaction. Shared by `perfcast import` and `perfcast-agent run --server`.
#ifndef PERFCAST_CLIENT_IMPORTER_H_
#define PERFCAST_CLIENT_IMPORTER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/profile_files.h"
#include "grpcpp/grpcpp.h"

namespace perfcast::client {

struct ImportFile {
  std::string path;
  ProfileFormat format = ProfileFormat::kCsv;
};

struct ImportReport {
  int64_t records = 0;  // parsed records plus records that failed to parse
  int64_t accepted = 0;
  int64_t duplicates = 0;
  int64_t rejected = 0;  // parse and server rejections, all of them
  struct Rejected {
    int file = -1;  // index into the imported files; -1 if unknown
    int64_t line = 0;
    std::string reason;
  };
  // The first of the rejections by file and line, at most
  // ImportOptions::max_rejections_kept of them.
  std::vector<Rejected> first_rejections;
};

struct ImportOptions {
  int batch_size = 2000;  // profiles per stream message
  // Called after each message with the number of records sent so far.
  std::function<void(int64_t sent, const std::string& file)> progress;
  // How many rejections the report lists (the rest are counted only).
  int64_t max_rejections_kept = 1000;
  // Once this many records failed to parse and they outnumber the readable
  // ones, the files are not profile files (/dev/urandom, a log): the import
  // stops with InvalidArgument and stores nothing.
  int64_t max_parse_rejections = 10'000;
};

// What a failed import's message ends with: nothing was stored, or the
// call failed after the whole stream was sent and the server may have
// committed before the connection or deadline was lost.
inline constexpr char kNothingImported[] = "; nothing imported";
inline constexpr char kOutcomeUnknown[] =
    "; outcome unknown: the import may have been stored; re-running is safe (duplicates are "
    "skipped)";

// Imports `files`. A file-level problem (unreadable, bad header, a line
// past the length bound, not a perfcast store, too many unreadable records)
// cancels the stream, so nothing is stored, and is returned as the error; so
// is a failed call. The error's message ends with kNothingImported or
// kOutcomeUnknown, whichever is true. Otherwise the report says what was
// stored and what was rejected. Memory stays bounded whatever the files'
// size: records are streamed, and rejections beyond the kept ones counted.
// Rows that name a node and a catalog GPU (an export's) register the node
// from the catalog where the server lacks it.
absl::StatusOr<ImportReport> ImportFiles(const std::shared_ptr<grpc::Channel>& channel,
                                         const std::vector<ImportFile>& files,
                                         const ImportOptions& options);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_IMPORTER_H_
