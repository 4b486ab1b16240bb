// The SQLite store over connections already opened, configured and migrated
// (sqlite_open.cc opens them). Internal to db/.
#ifndef PERFCAST_DB_SQLITE_STORE_IMPL_H_
#define PERFCAST_DB_SQLITE_STORE_IMPL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "db/sqlite_handle.h"
#include "db/store.h"

namespace perfcast::db {

// The store that writes through `writer` (null: a read-only store, which
// refuses writes with FailedPrecondition) and reads through new read-only
// connections to `reader_path`, pooled; with `reader_path` empty (in-memory
// and read-only stores) reads go through `reader`, or `writer` if `reader` is
// null, under the write lock. Prepares the import's statements and, for a
// file with a writer, starts its WAL checkpointer (wal_checkpointer.h).
absl::StatusOr<std::unique_ptr<Store>> NewSqliteStore(std::unique_ptr<Connection> writer,
                                                      std::unique_ptr<Connection> reader,
                                                      std::string reader_path);

}  // namespace perfcast::db

#endif  // PERFCAST_DB_SQLITE_STORE_IMPL_H_
