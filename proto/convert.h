// Conversions between the v1 API messages and the C++ vocabulary of
// models/. Shared by perfcastd, the perfcast CLI and any other C++ client so
// that every side reads a message the same way.
//
// FromProto functions validate what the wire can express but the vocabulary
// cannot (unknown enum values) and return InvalidArgument; semantic checks
// (ranges, consistency) stay with ValidateProfile/NormalizeSpec.
#ifndef PERFCAST_PROTO_CONVERT_H_
#define PERFCAST_PROTO_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "models/hardware.h"
#include "models/profile.h"
#include "models/workload.h"
#include "perfcast/v1/common.pb.h"

namespace perfcast::proto {

void ToProto(const models::GpuSpec& in, v1::GpuSpec* out);
models::GpuSpec FromProto(const v1::GpuSpec& in);
void ToProto(const models::HostSpec& in, v1::HostSpec* out);
models::HostSpec FromProto(const v1::HostSpec& in);
void ToProto(const models::MeasuredRates& in, v1::MeasuredRates* out);
models::MeasuredRates FromProto(const v1::MeasuredRates& in);
void ToProto(const models::Node& in, v1::Node* out);
absl::StatusOr<models::Node> FromProto(const v1::Node& in);

v1::Precision ToProto(models::Precision precision);
v1::Phase ToProto(models::Phase phase);
v1::WorkloadKind ToProto(models::WorkloadKind kind);
v1::Loop ToProto(models::Loop loop);
// Unspecified values map to the defaults (fp32, train, model, python).
absl::StatusOr<models::Precision> FromProto(v1::Precision precision);
absl::StatusOr<models::Phase> FromProto(v1::Phase phase);
absl::StatusOr<models::WorkloadKind> FromProto(v1::WorkloadKind kind);
// InvalidArgument naming the choices for a value outside the enum.
absl::StatusOr<models::Loop> FromProto(v1::Loop loop);

void ToProto(const models::WorkloadSpec& in, v1::Workload* out);
absl::StatusOr<models::WorkloadSpec> FromProto(const v1::Workload& in);
void ToProto(const models::Profile& in, v1::Profile* out);
absl::StatusOr<models::Profile> FromProto(const v1::Profile& in);

// Appends `message`'s bytes with map entries in key order: equal content,
// equal bytes. (Plain serialisation walks a map in an order seeded per
// instance, so the same message parsed twice could give two byte strings.)
void AppendDeterministic(const google::protobuf::MessageLite& message, std::string* out);
// The same bytes as a new string.
std::string DeterministicBytes(const google::protobuf::MessageLite& message);

}  // namespace perfcast::proto

#endif  // PERFCAST_PROTO_CONVERT_H_
