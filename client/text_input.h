// Reading text files a user hands the CLI (profile CSV and JSON Lines,
// --batch-file queries) safely, and quoting what they contain in messages.
//
// Every line is bounded (kMaxLineBytes): a file without newlines, or
// /dev/zero, ends with an error instead of growing memory without bound.
// CSV follows RFC 4180 as spreadsheets write it: quoted fields (with ""
// for a quote), CRLF or LF line ends, and a UTF-8 byte-order mark before
// the header is ignored.
//
// Thread-compatible: one reader per stream.
#ifndef PERFCAST_CLIENT_TEXT_INPUT_H_
#define PERFCAST_CLIENT_TEXT_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfcast::client {

// The longest line any reader accepts.
inline constexpr size_t kMaxLineBytes = 1 << 20;

// The most of one error message the CLI shows (Printable's cut).
inline constexpr size_t kMaxShownMessageBytes = 2048;

// `text` for an error message or a table: at most `max_bytes` of it, control
// characters and bytes that are not valid UTF-8 written as \xNN (\n, \r, \t
// as such), and "... (N more bytes)" when cut, so that echoing a file's or
// a request's bytes can neither flood a terminal nor drive it with escape
// sequences.
std::string Printable(absl::string_view text, size_t max_bytes = 200);

// Reads one line (without its "\n" or "\r\n") into `line`. Returns false at
// the end of the stream; ResourceExhausted naming `line_number` when the
// line exceeds `max_bytes` (nothing more of it is read into memory, and the
// stream cannot be read on).
absl::StatusOr<bool> ReadBoundedLine(std::istream& in, std::string& line, int64_t line_number,
                                     size_t max_bytes = kMaxLineBytes);

class CsvReader {
 public:
  // `in` must outlive the reader.
  explicit CsvReader(std::istream& in, size_t max_line_bytes = kMaxLineBytes)
      : in_(in), max_line_bytes_(max_line_bytes) {}

  // The next record's fields. Returns false at the end of the stream; skips
  // blank lines. Errors: ResourceExhausted for a line past the bound (the
  // stream cannot be read on); InvalidArgument for an unterminated quote
  // (that record only: the next call goes on with the next line).
  absl::StatusOr<bool> Next(std::vector<std::string>& fields);

  // The 1-based line of the record (or error) Next() returned last.
  int64_t line_number() const { return line_number_; }

 private:
  std::istream& in_;
  const size_t max_line_bytes_;
  int64_t line_number_ = 0;
  std::string line_;
};

// Splits one CSV line (RFC 4180 quoting, no embedded newlines).
// InvalidArgument for an unterminated quoted field.
absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_TEXT_INPUT_H_
