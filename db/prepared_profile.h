// A profile made ready to store: normalised, validated and hashed, with the
// values every store binds for it computed once. Preparing is pure and
// thread-safe, so a caller can prepare the next records on one thread while
// an import transaction writes the previous ones on another
// (ImportTransaction::AddPrepared, PipelinedImport).
#ifndef PERFCAST_DB_PREPARED_PROFILE_H_
#define PERFCAST_DB_PREPARED_PROFILE_H_

#include <cstddef>
#include <string>

#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "models/profile.h"

namespace perfcast::db {

// A name (a node's, a workload key) with its hash, computed where the profile
// is prepared: an import's writer looks up every row's node and workload ids
// by name, and hashing the names there showed in the profile of the writer
// thread (docs/sqlite-import.md), the thread that bounds a pipelined import.
struct PrehashedName {
  absl::string_view text;
  size_t hash = 0;
};

// Hash and equality for a map keyed by std::string that is looked up by a
// PrehashedName (heterogeneous lookup: the hash is not computed again).
struct PrehashedNameHash {
  using is_transparent = void;
  static size_t Of(absl::string_view text) { return absl::Hash<absl::string_view>{}(text); }
  size_t operator()(absl::string_view text) const { return Of(text); }
  size_t operator()(const PrehashedName& name) const { return name.hash; }
};
struct PrehashedNameEq {
  using is_transparent = void;
  bool operator()(absl::string_view a, absl::string_view b) const { return a == b; }
  bool operator()(absl::string_view a, const PrehashedName& b) const { return a == b.text; }
  bool operator()(const PrehashedName& a, absl::string_view b) const { return a.text == b; }
};

class PreparedProfile {
 public:
  // The profile as every store keeps it: its workload normalised, then
  // checked (models::ValidateProfile), and its content hash computed when
  // absent. An InvalidArgument message is the reason an import rejects the
  // record.
  static absl::StatusOr<PreparedProfile> Prepare(models::Profile input);

  const models::Profile& profile() const { return profile_; }
  // profile().workload.Key(): the workload's identity in the store.
  const std::string& workload_key() const { return workload_key_; }
  // The 16 bytes of profile().content_hash, as the stores keep it.
  const std::string& hash_bytes() const { return hash_bytes_; }
  // profile().node_name and workload_key() with their PrehashedNameHash.
  PrehashedName node_name() const { return {profile_.node_name, node_name_hash_}; }
  PrehashedName workload_name() const { return {workload_key_, workload_key_hash_}; }

 private:
  PreparedProfile() = default;

  models::Profile profile_;
  std::string workload_key_;
  std::string hash_bytes_;
  size_t node_name_hash_ = 0;
  size_t workload_key_hash_ = 0;
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_PREPARED_PROFILE_H_
