// The profile store: nodes, workloads, profiles and fitted models behind one
// interface, so that perfcastd, the CLI's local mode and the agent share the
// schema code. Implementations: SQLite (sqlite_store.h; default, embedded) and
// PostgreSQL (postgres_store.h; shared by several perfcastd replicas).
//
// Thread-safety: a Store may be shared between threads. Imports are
// serialised; reads run concurrently with writes on their own connections.
#ifndef PERFCAST_DB_STORE_H_
#define PERFCAST_DB_STORE_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "db/prepared_profile.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"

namespace perfcast::db {

// Which nodes ListNodes returns. Empty fields match everything.
struct NodeFilter {
  std::string gpu_model;                      // exact catalog model
  std::map<std::string, std::string> labels;  // all must match
  int page_size = 100;                        // 1..1000
  std::string page_token;                     // from the previous page
};

struct NodePage {
  std::vector<models::Node> nodes;
  std::string next_page_token;  // empty on the last page
};

// Which profiles ScanProfiles visits. Empty/absent fields match everything.
struct ProfileFilter {
  std::string node_name;
  std::string gpu_model;
  std::string family;
  std::optional<models::Phase> phase;
  std::optional<models::WorkloadKind> kind;
  std::optional<int> method_version;  // models::Profile::method_version
  // Measurement times, inclusive. The defaults match every stored time, a
  // negative one (before 1970, from an imported file) included.
  int64_t since_us = std::numeric_limits<int64_t>::min();
  int64_t until_us = std::numeric_limits<int64_t>::max();
  int64_t limit = 0;  // 0: no limit
};

// One record an import rejected, by its position in the import (0-based).
struct Rejection {
  int64_t index = 0;
  std::string reason;
};

struct ImportSummary {
  int64_t accepted = 0;    // newly stored
  int64_t duplicates = 0;  // already stored (same content hash): not stored again
  std::vector<Rejection> rejected;
};

// An open import: one write transaction. Add() validates and stages records;
// Commit() makes all accepted records durable at once. Destroying an
// uncommitted import rolls it back, leaving the store exactly as before.
// Not thread-safe; holds the store's write lock for its lifetime.
class ImportTransaction {
 public:
  virtual ~ImportTransaction() = default;

  // Upserts a node that the following profiles may name (an agent file
  // carries its own node). A node of the same name must describe the same
  // GPU model, else FailedPrecondition; its host and measured rates are
  // refreshed unless the stored ones were taken later (registered_at_us; 0
  // means now), so the newest fingerprint wins whatever the import order.
  virtual absl::Status UpsertNode(const models::Node& node) = 0;

  // Stages one profile. A record that fails validation (or names an unknown
  // node) is counted as rejected with its `index` and the reason, and does
  // not abort the others; OK is returned for it. A non-OK status means the
  // transaction itself failed (I/O, constraint) and must be abandoned.
  // A profile with an empty content hash gets ComputeContentHash().
  absl::Status Add(int64_t index, const models::Profile& profile) {
    return AddPrepared(index, PreparedProfile::Prepare(profile));
  }

  // Add() for a profile prepared beforehand, perhaps on another thread (see
  // PipelinedImport); an error in `prepared` is counted as the record's
  // rejection, with its message as the reason. An implementation may move
  // from `prepared` (to keep it staged) or leave it to the caller to free.
  virtual absl::Status AddPrepared(int64_t index, absl::StatusOr<PreparedProfile>&& prepared) = 0;

  // What has been staged so far.
  virtual const ImportSummary& summary() const = 0;

  // Commits. After an error nothing of this import is stored.
  virtual absl::StatusOr<ImportSummary> Commit() = 0;
};

// A fitted predictor model as the store keeps it. The payload is the
// predictor's own serialisation; the store never parses it.
struct StoredModel {
  int64_t id = 0;       // assigned by the store
  std::string name;     // model series, e.g. "default"; versions count per name
  int64_t version = 0;  // assigned by the store: 1, 2, ...
  std::string target;   // "train_iteration_ms", "op_ms", ...
  std::string summary;  // one human line: features, CV error
  double cv_mape = 0;
  int64_t created_at_us = 0;
  std::string payload;
};

// A configuration the agent could not run, kept so campaigns are auditable.
struct SkippedRun {
  std::string node_name;
  std::string workload_key;
  std::string reason;  // "out of memory", "bf16 unsupported", ...
  int64_t at_us = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  // --- Nodes ---
  // Registers a new node; returns it with id and time set.
  // AlreadyExists if the name is taken; InvalidArgument for an empty name,
  // a negative count or an empty GPU model.
  virtual absl::StatusOr<models::Node> RegisterNode(const models::Node& node) = 0;
  // NotFound if no node has this name.
  virtual absl::StatusOr<models::Node> GetNode(absl::string_view name) = 0;
  // InvalidArgument for a bad page size or token.
  virtual absl::StatusOr<NodePage> ListNodes(const NodeFilter& filter) = 0;
  // NotFound if absent. FailedPrecondition if the node has profiles and
  // `purge_profiles` is false; with it, its profiles go too (one transaction).
  virtual absl::Status DeregisterNode(absl::string_view name, bool purge_profiles) = 0;

  // --- Profiles ---
  virtual absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginImport() = 0;
  // Calls `visit` for each matching profile in id order until it returns false.
  virtual absl::Status ScanProfiles(const ProfileFilter& filter,
                                    const std::function<bool(const models::Profile&)>& visit) = 0;
  virtual absl::StatusOr<int64_t> CountProfiles(const ProfileFilter& filter) = 0;
  virtual absl::Status RecordSkipped(const SkippedRun& run) = 0;
  virtual absl::StatusOr<std::vector<SkippedRun>> ListSkipped() = 0;

  // --- Fitted models ---
  // Stores a new version of model `name`; returns it with id/version set.
  virtual absl::StatusOr<StoredModel> SaveModel(const StoredModel& model) = 0;
  // NotFound if absent.
  virtual absl::StatusOr<StoredModel> GetModel(int64_t id) = 0;
  // The highest version of `name`; NotFound if none.
  virtual absl::StatusOr<StoredModel> LatestModel(absl::string_view name) = 0;
  // All versions, newest first, without payloads.
  virtual absl::StatusOr<std::vector<StoredModel>> ListModels() = 0;

  // --- Operations ---
  // Bytes the store occupies (database file plus WAL for SQLite), for
  // operators' metrics. Unimplemented where a backend cannot tell.
  virtual absl::StatusOr<int64_t> ApproximateSizeBytes() {
    return absl::UnimplementedError("this store cannot report its size");
  }
};

// Calls `visit` for every node `filter` matches, in id order, across all
// pages (the filter's page token is the starting point). Stops at the first
// error of the store.
absl::Status ForEachNode(Store& store, NodeFilter filter,
                         const std::function<void(models::Node&)>& visit);

// Opens (creating and migrating if needed) the store at `uri`:
// "sqlite:///abs/path.db", "sqlite://rel/path.db" or a plain file path, or a
// PostgreSQL connection URI "postgresql://user@host:port/database?..." (also
// "postgres://").
// InvalidArgument for an unknown scheme; Unimplemented for postgresql:// in a
// build without PostgreSQL; Unavailable when the database cannot be reached;
// DataLoss/FailedPrecondition when it is not a perfcast store (not SQLite, a
// foreign schema, or a newer schema version than this build knows).
absl::StatusOr<std::unique_ptr<Store>> OpenStore(absl::string_view uri);

// The SQLite file `uri` names (see OpenStore), or nullopt for a PostgreSQL
// URI; InvalidArgument for a URI OpenStore would refuse.
absl::StatusOr<std::optional<std::string>> SqliteFilePath(absl::string_view uri);

// Opens an existing store read-only (an agent's file being imported). Never
// creates or migrates; the same errors as OpenStore, plus NotFound. Writes
// through it fail with FailedPrecondition.
absl::StatusOr<std::unique_ptr<Store>> OpenStoreReadOnly(absl::string_view uri);

// `uri` with any password replaced by "****" (the user:password@ part and a
// password= parameter), safe for logs and error messages.
std::string RedactDatabaseUri(absl::string_view uri);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_STORE_H_
