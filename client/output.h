// The structured forms of `perfcast -o json|yaml|csv`: a command hands its
// answer over as JSON values and this writes them in the format asked for.
//
// A command answers either with one document (predict, recommend, fit, a
// node) or with a stream of records, one per item (nodes list, models list,
// predict --batch-file, --sweep), printed as each arrives:
//   json  a document is one JSON object on one line; a stream is JSON Lines
//         (one object per line, nothing else on stdout), so that `jq` and
//         line-based tools read both.
//   yaml  a document is one YAML document; a stream is one YAML document per
//         record, each starting with "---".
//   csv   RFC 4180, a header of column names and a row per record (one row
//         for a document). Nested objects become dotted columns
//         ("prediction.iteration_ms"), lists of plain values join with ";",
//         other lists are their JSON text.
// Control characters cannot reach a terminal: json and yaml escape them in
// quoted strings, csv escapes them (as tables do) when writing to one.
//
// Thread-compatible: one writer per output stream.
#ifndef PERFCAST_CLIENT_OUTPUT_H_
#define PERFCAST_CLIENT_OUTPUT_H_

#include <ostream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace perfcast::client {

enum class OutputFormat { kTable, kJson, kYaml, kCsv };

// The names -o accepts, in --help order.
inline constexpr const char* kOutputFormats[] = {"table", "json", "yaml", "csv"};

class StructuredWriter {
 public:
  // `format` is kJson, kYaml or kCsv; `escape_controls` for csv on a terminal.
  StructuredWriter(OutputFormat format, std::ostream& out, bool escape_controls);

  // The command's one answer.
  void Document(const nlohmann::json& document);
  // One record of a stream. For csv, the first record's columns are the
  // header; a later record's missing columns are empty cells and its extra
  // ones are left out (ClientContext::ToJson gives every record of a
  // message type the same columns).
  void Record(const nlohmann::json& record);

 private:
  void Row(const nlohmann::json& record);

  const OutputFormat format_;
  std::ostream& out_;
  const bool escape_controls_;
  std::vector<std::string> columns_;
  bool header_written_ = false;
};

// `value` as a block-style YAML document (no "---"), ending in a newline.
// Strings that YAML would read as something else ("true", "1.5", "") or
// that hold special characters are double-quoted.
std::string ToYaml(const nlohmann::json& value);

// `value` flattened for a csv row: column name -> cell text.
std::vector<std::pair<std::string, std::string>> FlattenForCsv(const nlohmann::json& value);

// `text` as one RFC 4180 field: quoted when it holds a comma, quote, CR or LF.
std::string CsvField(const std::string& text);

}  // namespace perfcast::client

#endif  // PERFCAST_CLIENT_OUTPUT_H_
