#include "db/sqlite_rows.h"

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "db/store_rules.h"
#include "models/profile_columns.h"

namespace perfcast::db {
namespace {

// Reads the profile columns from result column `first` on.
void ReadProfileColumns(const Statement& s, int first, models::Profile& p) {
  int c = first;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::optional<double>>) {
            *field = s.OptionalDouble(c);
          } else if constexpr (std::is_same_v<T, double>) {
            *field = s.Double(c);
          } else if constexpr (std::is_same_v<T, std::string>) {
            *field = s.Text(c);
          } else {
            *field = static_cast<T>(s.Int(c));
          }
        },
        column.field(p));
    ++c;
  }
}

}  // namespace

std::string SqlitePlaceholders(int count) {
  std::string out;
  for (int i = 1; i <= count; ++i) absl::StrAppend(&out, i > 1 ? ", ?" : "?", i);
  return out;
}

void BindNodeCell(Statement& s, int index, const NodeCell& cell) {
  std::visit([&](const auto& value) { s.Bind(index, value); }, cell);
}

void BindNode(Statement& s, const models::Node& n) {
  int index = 1;
  for (const NodeColumn& column : NodeColumns()) BindNodeCell(s, index++, column.get(n));
}

models::Node ReadNode(const Statement& s) {
  models::Node n;
  n.id = s.Int(0);
  int c = 1;
  for (const NodeColumn& column : NodeColumns()) {
    switch (column.kind) {
      case NodeCellKind::kInteger: column.set(s.Int(c), n); break;
      case NodeCellKind::kReal: column.set(s.Double(c), n); break;
      case NodeCellKind::kOptionalReal: column.set(s.OptionalDouble(c), n); break;
      case NodeCellKind::kText: column.set(s.Text(c), n); break;
    }
    ++c;
  }
  return n;
}

std::string SqliteProfileScanSelect() {
  return absl::StrCat("SELECT p.id, n.name, w.key, p.content_hash, ", ProfileColumnList("p."),
                      " FROM profiles p JOIN nodes n ON n.id = p.node_id "
                      "JOIN workloads w ON w.id = p.workload_id");
}

absl::StatusOr<models::Profile> ReadProfile(const Statement& s) {
  models::Profile p;
  p.id = s.Int(0);
  p.node_name = s.Text(1);
  absl::StatusOr<models::WorkloadSpec> spec = models::ParseWorkloadKey(s.Text(2));
  if (!spec.ok()) {
    return absl::DataLossError(absl::StrCat("stored workload key is corrupt: ", spec.status().message()));
  }
  p.workload = *std::move(spec);
  p.content_hash = absl::BytesToHexString(s.Blob(3));
  ReadProfileColumns(s, 4, p);
  return p;
}

StoredModel ReadModel(const Statement& s) {
  StoredModel m;
  m.id = s.Int(0);
  m.name = s.Text(1);
  m.version = s.Int(2);
  m.target = s.Text(3);
  m.summary = s.Text(4);
  m.cv_mape = s.Double(5);
  m.created_at_us = s.Int(6);
  m.payload = s.Text(7);
  return m;
}

}  // namespace perfcast::db
