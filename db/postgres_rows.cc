#include "db/postgres_rows.h"

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store_rules.h"
#include "models/profile_columns.h"

namespace perfcast::db {

using models::Node;
using models::Profile;

std::string PostgresProfileScanSelect() {
  return absl::StrCat("SELECT p.id, n.name, w.key, encode(p.content_hash, 'hex'), ",
                      ProfileColumnList("p."),
                      " FROM profiles p JOIN nodes n ON n.id = p.node_id "
                      "JOIN workloads w ON w.id = p.workload_id");
}

std::string PostgresPlaceholders(int count, int first) {
  std::string out;
  for (int i = first; i < first + count; ++i) absl::StrAppend(&out, i > first ? ", $" : "$", i);
  return out;
}

std::optional<double> OptionalDouble(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<double>();
}

std::optional<std::string> NodeParam(const NodeCell& cell) {
  return std::visit(
      [](const auto& value) -> std::optional<std::string> {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<T, std::optional<double>>) {
          if (!value.has_value()) return std::nullopt;
          return pqxx::to_string(*value);
        } else {
          return pqxx::to_string(value);
        }
      },
      cell);
}

pqxx::result InsertNode(pqxx::transaction_base& tx, const std::string& name, const Node& n) {
  std::vector<std::optional<std::string>> values;
  for (const NodeColumn& column : NodeColumns()) values.push_back(NodeParam(column.get(n)));
  return tx.exec_prepared(name, pqxx::prepare::make_dynamic_params(values));
}

Node ReadNode(const pqxx::row& r) {
  Node n;
  n.id = r[0].as<int64_t>();
  int c = 1;
  for (const NodeColumn& column : NodeColumns()) {
    switch (column.kind) {
      case NodeCellKind::kInteger: column.set(r[c].as<int64_t>(), n); break;
      case NodeCellKind::kReal: column.set(r[c].as<double>(), n); break;
      case NodeCellKind::kOptionalReal: column.set(OptionalDouble(r[c]), n); break;
      case NodeCellKind::kText: column.set(r[c].as<std::string>(), n); break;
    }
    ++c;
  }
  return n;
}

absl::StatusOr<Profile> ReadProfile(const pqxx::row& r) {
  Profile p;
  p.id = r[0].as<int64_t>();
  p.node_name = r[1].as<std::string>();
  absl::StatusOr<models::WorkloadSpec> spec = models::ParseWorkloadKey(r[2].as<std::string>());
  if (!spec.ok()) {
    return absl::DataLossError(
        absl::StrCat("stored workload key is corrupt: ", spec.status().message()));
  }
  p.workload = *std::move(spec);
  p.content_hash = r[3].as<std::string>();
  int c = 4;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::optional<double>>) {
            *field = OptionalDouble(r[c]);
          } else {
            *field = r[c].as<T>();
          }
        },
        column.field(p));
    ++c;
  }
  return p;
}

StoredModel ReadModel(const pqxx::row& r, bool with_payload) {
  StoredModel m;
  m.id = r[0].as<int64_t>();
  m.name = r[1].as<std::string>();
  m.version = r[2].as<int64_t>();
  m.target = r[3].as<std::string>();
  m.summary = r[4].as<std::string>();
  m.cv_mape = r[5].as<double>();
  m.created_at_us = r[6].as<int64_t>();
  if (with_payload) m.payload = r[7].as<std::string>();
  return m;
}

void AppendProfileFilter(const ProfileFilter& f, std::string& sql, QueryParams& params) {
  absl::StrAppend(&sql, " AND p.measured_at_us >= ", params.Add(f.since_us),
                  " AND p.measured_at_us <= ", params.Add(f.until_us));
  if (!f.node_name.empty()) absl::StrAppend(&sql, " AND n.name = ", params.Add(f.node_name));
  if (!f.gpu_model.empty()) absl::StrAppend(&sql, " AND n.gpu_model = ", params.Add(f.gpu_model));
  if (!f.family.empty()) absl::StrAppend(&sql, " AND w.family = ", params.Add(f.family));
  if (f.phase.has_value()) {
    absl::StrAppend(&sql, " AND w.phase = ", params.Add(std::string(models::PhaseName(*f.phase))));
  }
  if (f.kind.has_value()) {
    absl::StrAppend(&sql, " AND w.kind = ",
                    params.Add(std::string(models::WorkloadKindName(*f.kind))));
  }
  if (f.method_version.has_value()) {
    absl::StrAppend(&sql, " AND p.method_version = ", params.Add(int64_t{*f.method_version}));
  }
}

}  // namespace perfcast::db
