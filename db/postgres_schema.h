// The PostgreSQL store's schema: numbered migrations recorded in the table
// perfcast_schema_migrations (one row per applied version). The column set
// mirrors the SQLite schema (schema.h). Internal to db/.
#ifndef PERFCAST_DB_POSTGRES_SCHEMA_H_
#define PERFCAST_DB_POSTGRES_SCHEMA_H_

#include <cstdint>
#include <pqxx/connection>

#include "absl/status/status.h"

namespace perfcast::db {

// First key of perfcast's advisory locks (pg_advisory_xact_lock(int4, int4)):
// 'PCFT', perfcast's application id, so that they never collide with another
// application's locks in a shared database. Second keys below.
inline constexpr int kPostgresLockSpace = 0x50434654;
inline constexpr int kPostgresMigrationLock = 1;
inline constexpr int kPostgresImportLock = 2;

// Applies every pending migration in one transaction under an advisory lock,
// so that replicas starting together migrate exactly once (the later ones
// wait, then find nothing to do). FailedPrecondition for a database that
// holds tables but no perfcast store, or a newer schema than this build
// knows. Throws libpqxx exceptions for database errors. `target_version`
// (default: current) stops earlier, for tests of later migrations.
absl::Status MigratePostgres(pqxx::connection& connection, int64_t target_version = -1);

// For read-only opens: OK if the database holds a store of exactly the
// current version; FailedPrecondition otherwise. Writes nothing.
absl::Status CheckPostgresSchemaIsCurrent(pqxx::connection& connection);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_POSTGRES_SCHEMA_H_
