// The PostgreSQL implementation of Store, for a perfcast fleet: several
// perfcastd replicas share one database. Same semantics and error codes as
// the SQLite store (sqlite_store.h); what differs is how concurrency is made
// safe across processes:
//
//  - Schema: numbered migrations recorded in `perfcast_schema_migrations`,
//    all pending ones applied in one transaction under a transaction-scoped
//    advisory lock, so replicas starting together migrate exactly once. A
//    database whose schema is newer than this build is refused
//    (FailedPrecondition), as is one holding tables but no perfcast schema.
//  - Imports: an ImportTransaction is one READ COMMITTED transaction on its
//    own connection. Imports are serialised store-wide (across replicas) by an
//    advisory lock taken at BeginImport, the equivalent of SQLite's single
//    writer: two imports of overlapping streams can then never deadlock on
//    each other's content hashes, and `ON CONFLICT DO NOTHING` on the hash
//    keeps every profile once. Reads and the other writes never wait for it.
//    BeginImport waits at most 60 s for the lock, then returns Aborted. An
//    import sends its profiles 500 rows per INSERT (from Add, from summary(),
//    which flushes so that its counts are exact, and from Commit).
//  - Model versions: SaveModel takes an advisory lock per model name before
//    it picks max(version) + 1; UNIQUE (name, version) is the backstop.
//
// Connections: a pool of at most 16 libpqxx connections per store, one per
// concurrent call (an open import holds one until it ends); see
// postgres_connection.h. A connection that breaks is dropped; the call runs
// once more on a fresh one (so connections that died idle in the pool after
// a server restart or failover fail no call), except when it broke during a
// COMMIT or after a scan's visitor saw rows: then it returns Unavailable.
// libpqxx exceptions
// never leave this library: unique violation -> AlreadyExists, broken
// connection / server shutting down -> Unavailable, serialization failure or
// deadlock -> Aborted, missing privilege -> PermissionDenied, anything else
// -> Internal. Scans read 2,000 rows per query under one REPEATABLE READ
// snapshot, so memory stays bounded on large stores.
//
// Read-only stores (OpenPostgresStoreReadOnly) read normally and refuse every
// write with FailedPrecondition, like a read-only SQLite store; their
// sessions also run with default_transaction_read_only. They never migrate:
// a database of an older schema is FailedPrecondition until a read-write
// open has migrated it.
//
// Thread-safety: a store may be shared between threads.
#ifndef PERFCAST_DB_POSTGRES_STORE_H_
#define PERFCAST_DB_POSTGRES_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "db/store.h"

namespace perfcast::db {

// Opens the store in the database named by the libpq connection URI `uri`
// ("postgresql://user@host:5432/perfcast?sslmode=require"; passwords are
// best kept in PGPASSWORD or ~/.pgpass), creating or migrating the schema.
// Unavailable if the server cannot be reached; FailedPrecondition for a
// foreign or newer schema.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri);

// Opens an existing, current store without ever writing to it.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStoreReadOnly(const std::string& uri);

// The newest PostgreSQL schema version this build knows (number of migrations).
int64_t PostgresSchemaVersion();

// Brings the empty database at `uri` to schema `version` only, as an older
// build left it: for tests of migrations. Errors as OpenPostgresStore.
absl::Status CreatePostgresStoreAtVersion(const std::string& uri, int64_t version);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_POSTGRES_STORE_H_
