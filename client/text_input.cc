#include "client/text_input.h"

#include <algorithm>
#include <charconv>
#include <cmath>

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

bool ParseDecimal(absl::string_view text, double* value) {
  text = absl::StripAsciiWhitespace(text);
  if (absl::StartsWith(text, "+")) text.remove_prefix(1);
  if (text.empty() || text.front() == '+') return false;
  // from_chars reads decimal only in the general format, but takes the
  // spellings of infinity and NaN; every accepted number has a digit.
  if (text.find_first_of("0123456789") == absl::string_view::npos) return false;
  double parsed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed,
                                            std::chars_format::general);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(parsed)) {
    return false;
  }
  *value = parsed;
  return true;
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

}  // namespace perfcast::client
