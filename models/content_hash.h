// A profile's content hash as the stores keep it: 16 bytes. Declared apart
// from profile.h (defined beside ComputeContentHash in profile.cc) because
// only the stores' import path needs it.
#ifndef PERFCAST_MODELS_CONTENT_HASH_H_
#define PERFCAST_MODELS_CONTENT_HASH_H_

#include <array>

#include "absl/strings/string_view.h"
#include "models/profile.h"

namespace perfcast::models {

// A content hash as 16 bytes, most significant first: the bytes whose
// hexadecimal digits ComputeContentHash returns.
using ContentHashBytes = std::array<char, 16>;

// ComputeContentHash's hash as bytes, for a caller that has
// `profile.workload.Key()` at hand already and stores the bytes: an import
// computes one per record, and neither the key nor the hex digits need
// building twice.
ContentHashBytes ComputeContentHashBytes(const Profile& profile, absl::string_view workload_key);

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_CONTENT_HASH_H_
