// The store's schema as an ordered list of migrations. `PRAGMA user_version`
// records how many have been applied, and `PRAGMA application_id` marks a
// file as a perfcast store so that a foreign SQLite file is never mistaken
// for one (or modified).
#ifndef PERFCAST_DB_SCHEMA_H_
#define PERFCAST_DB_SCHEMA_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "db/sqlite_handle.h"

namespace perfcast::db {

// 'PCFT' in ASCII: a perfcast store (every server database, and agent
// stores written before agents had their own mark).
inline constexpr int64_t kApplicationId = 0x50434654;
// 'PCFA': an agent's store. Same schema; perfcastd refuses it as its own
// database (see OpenSqliteStore) and reads it only to import it.
inline constexpr int64_t kAgentApplicationId = 0x50434641;

// Migration i (0-based) takes a store from version i to version i + 1.
const std::vector<absl::string_view>& Migrations();
inline int64_t CurrentSchemaVersion() { return static_cast<int64_t>(Migrations().size()); }

// Brings `connection` to `target_version` (default: current), each migration
// in its own transaction. A fresh (empty) database is stamped with the
// application id first.
// FailedPrecondition: the file belongs to another application, holds tables
// but no perfcast stamp, or has a newer version than this build knows.
// DataLoss: the file is not an SQLite database.
absl::Status Migrate(Connection& connection, int64_t target_version = -1);

// Checks, without writing, that `connection` is a perfcast store (server or
// agent) of a version this build can read; returns its version. Same errors
// as Migrate.
absl::StatusOr<int64_t> CheckStore(Connection& connection);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_SCHEMA_H_
