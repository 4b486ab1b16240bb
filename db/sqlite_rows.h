// How the SQLite store's records map onto statement parameters and result
// rows: nodes (in NodeColumns() order), profiles (in ProfileColumns() order)
// and fitted models. Internal to db/.
#ifndef PERFCAST_DB_SQLITE_ROWS_H_
#define PERFCAST_DB_SQLITE_ROWS_H_

#include <string>

#include "absl/status/statusor.h"
#include "db/node_columns.h"
#include "db/sqlite_handle.h"
#include "db/store.h"
#include "models/profile.h"

namespace perfcast::db {

// "?1, ?2, ..., ?count".
std::string SqlitePlaceholders(int count);

// Binds one node cell as parameter `index`.
void BindNodeCell(Statement& s, int index, const NodeCell& cell);

// Binds every node column, parameters 1.. in NodeColumns() order.
void BindNode(Statement& s, const models::Node& n);

// Reads a node from a row of `id, NodeColumnList()`.
models::Node ReadNode(const Statement& s);

// The select list of profile scans: profile id, node name, workload key,
// content hash, then the profile columns; joined to the node and workload
// tables as `p`, `n` and `w`.
std::string SqliteProfileScanSelect();

// Reads a profile from a row of SqliteProfileScanSelect(). DataLoss if its stored
// workload key does not parse.
absl::StatusOr<models::Profile> ReadProfile(const Statement& s);

// Reads a model from a row of `id, name, version, target, summary, cv_mape,
// created_at_us, payload`.
StoredModel ReadModel(const Statement& s);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_SQLITE_ROWS_H_
