// A profile made ready to store: normalised, validated and hashed, with the
// values every store binds for it computed once. Preparing is pure and
// thread-safe, so a caller can prepare the next records on one thread while
// an import transaction writes the previous ones on another
// (ImportTransaction::AddPrepared, PipelinedImport).
#ifndef PERFCAST_DB_PREPARED_PROFILE_H_
#define PERFCAST_DB_PREPARED_PROFILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "models/profile.h"

namespace perfcast::db {

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

 private:
  PreparedProfile() = default;

  models::Profile profile_;
  std::string workload_key_;
  std::string hash_bytes_;
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_PREPARED_PROFILE_H_
