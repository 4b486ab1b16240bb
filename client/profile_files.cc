#include "client/profile_files.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/text_input.h"
#include "db/store.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
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
  if (it == cells.end() || it->second.empty() || !absl::SimpleAtod(it->second, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        column, " must be a number, got '", it == cells.end() ? "" : Printable(it->second), "'"));
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

// An optional number: empty or absent cells are absent values.
absl::Status Optional(const Cells& cells, const std::string& column, std::optional<double>& out) {
  auto it = cells.find(column);
  if (it == cells.end() || it->second.empty()) return absl::OkStatus();
  absl::StatusOr<double> value = Number(cells, column);
  if (!value.ok()) return value.status();
  out = *value;
  return absl::OkStatus();
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
    absl::StatusOr<models::WorkloadKind> parsed = models::ParseWorkloadKind(kind);
    if (!parsed.ok()) return parsed.status();
    w.kind = *parsed;
  }
  w.family = Cell(cells, "family");
  if (w.family.empty()) return absl::InvalidArgumentError("family is missing");
  absl::StatusOr<std::map<std::string, int64_t>> params = ParseParams(Cell(cells, "params"));
  if (!params.ok()) return params.status();
  w.params = *std::move(params);
  absl::StatusOr<int64_t> batch = Integer(cells, "batch_size");
  if (!batch.ok()) return batch.status();
  w.batch_size = *batch;
  if (std::string precision = Cell(cells, "precision"); !precision.empty()) {
    absl::StatusOr<models::Precision> parsed = models::ParsePrecision(precision);
    if (!parsed.ok()) return parsed.status();
    w.precision = *parsed;
  }
  if (std::string phase = Cell(cells, "phase"); !phase.empty()) {
    absl::StatusOr<models::Phase> parsed = models::ParsePhase(phase);
    if (!parsed.ok()) return parsed.status();
    w.phase = *parsed;
  }
  if (std::string optimizer = Cell(cells, "optimizer"); !optimizer.empty()) w.optimizer = optimizer;

  absl::StatusOr<double> mean = Number(cells, "mean_ms");
  if (!mean.ok()) return mean.status();
  models::TimingStats& t = p.iteration;
  t.mean_ms = *mean;
  t.count = 1;
  if (!Cell(cells, "count").empty()) {
    absl::StatusOr<int64_t> count = Integer(cells, "count");
    if (!count.ok()) return count.status();
    t.count = *count;
  }
  std::optional<double> median, p95, stddev, min, max;
  for (auto [column, slot] : {std::pair<const char*, std::optional<double>*>{"median_ms", &median},
                              {"p95_ms", &p95},
                              {"stddev_ms", &stddev},
                              {"min_ms", &min},
                              {"max_ms", &max}}) {
    if (absl::Status s = Optional(cells, column, *slot); !s.ok()) return s;
  }
  t.median_ms = median.value_or(t.mean_ms);
  t.p95_ms = p95.value_or(t.mean_ms);
  t.stddev_ms = stddev.value_or(0);
  t.min_ms = min.value_or(std::min(t.mean_ms, t.median_ms));
  t.max_ms = max.value_or(std::max({t.mean_ms, t.median_ms, t.p95_ms}));
  models::PhaseBreakdown& ph = p.phases;
  for (auto [column, slot] :
       {std::pair<const char*, std::optional<double>*>{"data_load_ms", &ph.data_load_ms},
        {"h2d_ms", &ph.h2d_ms},
        {"forward_ms", &ph.forward_ms},
        {"backward_ms", &ph.backward_ms},
        {"optimizer_ms", &ph.optimizer_ms},
        {"repeat_cv", &p.repeat_cv},
        {"epoch_s", &p.epoch_s},
        {"throughput_per_s", &p.throughput_per_s},
        {"peak_memory_bytes", &p.peak_memory_bytes},
        {"achieved_tflops", &p.achieved_tflops},
        {"roofline_fraction", &p.roofline_fraction}}) {
    if (absl::Status s = Optional(cells, column, *slot); !s.ok()) return s;
  }
  p.repeats = 1;
  if (!Cell(cells, "repeats").empty()) {
    absl::StatusOr<int64_t> repeats = Integer(cells, "repeats");
    if (!repeats.ok()) return repeats.status();
    // ValidateProfile checks the lower bound; an int must hold the value.
    if (*repeats > std::numeric_limits<int>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("repeats is too large: ", *repeats));
    }
    p.repeats = static_cast<int>(*repeats);
  }
  if (!Cell(cells, "measured_at_us").empty()) {
    absl::StatusOr<int64_t> at = Integer(cells, "measured_at_us");
    if (!at.ok()) return at.status();
    p.measured_at_us = *at;
  }
  p.agent_version = Cell(cells, "agent_version");
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

Cells CellsFromProfile(const models::Profile& p) {
  const models::TimingStats& t = p.iteration;
  const models::PhaseBreakdown& ph = p.phases;
  return {{"node", p.node_name},
          {"gpu", ""},
          {"kind", std::string(models::WorkloadKindName(p.workload.kind))},
          {"family", p.workload.family},
          {"params", FormatParams(p.workload.params)},
          {"batch_size", absl::StrCat(p.workload.batch_size)},
          {"precision", std::string(models::PrecisionName(p.workload.precision))},
          {"phase", std::string(models::PhaseName(p.workload.phase))},
          {"optimizer", p.workload.optimizer},
          {"count", absl::StrCat(t.count)},
          {"mean_ms", FormatNumber(t.mean_ms)},
          {"median_ms", FormatNumber(t.median_ms)},
          {"p95_ms", FormatNumber(t.p95_ms)},
          {"stddev_ms", FormatNumber(t.stddev_ms)},
          {"min_ms", FormatNumber(t.min_ms)},
          {"max_ms", FormatNumber(t.max_ms)},
          {"data_load_ms", FormatOptional(ph.data_load_ms)},
          {"h2d_ms", FormatOptional(ph.h2d_ms)},
          {"forward_ms", FormatOptional(ph.forward_ms)},
          {"backward_ms", FormatOptional(ph.backward_ms)},
          {"optimizer_ms", FormatOptional(ph.optimizer_ms)},
          {"repeats", absl::StrCat(p.repeats)},
          {"repeat_cv", FormatOptional(p.repeat_cv)},
          {"epoch_s", FormatOptional(p.epoch_s)},
          {"throughput_per_s", FormatOptional(p.throughput_per_s)},
          {"peak_memory_bytes", FormatOptional(p.peak_memory_bytes)},
          {"achieved_tflops", FormatOptional(p.achieved_tflops)},
          {"roofline_fraction", FormatOptional(p.roofline_fraction)},
          {"measured_at_us", absl::StrCat(p.measured_at_us)},
          {"agent_version", p.agent_version},
          {"content_hash", p.content_hash}};
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
    if (Cell(cells, "node").empty()) {
      const std::string gpu = Cell(cells, "gpu");
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
  const ProfileSink& sink_;
  // GPU name as written in the file -> its catalog node, announced once.
  std::map<std::string, std::string> node_of_gpu_;
};

absl::Status ReadCsv(std::istream& in, absl::string_view path, const ProfileSink& sink) {
  CsvReader reader(in);
  std::vector<std::string> header_fields;
  absl::StatusOr<bool> has_header = reader.Next(header_fields);
  if (!has_header.ok()) {
    return absl::Status(has_header.status().code(),
                        absl::StrCat(path, ": bad header: ", has_header.status().message()));
  }
  if (!*has_header) return absl::InvalidArgumentError(absl::StrCat(path, ": empty file"));
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
  while (true) {
    absl::StatusOr<bool> more = reader.Next(fields);
    if (!more.ok()) {
      if (more.status().code() != absl::StatusCode::kInvalidArgument) {
        return absl::Status(more.status().code(),
                            absl::StrCat(path, ": ", more.status().message()));
      }
      sink.bad_record(reader.line_number(), std::string(more.status().message()));
      continue;
    }
    if (!*more) break;
    if (fields.size() != header->size()) {
      sink.bad_record(reader.line_number(),
                      absl::StrCat("expected ", header->size(), " fields, got ", fields.size(),
                                   " (truncated line?)"));
      continue;
    }
    Cells cells;
    for (size_t i = 0; i < fields.size(); ++i) cells[(*header)[i]] = std::move(fields[i]);
    delivery.Deliver(reader.line_number(), cells);
  }
  return absl::OkStatus();
}

absl::Status ReadJsonLines(std::istream& in, absl::string_view path, const ProfileSink& sink) {
  const std::vector<std::string>& known = ProfileColumns();
  RecordDelivery delivery(sink);
  std::string line;
  int64_t line_number = 0;
  while (true) {
    absl::StatusOr<bool> more = ReadBoundedLine(in, line, line_number + 1);
    if (!more.ok()) {
      return absl::Status(more.status().code(), absl::StrCat(path, ": ", more.status().message()));
    }
    if (!*more) break;
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
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
  return absl::OkStatus();
}

absl::Status ReadAgentStore(const std::string& path, const ProfileSink& sink) {
  absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStoreReadOnly(path);
  if (!store.ok()) {
    return absl::Status(store.status().code(),
                        absl::StrCat(path, ": not a perfcast agent store: ", store.status().message()));
  }
  if (absl::Status s = db::ForEachNode(**store, {}, [&](models::Node& node) { sink.node(node); });
      !s.ok()) {
    return s;
  }
  int64_t row = 0;
  return (*store)->ScanProfiles({}, [&](const models::Profile& profile) {
    sink.profile(++row, profile);
    return true;
  });
}

class CsvWriter final : public ProfileWriter {
 public:
  explicit CsvWriter(std::ostream& out) : out_(out) {
    out_ << absl::StrJoin(ProfileColumns(), ",") << "\n";
  }
  void Write(const models::Profile& profile) override {
    Cells cells = CellsFromProfile(profile);
    std::string line;
    for (const std::string& column : ProfileColumns()) {
      absl::StrAppend(&line, line.empty() && column == ProfileColumns().front() ? "" : ",",
                      CsvField(cells[column]));
    }
    out_ << line << "\n";
  }

 private:
  std::ostream& out_;
};

class JsonLinesWriter final : public ProfileWriter {
 public:
  explicit JsonLinesWriter(std::ostream& out) : out_(out) {}
  void Write(const models::Profile& profile) override {
    json record;
    static const std::set<std::string> kTextColumns = {
        "node", "gpu", "kind", "family", "precision", "phase", "optimizer", "agent_version",
        "content_hash"};
    for (const auto& [column, text] : CellsFromProfile(profile)) {
      if (text.empty()) continue;
      double number = 0;
      static const std::set<std::string> kIntegerColumns = {"batch_size", "count", "repeats",
                                                            "measured_at_us"};
      int64_t integer = 0;
      if (kIntegerColumns.contains(column) && absl::SimpleAtoi(text, &integer)) {
        record[column] = integer;
      } else if (!kTextColumns.contains(column) && absl::SimpleAtod(text, &number)) {
        record[column] = number;
      } else {
        record[column] = text;
      }
    }
    record["params"] = profile.workload.params;
    // Text from a CSV file need not be UTF-8; JSON must be.
    out_ << record.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }

 private:
  std::ostream& out_;
};

}  // namespace

const std::vector<std::string>& ProfileColumns() {
  static const auto* const kColumns = new std::vector<std::string>{
      "node", "gpu", "kind", "family", "params", "batch_size", "precision", "phase", "optimizer",
      "count", "mean_ms", "median_ms", "p95_ms", "stddev_ms", "min_ms", "max_ms", "data_load_ms",
      "h2d_ms", "forward_ms", "backward_ms", "optimizer_ms", "repeats", "repeat_cv", "epoch_s",
      "throughput_per_s", "peak_memory_bytes", "achieved_tflops", "roofline_fraction",
      "measured_at_us", "agent_version", "content_hash"};
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
                                                                     std::ostream& out) {
  switch (format) {
    case ProfileFormat::kCsv: return std::unique_ptr<ProfileWriter>(new CsvWriter(out));
    case ProfileFormat::kJsonLines: return std::unique_ptr<ProfileWriter>(new JsonLinesWriter(out));
    case ProfileFormat::kAgentSqlite:
      break;
  }
  return absl::InvalidArgumentError("export writes csv or jsonl");
}

}  // namespace perfcast::client
