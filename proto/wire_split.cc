#include "proto/wire_split.h"

#include <cstdint>

#include "google/protobuf/io/coded_stream.h"

namespace perfcast::proto {
namespace {

// Reads a varint at `*at` (before `end`), moving `*at` past it; false when
// it runs past `end` or over ten bytes.
bool ReadVarint(const char** at, const char* end, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *at < end; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(*(*at)++);
    *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if (byte < 0x80) return true;
  }
  return false;
}

// Moves `*at` past a field's value of wire type `type`; false for groups
// (deprecated, and not in these messages: the whole parse decides) and
// values that run past `end`.
bool SkipValue(int type, const char** at, const char* end) {
  uint64_t length = 0;
  switch (type) {
    case 0:  // varint
      return ReadVarint(at, end, &length);
    case 1:  // fixed64
      length = 8;
      break;
    case 2:  // length-delimited
      if (!ReadVarint(at, end, &length)) return false;
      break;
    case 5:  // fixed32
      length = 4;
      break;
    default:
      return false;
  }
  if (length > static_cast<uint64_t>(end - *at)) return false;
  *at += length;
  return true;
}

// Merges the fields in `bytes` into `message`.
bool MergeFrom(absl::string_view bytes, google::protobuf::MessageLite* message) {
  if (bytes.empty()) return true;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  return message->MergeFromCodedStream(&in) && in.ConsumedEntireMessage();
}

}  // namespace

bool ParseAroundField(absl::string_view bytes, int field_number,
                      google::protobuf::MessageLite* message,
                      std::optional<absl::string_view>* field) {
  field->reset();
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return false;
  // The tags are read here, the values skipped: a scan costs a fraction of
  // a parse. Where the field starts (its tag) and ends:
  const char* const begin = bytes.data();
  const char* const end = begin + bytes.size();
  const char* start = nullptr;
  const char* stop = nullptr;
  for (const char* at = begin; at < end;) {
    const char* const tag_at = at;
    uint64_t tag = 0;
    if (!ReadVarint(&at, end, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return false;
    const int type = static_cast<int>(tag & 7);
    if (static_cast<int>(tag >> 3) != field_number) {
      if (!SkipValue(type, &at, end)) return false;
      continue;
    }
    if (start != nullptr || type != 2) return false;
    uint64_t length = 0;
    if (!ReadVarint(&at, end, &length) || length > static_cast<uint64_t>(end - at)) return false;
    *field = absl::string_view(at, length);
    at += length;
    start = tag_at;
    stop = at;
  }
  // The rest in one parse where it is one piece (the field first or last,
  // as serialisers write it), else in two.
  if (start == nullptr) return message->ParseFromArray(begin, static_cast<int>(bytes.size()));
  if (start == begin) return message->ParseFromArray(stop, static_cast<int>(end - stop));
  if (!message->ParseFromArray(begin, static_cast<int>(start - begin))) return false;
  return MergeFrom(absl::string_view(stop, end - stop), message);
}

}  // namespace perfcast::proto
