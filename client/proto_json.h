// JSON text of a protobuf message for `perfcast -o json`: one object per
// line, field names as in the .proto, every field present (zero values
// included, so that scripts need no defaults), 64-bit integers as JSON
// numbers (protobuf's own JSON mapping writes them as strings), enums by
// name, maps as objects.
#ifndef PERFCAST_CLIENT_PROTO_JSON_H_
#define PERFCAST_CLIENT_PROTO_JSON_H_

#include <string>

#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace perfcast::client {

std::string ProtoJson(const google::protobuf::Message& message);

// The same as a JSON value. With `expand_unset`, an unset message field is
// its message with every field zero rather than null, so that every record
// of one type has the same fields (the columns of -o csv).
nlohmann::json ProtoJsonValue(const google::protobuf::Message& message,
                              bool expand_unset = false);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_PROTO_JSON_H_
