// Reading text files a user hands the CLI (JSON Lines profiles; CSV goes
// through models::CsvReader) safely, and quoting what they contain in
// messages.
//
// Every line is bounded (kMaxLineBytes): a file without newlines, or
// /dev/zero, ends with an error instead of growing memory without bound.
//
// Thread-compatible: one reader per stream.
#ifndef PERFCAST_CLIENT_TEXT_INPUT_H_
#define PERFCAST_CLIENT_TEXT_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>

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

// A decimal number as a person writes one in a file: optional sign, digits,
// an optional fraction and exponent, surrounding blanks ignored. Returns
// false for anything else, hexadecimal ("0x10") and "inf"/"nan" included,
// which strtod-style parsers would read as a number.
bool ParseDecimal(absl::string_view text, double* value);

// Reads one line (without its "\n" or "\r\n") into `line`. Returns false at
// the end of the stream; ResourceExhausted naming `line_number` when the
// line exceeds `max_bytes` (nothing more of it is read into memory, and the
// stream cannot be read on).
absl::StatusOr<bool> ReadBoundedLine(std::istream& in, std::string& line, int64_t line_number,
                                     size_t max_bytes = kMaxLineBytes);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_TEXT_INPUT_H_
