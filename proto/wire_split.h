// A message's bytes parsed around one of its fields.
//
// A server that has met a sub-message's bytes before need not parse them
// again: perfcastd describes a Predict's workload once per distinct workload,
// and parsing the workload (its parameter map above all) was most of what
// parsing a request cost. ParseAroundField parses every other field into the
// message and hands back the one field's own bytes, for the caller to look
// up by them and parse only when it has not seen them.
//
// Example:
//   std::optional<absl::string_view> workload;
//   if (ParseAroundField(bytes, /*field_number=*/1, &request, &workload)) {
//     // request holds every field but 1; *workload (when set) is field 1's
//     // payload: a Workload's serialised bytes.
//   } else {
//     // Parse the whole message instead (it decides whether the bytes are
//     // valid, and this function declines some valid layouts).
//   }
#ifndef PERFCAST_PROTO_WIRE_SPLIT_H_
#define PERFCAST_PROTO_WIRE_SPLIT_H_

#include <optional>

#include "absl/strings/string_view.h"
#include "google/protobuf/message_lite.h"

namespace perfcast::proto {

// Parses `bytes` into `message` (cleared first), all but the sub-message
// field `field_number`, whose payload is set in `field` when it occurs once
// (reset when it does not occur). The message then reads as if that field
// were unset; parsing `*field` into the field's message and merging it in
// gives what parsing `bytes` whole gives.
//
// False when the split is not that simple: the field occurs more than once
// (its occurrences merge), with another wire type, or the bytes do not
// parse. `message` is then unspecified: the caller parses `bytes` whole.
// `field` points into `bytes`.
bool ParseAroundField(absl::string_view bytes, int field_number,
                      google::protobuf::MessageLite* message,
                      std::optional<absl::string_view>* field);

}  // namespace perfcast::proto

#endif  // PERFCAST_PROTO_WIRE_SPLIT_H_
