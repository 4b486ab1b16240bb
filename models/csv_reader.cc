#include "models/csv_reader.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace perfcast::models {
namespace {

constexpr char kByteOrderMark[] = "\xEF\xBB\xBF";

}  // namespace

absl::StatusOr<bool> CsvReader::Next(std::vector<std::string>& fields) {
  std::streambuf* buffer = in_.rdbuf();
  if (buffer == nullptr) return false;
  constexpr int kEof = std::char_traits<char>::eof();
  if (at_start_) {
    at_start_ = false;
    // Spreadsheets save "CSV UTF-8" with a byte-order mark.
    for (int i = 0; i < 3 && buffer->sgetc() == static_cast<unsigned char>(kByteOrderMark[i]);
         ++i) {
      buffer->sbumpc();
    }
  }
  enum class State { kFieldStart, kUnquoted, kQuoted, kQuoteInQuoted };
  while (true) {
    fields.assign(1, std::string());
    record_line_ = lines_read_ + 1;
    State state = State::kFieldStart;
    bool any = false;     // bytes of this record read
    bool quoted = false;  // a field of it was quoted: not a blank line
    size_t bytes = 0;
    bool comment = false;
    while (true) {
      const int c = buffer->sbumpc();
      if (c == kEof) {
        in_.setstate(std::ios::eofbit);
        if (state == State::kQuoted) {
          return absl::InvalidArgumentError(absl::StrCat(
              "unterminated quoted field (the quote opened on line ", record_line_, ")"));
        }
        if (!any) return false;
        break;
      }
      if (!any && options_.comment_lines && c == '#') comment = true;
      any = true;
      if (++bytes > options_.max_record_bytes) {
        in_.setstate(std::ios::failbit);
        return absl::ResourceExhaustedError(absl::StrCat(
            "the record at line ", record_line_, " is longer than ", options_.max_record_bytes,
            " bytes (not a text file of records, or a quote never closed?)"));
      }
      if (c == '\n') ++lines_read_;
      if (comment) {
        if (c == '\n') break;
        continue;
      }
      const char ch = static_cast<char>(c);
      switch (state) {
        case State::kQuoted:
          if (ch == '"') {
            state = State::kQuoteInQuoted;
          } else {
            fields.back().push_back(ch);
          }
          continue;
        case State::kQuoteInQuoted:
          if (ch == '"') {  // "" inside quotes
            fields.back().push_back('"');
            state = State::kQuoted;
            continue;
          }
          break;
        case State::kFieldStart:
        case State::kUnquoted:
          break;
      }
      // Outside quotes.
      if (ch == '\n') break;
      if (ch == '\r') continue;  // of a CRLF, or stray: dropped
      if (ch == ',') {
        fields.emplace_back();
        state = State::kFieldStart;
      } else if (ch == '"') {
        quoted = true;
        state = State::kQuoted;
      } else {
        fields.back().push_back(ch);
        state = State::kUnquoted;
      }
    }
    if (comment) continue;
    if (!quoted && fields.size() == 1 && absl::StripAsciiWhitespace(fields[0]).empty()) {
      if (in_.eof()) return false;
      continue;  // a blank line
    }
    return true;
  }
}

}  // namespace perfcast::models
