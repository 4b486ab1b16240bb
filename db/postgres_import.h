// The PostgreSQL store's import transaction: one READ COMMITTED transaction
// on a pooled connection, serialised store-wide by an advisory lock (see
// postgres_store.h). Internal to db/.
#ifndef PERFCAST_DB_POSTGRES_IMPORT_H_
#define PERFCAST_DB_POSTGRES_IMPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "db/postgres_connection.h"
#include "db/store.h"

namespace perfcast::db {

// Begins an import on a connection of `pool`, which it holds until the
// import ends, once it holds the store's import lock. Aborted if another
// import keeps the lock past the timeout; Unavailable if the server cannot
// be reached; other libpqxx errors as PqxxExceptionToStatus maps them.
absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginPostgresImport(
    PostgresConnectionPool& pool);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_POSTGRES_IMPORT_H_
