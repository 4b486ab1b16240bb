// The SQLite implementation of Store: one file, WAL journal, foreign keys,
// STRICT tables, migrations keyed by `PRAGMA user_version` (schema.h),
// prepared statements and one transaction per import.
//
// Durability: `synchronous=FULL` in WAL mode, so an import whose Commit()
// returned OK survives a process crash and a power cut.
#ifndef PERFCAST_DB_SQLITE_STORE_H_
#define PERFCAST_DB_SQLITE_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "db/store.h"

namespace perfcast::db {

// Opens or creates perfcastd's database at `path`, in WAL mode, migrating it
// to the current schema. ":memory:" gives a private in-memory store (tests,
// benchmarks). A file that is not a server database is refused with
// FailedPrecondition before anything is written to it: an agent's store
// (marked kAgentApplicationId), a perfcast file not in WAL mode (agent
// stores from before that mark, copies), or another program's SQLite file.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path);

// Opens or creates an agent's local store at `path`: the same schema and
// journal, marked as an agent's (kAgentApplicationId) so that perfcastd
// refuses it as its own database; it is imported instead.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteAgentStore(const std::string& path);

// Opens an existing store file without ever writing to it. A file of an older
// schema version is copied into memory and migrated there, so an agent file
// from an older release imports as well as a current one.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStoreReadOnly(const std::string& path);

// Creates a server database at `path` (WAL mode) with schema version
// `version` exactly (tests of migrations from every older version use this). FailedPrecondition if the
// file already exists.
absl::Status CreateSqliteStoreAtVersion(const std::string& path, int64_t version);

// The page cache, in KiB, of the writer's connection while an import adds
// to a store that holds `profiles` profiles (counting those the import has
// added so far): room for the content-hash index with half as much again to
// spare, in whole MiB, between 8 and 64 MiB. Every imported row inserts into
// that index at a random place, so it must stay cached; the table's and the
// node index's rows go in at their ends, and a page of theirs, once full, is
// not wanted again. A cache that stops short of holding those too makes
// SQLite write them to the WAL while the import runs and reuse their memory
// (still warm in the CPU's caches), and leaves the commit less to write. A
// cache smaller than the index is far worse than either. Measurements:
// docs/sqlite-import.md.
int64_t ImportCacheKiB(int64_t profiles);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_SQLITE_STORE_H_
