// perfcast --local: perfcastd's own services inside the CLI's process,
// reached over an in-process channel, on a store of the shipped profiles with
// a model fitted on them. Every command that runs against it is the same code
// on both sides as against a perfcastd, so both roads give the same answer.
//
// The store is built on first use and cached: the profiles that
// data/shipped-profiles.txt lists are imported and the model is fitted as
// `make demo` fits it (the H200's newest-method profiles), into
// $XDG_CACHE_HOME/perfcast/local-<key>.db (~/.cache/perfcast without
// XDG_CACHE_HOME), where the key is a hash of the list, every listed file
// and this program's own binary: new data or new code fit again. A cache
// entry is written beside and renamed into place, so a build that dies
// leaves no entry, and two first uses at once both end with a whole one.
//
// Thread-compatible: one LocalServer per process.
#ifndef PERFCAST_CLIENT_LOCAL_SERVER_H_
#define PERFCAST_CLIENT_LOCAL_SERVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "db/store.h"
#include "grpcpp/grpcpp.h"
#include "server/logger.h"
#include "server/server.h"

namespace perfcast::client {

// The GPU whose profiles the local model is fitted on: `make demo`'s.
inline constexpr char kLocalFitGpu[] = "H200-SXM-141GB";
// The list of shipped profile files, in the data directory.
inline constexpr char kShippedProfilesList[] = "shipped-profiles.txt";

struct LocalOptions {
  // Where the shipped profiles and their list are: $PERFCAST_SHIPPED_DATA,
  // else this build's data/ directory, else where `cmake --install` put
  // them (<prefix>/share/perfcast/data).
  std::string data_dir;
  // Where fitted stores are cached.
  std::string cache_dir;
  // The program whose bytes key the cache with the data (its code version).
  std::string program = "/proc/self/exe";
};

// The defaults above, from the environment. FailedPrecondition when neither
// XDG_CACHE_HOME nor HOME is set.
absl::StatusOr<LocalOptions> DefaultLocalOptions();

// Where the answers' model comes from.
struct LocalProvenance {
  std::string list_path;            // data/shipped-profiles.txt
  std::vector<std::string> files;   // the profile files, as listed
  std::string cache_path;           // the cached store
  int64_t fitted_at_us = 0;         // the model's creation time
  int64_t model_version = 0;
  double cv_mape = 0;
  bool fitted_now = false;          // built by this call
  absl::Duration build_time;        // importing and fitting, when fitted_now
  int64_t profiles_imported = 0;    // when fitted_now
};

class LocalServer {
 public:
  // Opens the cached store for `options`, building it first when there is
  // none. FailedPrecondition when the list or a listed file is missing (the
  // message says which and how to point at the data), or when the cache
  // cannot be written; the import's and the fit's errors otherwise.
  static absl::StatusOr<std::unique_ptr<LocalServer>> Open(const LocalOptions& options);
  ~LocalServer();
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  // The in-process channel to perfcastd's services; valid while this lives.
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  const LocalProvenance& provenance() const { return provenance_; }

  // One line for stderr: "local model (v1, CV MAPE 13.8%) fitted
  // 2026-11-29 05:30 UTC on the H200-SXM-141GB profiles of 24 shipped files
  // (.../data/shipped-profiles.txt), cached in ...; fitted now in 1.1 s".
  std::string ProvenanceLine() const;

 private:
  LocalServer() = default;

  server::Logger logger_{server::LogLevel::kError};
  std::unique_ptr<db::Store> store_;
  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  LocalProvenance provenance_;
};

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_LOCAL_SERVER_H_
