#include "client/text_input.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "base/utf8.h"

namespace perfcast::client {

std::string Printable(absl::string_view text, size_t max_bytes) {
  std::string out;
  const size_t n = std::min(text.size(), max_bytes);
  out.reserve(n + 16);
  size_t i = 0;
  while (i < n) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else if (size_t len = c >= 0x80 ? PrintableUtf8Length(text.substr(i)) : 0;
               len > 0 && i + len <= n) {
      out.append(text.data() + i, len);
      i += len;
      continue;
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
    ++i;
  }
  if (text.size() > i) absl::StrAppend(&out, "... (", text.size() - i, " more bytes)");
  return out;
}

absl::StatusOr<bool> ReadBoundedLine(std::istream& in, std::string& line, int64_t line_number,
                                     size_t max_bytes) {
  line.clear();
  std::streambuf* buffer = in.rdbuf();
  if (buffer == nullptr) return false;
  bool any = false;
  while (true) {
    const int c = buffer->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      break;
    }
    any = true;
    if (c == '\n') break;
    if (line.size() >= max_bytes) {
      in.setstate(std::ios::failbit);
      return absl::ResourceExhaustedError(absl::StrCat(
          "line ", line_number, " is longer than ", max_bytes,
          " bytes (not a text file of records?)"));
    }
    line.push_back(static_cast<char>(c));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return any;
}

absl::StatusOr<std::vector<std::string>> SplitCsvLine(absl::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back().push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back().push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back().push_back(c);
    }
  }
  if (quoted) return absl::InvalidArgumentError("unterminated quoted field");
  return fields;
}

absl::StatusOr<bool> CsvReader::Next(std::vector<std::string>& fields) {
  while (true) {
    absl::StatusOr<bool> more = ReadBoundedLine(in_, line_, line_number_ + 1, max_line_bytes_);
    if (!more.ok()) {
      ++line_number_;
      return more.status();
    }
    if (!*more) return false;
    ++line_number_;
    absl::string_view text = line_;
    // Spreadsheets save "CSV UTF-8" with a byte-order mark.
    if (line_number_ == 1 && absl::StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
    if (absl::StripAsciiWhitespace(text).empty()) continue;
    ASSIGN_OR_RETURN(fields, SplitCsvLine(text));
    return true;
  }
}

}  // namespace perfcast::client
