// How the PostgreSQL store's records map onto statement parameters and
// result rows: nodes (in NodeColumns() order), profiles (in ProfileColumns()
// order) and fitted models, and the profile filter as WHERE conditions.
// Internal to db/.
#ifndef PERFCAST_DB_POSTGRES_ROWS_H_
#define PERFCAST_DB_POSTGRES_ROWS_H_

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "db/node_columns.h"
#include "db/store.h"
#include "models/profile.h"

namespace perfcast::db {

// Profile id, node name, workload key, content hash (hexadecimal), then the
// profile columns; joined to the node and workload tables as `p`, `n`, `w`.
std::string PostgresProfileScanSelect();

// The columns ReadModel reads, before the payload.
inline constexpr absl::string_view kPostgresModelColumns =
    "id, name, version, target, summary, cv_mape, created_at_us";

// "$first, $first+1, ..." (`count` placeholders).
std::string PostgresPlaceholders(int count, int first = 1);

// A nullable double column.
std::optional<double> OptionalDouble(const pqxx::field& f);

// A node cell as a statement parameter (NULL for an absent rate).
std::optional<std::string> NodeParam(const NodeCell& cell);

// Runs the prepared insert statement `name` (insert_node or
// insert_node_if_absent) with every node column of `n`. Throws libpqxx errors.
pqxx::result InsertNode(pqxx::transaction_base& tx, const std::string& name,
                        const models::Node& n);

// Reads a node from a row of `id, NodeColumnList()`.
models::Node ReadNode(const pqxx::row& r);

// Reads a profile from a row of PostgresProfileScanSelect(). DataLoss if its
// stored workload key does not parse.
absl::StatusOr<models::Profile> ReadProfile(const pqxx::row& r);

// Reads a model from a row of kPostgresModelColumns, then the payload if
// `with_payload`.
StoredModel ReadModel(const pqxx::row& r, bool with_payload);

class QueryParams {
 public:
  // Appends `value` and returns its placeholder.
  std::string Add(std::string value) {
    values_.push_back(std::move(value));
    return absl::StrCat("$", values_.size());
  }
  std::string Add(int64_t value) { return Add(absl::StrCat(value)); }
  pqxx::result Exec(pqxx::transaction_base& tx, const std::string& sql) const {
    return tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values_));
  }

 private:
  std::vector<std::string> values_;
};

// Appends the WHERE conditions of `f` to `sql` (which must accept " AND ...").
void AppendProfileFilter(const ProfileFilter& f, std::string& sql, QueryParams& params);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_POSTGRES_ROWS_H_
