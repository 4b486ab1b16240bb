// The SQLite store's import transaction: the statements an import reuses and
// the ImportTransaction that holds the store's write lock from BEGIN to
// COMMIT or ROLLBACK. Internal to db/ (sqlite_store.cc begins imports).
#ifndef PERFCAST_DB_SQLITE_IMPORT_H_
#define PERFCAST_DB_SQLITE_IMPORT_H_

#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/profile_column_binder.h"
#include "db/sqlite_handle.h"
#include "db/store.h"
#include "models/hardware.h"

namespace perfcast::db {

// The writer's page cache outside imports (node and model writes,
// deregistration, every read of an in-memory store); imports size it
// themselves (ImportCacheKiB).
inline constexpr int64_t kWriterCacheKiB = 65536;

// Statements an import reuses for every record, prepared once per store on
// its writer connection. Used under the store's write lock only.
struct ImportStatements {
  // Prepares every statement on `writer`.
  absl::Status Prepare(Connection& writer);

  // Inserts `node` as a new row (its id is the writer's last_insert_rowid()).
  absl::Status InsertNode(const models::Node& node);

  std::unique_ptr<Statement> find_node;
  std::unique_ptr<Statement> find_workload;
  std::unique_ptr<Statement> insert_workload;
  // The INSERT of up to profiles_per_insert profile rows.
  std::unique_ptr<Statement> insert_profiles;
  int profiles_per_insert = 1;
  std::unique_ptr<Statement> insert_node;
  std::unique_ptr<Statement> refresh_node;
  ProfileColumnBinder profile_columns;
};

// Begins an import on `writer`, whose store's write lock `lock` holds; the
// import keeps the lock until it commits or rolls back. Errors of BEGIN
// IMMEDIATE (Unavailable when another process writes) as returned.
absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginSqliteImport(
    Connection& writer, ImportStatements& statements, std::unique_lock<std::mutex> lock);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_SQLITE_IMPORT_H_
