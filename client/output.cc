#include "client/output.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/text_input.h"

namespace perfcast::client {
namespace {

using Json = nlohmann::json;

std::string JsonText(const Json& value) {
  // Names and errors may hold bytes that are not UTF-8; replace them rather
  // than throw.
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// True when YAML reads `text` back as this string without quotes: it looks
// like neither a number, a boolean nor null, and holds no character that
// starts or ends YAML syntax.
bool PlainYamlScalar(const std::string& text) {
  if (text.empty() || text.front() == ' ' || text.back() == ' ') return false;
  const char first = text.front();
  if (!absl::ascii_isalpha(first) && first != '_' && first != '/') return false;
  for (char c : text) {
    if (!absl::ascii_isalnum(c) && std::string_view("_-./ ()+@=%").find(c) == std::string::npos) {
      return false;
    }
  }
  static constexpr const char* kReserved[] = {"true", "false", "null", "yes", "no", "on",
                                              "off",  "y",     "n",    "~"};
  const std::string lower = absl::AsciiStrToLower(text);
  for (const char* word : kReserved) {
    if (lower == word) return false;
  }
  return true;
}

std::string YamlScalar(const Json& value) {
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    // JSON's escapes (\", \\, \n, \uXXXX) are YAML's in double quotes.
    return PlainYamlScalar(text) ? text : JsonText(value);
  }
  return JsonText(value);  // numbers, booleans, null
}

bool IsEmptyCollection(const Json& value) {
  return (value.is_object() || value.is_array()) && value.empty();
}

void AppendYaml(const Json& value, int indent, std::string& out);

// A mapping's or sequence's entry: `prefix` ("key:" or "-") then the value,
// inline when it is a scalar or an empty collection, else on the next lines.
void AppendEntry(const std::string& prefix, const Json& value, int indent, std::string& out) {
  out.append(indent, ' ');
  out += prefix;
  if (!value.is_structured() || IsEmptyCollection(value)) {
    absl::StrAppend(&out, " ", value.is_structured() ? JsonText(value) : YamlScalar(value), "\n");
    return;
  }
  out += "\n";
  AppendYaml(value, indent + 2, out);
}

void AppendYaml(const Json& value, int indent, std::string& out) {
  if (value.is_object()) {
    for (const auto& [key, item] : value.items()) {
      AppendEntry(absl::StrCat(YamlScalar(Json(key)), ":"), item, indent, out);
    }
  } else if (value.is_array()) {
    for (const Json& item : value) AppendEntry("-", item, indent, out);
  } else {
    absl::StrAppend(&out, std::string(indent, ' '), YamlScalar(value), "\n");
  }
}

void Flatten(const std::string& prefix, const Json& value,
             std::vector<std::pair<std::string, std::string>>& cells) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, item] : value.items()) {
      Flatten(prefix.empty() ? key : absl::StrCat(prefix, ".", key), item, cells);
    }
    return;
  }
  std::string text;
  if (value.is_null()) {
  } else if (value.is_string()) {
    text = value.get<std::string>();
  } else if (value.is_array()) {
    bool plain = true;
    for (const Json& item : value) plain = plain && !item.is_structured();
    if (plain) {
      std::vector<std::string> items;
      for (const Json& item : value) {
        items.push_back(item.is_string() ? item.get<std::string>() : JsonText(item));
      }
      text = absl::StrJoin(items, ";");
    } else {
      text = JsonText(value);
    }
  } else {
    text = JsonText(value);
  }
  cells.emplace_back(prefix.empty() ? "value" : prefix, std::move(text));
}

}  // namespace

std::string ToYaml(const Json& value) {
  std::string out;
  if (!value.is_structured() || IsEmptyCollection(value)) {
    return absl::StrCat(value.is_structured() ? JsonText(value) : YamlScalar(value), "\n");
  }
  AppendYaml(value, 0, out);
  return out;
}

std::vector<std::pair<std::string, std::string>> FlattenForCsv(const Json& value) {
  std::vector<std::pair<std::string, std::string>> cells;
  Flatten("", value, cells);
  return cells;
}

std::string CsvField(const std::string& text) {
  // A bare \r would be dropped on reading, so it is quoted too.
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

StructuredWriter::StructuredWriter(OutputFormat format, std::ostream& out, bool escape_controls)
    : format_(format), out_(out), escape_controls_(escape_controls) {}

void StructuredWriter::Row(const Json& record) {
  std::vector<std::pair<std::string, std::string>> cells = FlattenForCsv(record);
  if (columns_.empty()) {
    for (const auto& [column, cell] : cells) columns_.push_back(column);
  }
  auto field = [&](const std::string& text) {
    return CsvField(escape_controls_ ? Printable(text, std::numeric_limits<size_t>::max()) : text);
  };
  if (!header_written_) {
    std::vector<std::string> header;
    for (const std::string& column : columns_) header.push_back(field(column));
    out_ << absl::StrJoin(header, ",") << "\r\n";
    header_written_ = true;
  }
  std::vector<std::string> row;
  for (const std::string& column : columns_) {
    std::string cell;
    for (const auto& [name, text] : cells) {
      if (name == column) {
        cell = text;
        break;
      }
    }
    row.push_back(field(cell));
  }
  out_ << absl::StrJoin(row, ",") << "\r\n";
}

void StructuredWriter::Document(const Json& document) {
  switch (format_) {
    case OutputFormat::kYaml:
      // Text with a control character is double-quoted, its controls escaped.
      out_ << ToYaml(document);
      break;
    case OutputFormat::kCsv:
      Row(document);
      break;
    default:
      out_ << JsonText(document) << "\n";
  }
  out_.flush();
}

void StructuredWriter::Record(const Json& record) {
  if (format_ == OutputFormat::kYaml) out_ << "---\n";
  Document(record);
}

}  // namespace perfcast::client
