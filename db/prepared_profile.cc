#include "db/prepared_profile.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "db/store_rules.h"
#include "models/content_hash.h"
#include "models/descriptor.h"

namespace perfcast::db {

absl::StatusOr<PreparedProfile> PreparedProfile::Prepare(models::Profile input) {
  absl::StatusOr<models::WorkloadSpec> spec = models::NormalizeSpec(input.workload);
  if (!spec.ok()) return absl::InvalidArgumentError(spec.status().message());
  PreparedProfile prepared;
  models::Profile& profile = prepared.profile_;
  profile = std::move(input);
  profile.workload = *std::move(spec);
  if (absl::Status s = models::ValidateProfile(profile); !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }
  // Computed once: the content hash covers the key too.
  prepared.workload_key_ = profile.workload.Key();
  if (profile.content_hash.empty()) {
    // As bytes first: the hex digits are made from them, not parsed back.
    const models::ContentHashBytes bytes =
        models::ComputeContentHashBytes(profile, prepared.workload_key_);
    prepared.hash_bytes_.assign(bytes.data(), bytes.size());
    profile.content_hash = absl::BytesToHexString(prepared.hash_bytes_);
  } else if (!IsHexHash(profile.content_hash)) {
    return absl::InvalidArgumentError("content hash must be 32 hexadecimal digits");
  } else {
    prepared.hash_bytes_ = absl::HexStringToBytes(profile.content_hash);
  }
  prepared.node_name_hash_ = PrehashedNameHash::Of(profile.node_name);
  prepared.workload_key_hash_ = PrehashedNameHash::Of(prepared.workload_key_);
  return prepared;
}

}  // namespace perfcast::db
