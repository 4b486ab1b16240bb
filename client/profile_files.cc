#include "client/profile_files.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <type_traits>
#include <variant>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "client/output.h"
#include "client/text_input.h"
#include "db/store.h"
#include "models/csv_reader.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "models/profile_columns.h"
#include "nlohmann/json.hpp"

namespace perfcast::client {
namespace {

using nlohmann::json;

// One CSV/JSONL record as named text cells, whatever the file format.
using Cells = std::map<std::string, std::string>;

const std::set<std::string>& RequiredColumns() {
  static const auto* const kRequired =
      new std::set<std::string>{"family", "batch_size", "mean_ms"};
  return *kRequired;
}

absl::StatusOr<double> Number(const Cells& cells, const std::string& column) {
  auto it = cells.find(column);
  double value = 0;
  if (it == cells.end() || !ParseDecimal(it->second, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        column, " must be a decimal number, got '", it == cells.end() ? "" : Printable(it->second), "'"));
  }
  return value;
}

absl::StatusOr<int64_t> Integer(const Cells& cells, const std::string& column) {
  auto it = cells.find(column);
  int64_t value = 0;
  if (it == cells.end() || !absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        column, " must be an integer, got '", it == cells.end() ? "" : Printable(it->second), "'"));
  }
  return value;
}

std::string Cell(const Cells& cells, const std::string& column) {
  auto it = cells.find(column);
  return it == cells.end() ? std::string() : it->second;
}

// "layers=4;hidden=512" (";" or whitespace separated).
absl::StatusOr<std::map<std::string, int64_t>> ParseParams(absl::string_view text) {
  std::map<std::string, int64_t> params;
  for (absl::string_view item : absl::StrSplit(text, absl::ByAnyChar("; "), absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    int64_t value = 0;
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("parameter '", Printable(item), "' is not name=integer"));
    }
    params[std::string(kv.first)] = value;
  }
  return params;
}

std::string FormatParams(const std::map<std::string, int64_t>& params) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : params) parts.push_back(absl::StrCat(name, "=", value));
  return absl::StrJoin(parts, ";");
}

// Builds a profile from named cells. The node is `node`, else the GPU name.
absl::StatusOr<models::Profile> ProfileFromCells(const Cells& cells) {
  models::Profile p;
  p.node_name = Cell(cells, "node");
  if (p.node_name.empty()) p.node_name = Cell(cells, "gpu");
  if (p.node_name.empty()) return absl::InvalidArgumentError("a record needs node or gpu");
  models::WorkloadSpec& w = p.workload;
  if (std::string kind = Cell(cells, "kind"); !kind.empty()) {
    ASSIGN_OR_RETURN(w.kind, models::ParseWorkloadKind(kind));
  }
  w.family = Cell(cells, "family");
  if (w.family.empty()) return absl::InvalidArgumentError("family is missing");
  ASSIGN_OR_RETURN(w.params, ParseParams(Cell(cells, "params")));
  ASSIGN_OR_RETURN(w.batch_size, Integer(cells, "batch_size"));
  if (std::string precision = Cell(cells, "precision"); !precision.empty()) {
    ASSIGN_OR_RETURN(w.precision, models::ParsePrecision(precision));
  }
  if (std::string phase = Cell(cells, "phase"); !phase.empty()) {
    ASSIGN_OR_RETURN(w.phase, models::ParsePhase(phase));
  }
  if (std::string optimizer = Cell(cells, "optimizer"); !optimizer.empty()) w.optimizer = optimizer;

  // The measured values, by their columns; absent cells keep the defaults
  // filled in below.
  std::set<absl::string_view> present;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    const std::string name(column.file_name);
    if (Cell(cells, name).empty()) continue;
    present.insert(column.file_name);
    RETURN_IF_ERROR(std::visit(
        [&](auto* field) -> absl::Status {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::string>) {
            *field = Cell(cells, name);
          } else if constexpr (std::is_same_v<T, double> ||
                               std::is_same_v<T, std::optional<double>>) {
            ASSIGN_OR_RETURN(double value, Number(cells, name));
            *field = value;
          } else {
            ASSIGN_OR_RETURN(int64_t value, Integer(cells, name));
            // ValidateProfile checks the ranges; the field must hold the value.
            if (value > std::numeric_limits<T>::max() || value < std::numeric_limits<T>::min()) {
              return absl::InvalidArgumentError(absl::StrCat(name, " is too large: ", value));
            }
            *field = static_cast<T>(value);
          }
          return absl::OkStatus();
        },
        column.field(p)));
  }
  if (!present.contains("mean_ms")) return Number(cells, "mean_ms").status();
  // Stored by its one name; an absent loop is MeasuredLoop's default (a
  // Python loop for a run that no agent measured).
  if (!p.loop.empty()) {
    ASSIGN_OR_RETURN(models::Loop loop, models::ParseLoop(p.loop));
    p.loop = std::string(models::LoopName(loop));
  }
  models::TimingStats& t = p.iteration;
  if (!present.contains("count")) t.count = 1;
  if (!present.contains("median_ms")) t.median_ms = t.mean_ms;
  if (!present.contains("p95_ms")) t.p95_ms = t.mean_ms;
  if (!present.contains("min_ms")) t.min_ms = std::min(t.mean_ms, t.median_ms);
  if (!present.contains("max_ms")) t.max_ms = std::max({t.mean_ms, t.median_ms, t.p95_ms});
  if (p.agent_version.empty()) p.agent_version = "file-import";
  p.content_hash = Cell(cells, "content_hash");
  return p;
}

std::string FormatNumber(double value) {
  // Shortest text that reads back as the same double: exports re-import
  // with the same content hash.
  char buffer[32];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string FormatOptional(const std::optional<double>& value) {
  return value.has_value() ? FormatNumber(*value) : std::string();
}

// A column's value as file text: numbers read back as the same double, an
// absent optional number is an empty cell.
std::string ColumnText(const models::ConstProfileField& field) {
  return std::visit(
      [](const auto* value) -> std::string {
        using T = std::remove_cvref_t<decltype(*value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return *value;
        } else if constexpr (std::is_same_v<T, std::optional<double>>) {
          return FormatOptional(*value);
        } else if constexpr (std::is_same_v<T, double>) {
          return FormatNumber(*value);
        } else {
          return absl::StrCat(*value);
        }
      },
      field);
}

Cells CellsFromProfile(const models::Profile& p, absl::string_view gpu_model) {
  Cells cells = {{"node", p.node_name},
                 {"gpu", std::string(gpu_model)},
                 {"kind", std::string(models::WorkloadKindName(p.workload.kind))},
                 {"family", p.workload.family},
                 {"params", FormatParams(p.workload.params)},
                 {"batch_size", absl::StrCat(p.workload.batch_size)},
                 {"precision", std::string(models::PrecisionName(p.workload.precision))},
                 {"phase", std::string(models::PhaseName(p.workload.phase))},
                 {"optimizer", p.workload.optimizer},
                 {"content_hash", p.content_hash}};
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    cells[std::string(column.file_name)] = ColumnText(models::FieldOf(column, p));
  }
  return cells;
}

// A CSV or JSON Lines file without a record (empty, blank lines only, a
// header alone) is refused in every format alike: importing it would store
// nothing, which is not what anyone meant.
absl::Status NoRecords(absl::string_view path) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": no records (an empty file?)"));
}

// Delivers a parsed record, registering catalog nodes for `gpu` rows.
class RecordDelivery {
 public:
  explicit RecordDelivery(const ProfileSink& sink) : sink_(sink) {}

  void Deliver(int64_t line, const Cells& cells) {
    absl::StatusOr<models::Profile> profile = ProfileFromCells(cells);
    // What the store would refuse is reported here, with its line.
    if (profile.ok()) {
      if (absl::Status known = models::NormalizeSpec(profile->workload).status(); !known.ok()) {
        profile = known;
      } else if (absl::Status valid = models::ValidateProfile(*profile); !valid.ok()) {
        profile = valid;
      }
    }
    if (!profile.ok()) {
      sink_.bad_record(line, std::string(profile.status().message()));
      return;
    }
    const std::string gpu = Cell(cells, "gpu");
    if (!Cell(cells, "node").empty()) {
      if (!gpu.empty()) AnnounceIfAbsent(profile->node_name, gpu);
    } else {
      auto known = node_of_gpu_.find(gpu);
      if (known == node_of_gpu_.end()) {
        absl::StatusOr<models::GpuSpec> spec = models::GpuCatalog::BuiltIn().Find(gpu);
        if (!spec.ok()) {
          sink_.bad_record(line, std::string(spec.status().message()));
          return;
        }
        models::Node node;
        node.name = spec->model;
        node.gpu = *spec;
        node.source = models::NodeSource::kCatalog;
        sink_.node(node);
        known = node_of_gpu_.emplace(gpu, node.name).first;
      }
      profile->node_name = known->second;
    }
    sink_.profile(line, *profile);
  }

 private:
  // Tells node_if_absent of node `name` on catalog GPU `gpu`, once per node.
  void AnnounceIfAbsent(const std::string& name, const std::string& gpu) {
    if (!sink_.node_if_absent || !hinted_nodes_.insert(name).second) return;
    absl::StatusOr<models::GpuSpec> spec = models::GpuCatalog::BuiltIn().Find(gpu);
    if (!spec.ok()) return;
    models::Node node;
    node.name = name;
    node.gpu = *spec;
    node.source = models::NodeSource::kCatalog;
    sink_.node_if_absent(node);
  }

  const ProfileSink& sink_;
  // GPU name as written in the file -> its catalog node, announced once.
  std::map<std::string, std::string> node_of_gpu_;
  // Nodes announced to node_if_absent.
  std::set<std::string> hinted_nodes_;
};

absl::Status ReadCsv(std::istream& in, absl::string_view path, const ProfileSink& sink) {
  models::CsvReader reader(in);
  std::vector<std::string> header_fields;
  absl::StatusOr<bool> has_header = reader.Next(header_fields);
  if (!has_header.ok()) {
    return absl::Status(has_header.status().code(),
                        absl::StrCat(path, ": bad header: ", has_header.status().message()));
  }
  if (!*has_header) return NoRecords(path);
  std::vector<std::string>* header = &header_fields;
  const std::vector<std::string>& known = ProfileColumns();
  std::set<std::string> seen;
  for (std::string& column : *header) {
    column = std::string(absl::StripAsciiWhitespace(column));
    if (std::find(known.begin(), known.end(), column) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": unknown column '", Printable(column), "' in the header (expected columns: ",
          absl::StrJoin(known, ","), ")"));
    }
    if (!seen.insert(column).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": duplicate column '", Printable(column), "'"));
    }
  }
  for (const std::string& required : RequiredColumns()) {
    if (!seen.contains(required)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": the header lacks the required column '", required, "'"));
    }
  }
  if (!seen.contains("node") && !seen.contains("gpu")) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the header needs a node or gpu column"));
  }
  RecordDelivery delivery(sink);
  std::vector<std::string> fields;
  int64_t records = 0;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(fields);
    if (!more.ok()) {
      if (more.status().code() != absl::StatusCode::kInvalidArgument) {
        return absl::Status(more.status().code(),
                            absl::StrCat(path, ": ", more.status().message()));
      }
      ++records;
      sink.bad_record(reader.line_number(), std::string(more.status().message()));
      if (sink.stop && sink.stop()) break;
      continue;
    }
    if (!*more) break;
    ++records;
    if (fields.size() != header->size()) {
      sink.bad_record(reader.line_number(),
                      absl::StrCat("expected ", header->size(), " fields, got ", fields.size(),
                                   " (truncated line?)"));
      if (sink.stop && sink.stop()) break;
      continue;
    }
    Cells cells;
    for (size_t i = 0; i < fields.size(); ++i) cells[(*header)[i]] = std::move(fields[i]);
    delivery.Deliver(reader.line_number(), cells);
    if (sink.stop && sink.stop()) break;
  }
  if (records == 0) return NoRecords(path);
  return absl::OkStatus();
}

absl::Status ReadJsonLines(std::istream& in, absl::string_view path, const ProfileSink& sink) {
  const std::vector<std::string>& known = ProfileColumns();
  RecordDelivery delivery(sink);
  std::string line;
  int64_t line_number = 0;
  int64_t records = 0;
  while (true) {
    absl::StatusOr<bool> more = ReadBoundedLine(in, line, line_number + 1);
    if (!more.ok()) {
      return absl::Status(more.status().code(), absl::StrCat(path, ": ", more.status().message()));
    }
    if (!*more) break;
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    ++records;
    if (sink.stop && sink.stop()) break;
    json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_discarded() || !record.is_object()) {
      sink.bad_record(line_number, "not a JSON object");
      continue;
    }
    Cells cells;
    std::string problem;
    for (auto& [key, value] : record.items()) {
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        problem = absl::StrCat("unknown field '", Printable(key), "'");
        break;
      }
      if (key == "params" && value.is_object()) {
        std::map<std::string, int64_t> params;
        for (auto& [name, v] : value.items()) {
          if (!v.is_number_integer()) {
            problem = absl::StrCat("parameter '", Printable(name), "' must be an integer");
            break;
          }
          params[name] = v.get<int64_t>();
        }
        cells[key] = FormatParams(params);
      } else if (value.is_string()) {
        cells[key] = value.get<std::string>();
      } else if (value.is_number_integer()) {
        cells[key] = absl::StrCat(value.get<int64_t>());
      } else if (value.is_number()) {
        cells[key] = FormatNumber(value.get<double>());
      } else if (!value.is_null()) {
        problem = absl::StrCat("field '", Printable(key), "' has an unsupported type");
        break;
      }
    }
    if (!problem.empty()) {
      sink.bad_record(line_number, problem);
      continue;
    }
    delivery.Deliver(line_number, cells);
  }
  if (records == 0) return NoRecords(path);
  return absl::OkStatus();
}

absl::Status ReadAgentStore(const std::string& path, const ProfileSink& sink) {
  absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStoreReadOnly(path);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat(path, ": not a perfcast agent store: ", store.status().message()));
  }
  RETURN_IF_ERROR(db::ForEachNode(**store, {}, [&](models::Node& node) { sink.node(node); }));
  int64_t row = 0;
  return (*store)->ScanProfiles({}, [&](const models::Profile& profile) {
    sink.profile(++row, profile);
    return !(sink.stop && sink.stop());
  });
}

class CsvWriter final : public ProfileWriter {
 public:
  CsvWriter(std::ostream& out, bool to_terminal) : out_(out), to_terminal_(to_terminal) {
    out_ << absl::StrJoin(ProfileColumns(), ",") << "\n";
  }
  void Write(const models::Profile& profile, absl::string_view gpu_model) override {
    Cells cells = CellsFromProfile(profile, gpu_model);
    std::string line;
    for (const std::string& column : ProfileColumns()) {
      const std::string& cell = cells[column];
      absl::StrAppend(&line, line.empty() && column == ProfileColumns().front() ? "" : ",",
                      CsvField(to_terminal_ ? Printable(cell, cell.size()) : cell));
    }
    out_ << line << "\n";
  }

 private:
  std::ostream& out_;
  const bool to_terminal_;
};

class JsonLinesWriter final : public ProfileWriter {
 public:
  JsonLinesWriter(std::ostream& out, bool to_terminal) : out_(out), to_terminal_(to_terminal) {}
  void Write(const models::Profile& p, absl::string_view gpu_model) override {
    // Empty text and absent numbers are left out, as in a CSV cell.
    json record;
    auto text = [&](const char* key, const std::string& value) {
      if (!value.empty()) record[key] = value;
    };
    text("node", p.node_name);
    text("gpu", std::string(gpu_model));
    text("kind", std::string(models::WorkloadKindName(p.workload.kind)));
    text("family", p.workload.family);
    record["params"] = p.workload.params;
    record["batch_size"] = p.workload.batch_size;
    text("precision", std::string(models::PrecisionName(p.workload.precision)));
    text("phase", std::string(models::PhaseName(p.workload.phase)));
    text("optimizer", p.workload.optimizer);
    for (const models::ProfileColumn& column : models::ProfileColumns()) {
      const std::string key(column.file_name);
      std::visit(
          [&](const auto* value) {
            using T = std::remove_cvref_t<decltype(*value)>;
            if constexpr (std::is_same_v<T, std::string>) {
              if (!value->empty()) record[key] = *value;
            } else if constexpr (std::is_same_v<T, std::optional<double>>) {
              if (value->has_value()) record[key] = **value;
            } else {
              record[key] = *value;
            }
          },
          models::FieldOf(column, p));
    }
    text("content_hash", p.content_hash);
    // Text from a CSV file need not be UTF-8; JSON must be. JSON escapes C0
    // controls; on a terminal everything past ASCII is escaped too (C1
    // controls are terminal escapes).
    out_ << record.dump(-1, ' ', /*ensure_ascii=*/to_terminal_, json::error_handler_t::replace)
         << "\n";
  }

 private:
  std::ostream& out_;
  const bool to_terminal_;
};

}  // namespace

const std::vector<std::string>& ProfileColumns() {
  static const auto* const kColumns = [] {
    auto* columns = new std::vector<std::string>{"node", "gpu", "kind", "family", "params",
                                                 "batch_size", "precision", "phase", "optimizer"};
    for (const models::ProfileColumn& column : models::ProfileColumns()) {
      columns->emplace_back(column.file_name);
    }
    columns->push_back("content_hash");
    return columns;
  }();
  return *kColumns;
}

absl::StatusOr<ProfileFormat> ParseProfileFormat(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "csv") return ProfileFormat::kCsv;
  if (lower == "jsonl" || lower == "json" || lower == "ndjson") return ProfileFormat::kJsonLines;
  if (lower == "sqlite" || lower == "db") return ProfileFormat::kAgentSqlite;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown format '", Printable(name), "' (expected csv, jsonl or sqlite)"));
}

absl::StatusOr<ProfileFormat> FormatOfPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".csv")) return ProfileFormat::kCsv;
  if (absl::EndsWith(lower, ".jsonl") || absl::EndsWith(lower, ".json") ||
      absl::EndsWith(lower, ".ndjson")) {
    return ProfileFormat::kJsonLines;
  }
  if (absl::EndsWith(lower, ".sqlite") || absl::EndsWith(lower, ".db") ||
      absl::EndsWith(lower, ".sqlite3")) {
    return ProfileFormat::kAgentSqlite;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("cannot tell the format of ", path, " from its name; pass --format"));
}

absl::Status ReadProfiles(const std::string& path, ProfileFormat format, const ProfileSink& sink) {
  if (format == ProfileFormat::kAgentSqlite) return ReadAgentStore(path, sink);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return ReadProfiles(in, path, format, sink);
}

absl::Status ReadProfiles(std::istream& in, absl::string_view name, ProfileFormat format,
                          const ProfileSink& sink) {
  switch (format) {
    case ProfileFormat::kCsv: return ReadCsv(in, name, sink);
    case ProfileFormat::kJsonLines: return ReadJsonLines(in, name, sink);
    case ProfileFormat::kAgentSqlite: break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": an agent SQLite store is read from its file, not a stream"));
}

absl::StatusOr<std::unique_ptr<ProfileWriter>> ProfileWriter::Create(ProfileFormat format,
                                                                     std::ostream& out,
                                                                     bool to_terminal) {
  switch (format) {
    case ProfileFormat::kCsv:
      return std::unique_ptr<ProfileWriter>(new CsvWriter(out, to_terminal));
    case ProfileFormat::kJsonLines:
      return std::unique_ptr<ProfileWriter>(new JsonLinesWriter(out, to_terminal));
    case ProfileFormat::kAgentSqlite:
      break;
  }
  return absl::InvalidArgumentError("export writes csv or jsonl");
}

}  // namespace perfcast::client
