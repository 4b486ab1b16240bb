// Protobuf's wire format written field by field into a std::string, for
// answers sent as bytes without building their message
// (server/predict_response.cc). proto3's rule applies: a scalar field at its
// default (0, +0.0, false, "") is not written. Writing fields in
// field-number order gives the message's own serialisation
// (wire_writer_test).
#ifndef PERFCAST_SERVER_WIRE_WRITER_H_
#define PERFCAST_SERVER_WIRE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/base/casts.h"
#include "absl/strings/string_view.h"

namespace perfcast::server {

class WireWriter {
 public:
  explicit WireWriter(std::string* out) : out_(*out) {}

  void Double(int field, double value) {
    const uint64_t bits = absl::bit_cast<uint64_t>(value);
    if (bits == 0) return;  // -0.0 is written
    char bytes[kMaxVarint + 8];
    char* end = Varint(Tag(field, kFixed64), bytes);
    for (int byte = 0; byte < 8; ++byte) *end++ = static_cast<char>(bits >> (8 * byte));
    out_.append(bytes, end - bytes);
  }
  void Int64(int field, int64_t value) {
    if (value == 0) return;
    char bytes[2 * kMaxVarint];
    char* end = Varint(static_cast<uint64_t>(value), Varint(Tag(field, kVarint), bytes));
    out_.append(bytes, end - bytes);
  }
  // int32 and enums: a negative value takes ten bytes, as int64's.
  void Int32(int field, int32_t value) { Int64(field, value); }
  void Bool(int field, bool value) {
    if (value) Int64(field, 1);
  }
  void String(int field, absl::string_view value) {
    if (value.empty()) return;
    Bytes(field, value);
  }
  // A length-delimited field that is written even when empty: a set
  // sub-message, a repeated string.
  void Bytes(int field, absl::string_view value) {
    MessageHeader(field, value.size());
    out_.append(value.data(), value.size());
  }
  // A sub-message of `field`: its fields are written between BeginMessage
  // and EndMessage(BeginMessage's result), which then fills in its length,
  // so that nothing sizes a sub-message apart from writing it. One byte is
  // kept for the length, which an answer's sub-messages fit (< 128 bytes);
  // a longer one moves its bytes up.
  size_t BeginMessage(int field) {
    MessageHeader(field, 0);
    return out_.size();
  }
  void EndMessage(size_t start) {
    const size_t size = out_.size() - start;
    char bytes[kMaxVarint];
    char* end = Varint(size, bytes);
    out_[start - 1] = bytes[0];
    if (end - bytes > 1) out_.insert(start, bytes + 1, end - bytes - 1);
  }

 private:
  enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };
  static constexpr int kMaxVarint = 10;

  void MessageHeader(int field, size_t size) {
    char bytes[2 * kMaxVarint];
    char* end = Varint(size, Varint(Tag(field, kLengthDelimited), bytes));
    out_.append(bytes, end - bytes);
  }

  static uint64_t Tag(int field, WireType type) {
    return (static_cast<uint64_t>(field) << 3) | type;
  }
  // Writes `value` as a varint at `at`; returns the end.
  static char* Varint(uint64_t value, char* at) {
    while (value >= 0x80) {
      *at++ = static_cast<char>(value | 0x80);
      value >>= 7;
    }
    *at++ = static_cast<char>(value);
    return at;
  }

  std::string& out_;
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_WIRE_WRITER_H_
