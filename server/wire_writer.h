// Protobuf's wire format written field by field into a std::string, for
// answers sent as bytes without building their message
// (server/predict_response.cc). proto3's rule applies: a scalar field at its
// default (0, +0.0, false, "") is not written. Writing fields in
// field-number order gives the message's own serialisation
// (wire_writer_test).
//
// A field is a few stores into room the writer keeps ahead in the string,
// not an append: an answer is some sixty fields, and std::string::append's
// call and checks per field cost more than the bytes. The string holds what
// was written once the writer is gone (or after Flush); until then its
// size() is the room, not the bytes.
#ifndef PERFCAST_SERVER_WIRE_WRITER_H_
#define PERFCAST_SERVER_WIRE_WRITER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/base/casts.h"
#include "absl/strings/string_view.h"

namespace perfcast::server {

class WireWriter {
 public:
  // Appends to `*out`, which nothing else may touch while the writer lives.
  explicit WireWriter(std::string* out) : out_(*out), size_(out->size()) {}
  WireWriter(const WireWriter&) = delete;
  WireWriter& operator=(const WireWriter&) = delete;
  ~WireWriter() { Flush(); }

  // Cuts the string to what was written (writing may go on after).
  void Flush() { out_.resize(size_); }

  void Double(int field, double value) {
    const uint64_t bits = absl::bit_cast<uint64_t>(value);
    if (bits == 0) return;  // -0.0 is written
    char* at = Varint(Tag(field, kFixed64), Room(kMaxVarint + 8));
    for (int byte = 0; byte < 8; ++byte) *at++ = static_cast<char>(bits >> (8 * byte));
    Wrote(at);
  }
  void Int64(int field, int64_t value) {
    if (value == 0) return;
    Wrote(Varint(static_cast<uint64_t>(value), Varint(Tag(field, kVarint), Room(2 * kMaxVarint))));
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
    char* at = Header(field, value.size(), Room(2 * kMaxVarint + value.size()));
    if (!value.empty()) std::memcpy(at, value.data(), value.size());
    Wrote(at + value.size());
  }
  // A sub-message of `field`: its fields are written between BeginMessage
  // and EndMessage(BeginMessage's result), which then fills in its length,
  // so that nothing sizes a sub-message apart from writing it. One byte is
  // kept for the length, which an answer's sub-messages fit (< 128 bytes);
  // a longer one moves its bytes up.
  size_t BeginMessage(int field) {
    Wrote(Header(field, 0, Room(2 * kMaxVarint)));
    return size_;
  }
  void EndMessage(size_t start) {
    const size_t size = size_ - start;
    char bytes[kMaxVarint];
    const size_t length = Varint(size, bytes) - bytes;
    Room(length - 1);
    char* const data = &out_[0];
    if (length > 1) std::memmove(data + start + length - 1, data + start, size);
    std::memcpy(data + start - 1, bytes, length);
    size_ += length - 1;
  }

 private:
  enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };
  static constexpr int kMaxVarint = 10;

  // At least `n` bytes of room at the end of what was written; where it starts.
  char* Room(size_t n) {
    if (out_.size() - size_ < n) out_.resize(std::max(2 * out_.size(), size_ + n + 256));
    return &out_[size_];
  }
  // What was written ends at `end` (within the room).
  void Wrote(const char* end) { size_ = end - out_.data(); }

  // A length-delimited field's tag and length at `at`; returns the end.
  static char* Header(int field, size_t size, char* at) {
    return Varint(size, Varint(Tag(field, kLengthDelimited), at));
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
  size_t size_;  // bytes written (out_'s size beyond them is room)
};

}  // namespace perfcast::server

#endif  // PERFCAST_SERVER_WIRE_WRITER_H_
