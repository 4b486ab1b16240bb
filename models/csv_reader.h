// The one CSV reader of the project: profile files, --batch-file queries and
// price tables all read their records through it.
//
// RFC 4180 as spreadsheets write it: fields separated by commas, quoted
// fields (with "" for a quote) that may hold commas and line breaks, CRLF or
// LF line ends, and a UTF-8 byte-order mark before the first record is
// ignored. Blank lines are skipped. Every record is bounded
// (max_record_bytes): a file without newlines, /dev/zero or a quote never
// closed ends with an error instead of growing memory without bound.
//
// Thread-compatible: one reader per stream.
#ifndef PERFCAST_MODELS_CSV_READER_H_
#define PERFCAST_MODELS_CSV_READER_H_

#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace perfcast::models {

class CsvReader {
 public:
  struct Options {
    // The longest record accepted, its line breaks included.
    size_t max_record_bytes = size_t{1} << 20;
    // Whether a line that starts with '#' outside a record is a comment.
    bool comment_lines = false;
  };

  // `in` must outlive the reader.
  explicit CsvReader(std::istream& in) : CsvReader(in, Options()) {}
  CsvReader(std::istream& in, Options options) : in_(in), options_(options) {}

  // The next record's fields. Returns false at the end of the stream.
  // Errors: ResourceExhausted for a record past the bound (the stream cannot
  // be read on); InvalidArgument for a quote still open at the end of the
  // stream.
  absl::StatusOr<bool> Next(std::vector<std::string>& fields);

  // The 1-based line on which the record (or error) Next() returned last
  // begins.
  int64_t line_number() const { return record_line_; }

 private:
  std::istream& in_;
  const Options options_;
  int64_t lines_read_ = 0;   // line breaks consumed so far
  int64_t record_line_ = 0;
  bool at_start_ = true;     // before the first byte: a byte-order mark may follow
};

}  // namespace perfcast::models

#endif  // PERFCAST_MODELS_CSV_READER_H_
