// Checkpoints an SQLite database's write-ahead log on a thread of its own,
// in place of SQLite's automatic checkpoint. That one runs inside the COMMIT
// that leaves 1,000 pages or more in the WAL: after a large import, the
// client waits for its answer while every page the import wrote is copied
// into the main file and synced. Here the COMMIT only wakes the thread.
//
// Crash safety does not change: a commit is durable once it is in the WAL
// (synchronous = FULL); a checkpoint only moves committed pages into the
// main file, and one cut short by a crash is redone from the WAL.
//
// Thread-safety: the hook runs on whichever thread commits on the writer;
// the object itself is used by its owner only.
#ifndef PERFCAST_DB_WAL_CHECKPOINTER_H_
#define PERFCAST_DB_WAL_CHECKPOINTER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "db/sqlite_handle.h"

struct sqlite3;

namespace perfcast::db {

class WalCheckpointer {
 public:
  // Takes over `writer`'s checkpoints for the database file at `path` (in
  // WAL mode), checkpointing through a connection of its own. `writer` must
  // outlive the checkpointer.
  static absl::StatusOr<std::unique_ptr<WalCheckpointer>> Start(Connection& writer,
                                                                const std::string& path);

  // Finishes a checkpoint under way, stops the thread and hands checkpoints
  // back to SQLite's automatic ones on `writer`.
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

 private:
  // SQLite's own threshold (wal_autocheckpoint's default), in pages.
  static constexpr int kWalPages = 1000;
  // The same at SQLite's default page size, 4 KiB, in bytes: a database
  // with larger pages checkpoints after as many bytes, not pages.
  static constexpr int64_t kWalBytes = int64_t{kWalPages} * 4096;

  WalCheckpointer(Connection& writer, std::unique_ptr<Connection> connection, int wal_pages);
  static int OnCommit(void* self, sqlite3* db, const char* name, int wal_pages);
  void Run();

  Connection& writer_;
  std::unique_ptr<Connection> connection_;
  const int wal_pages_;  // kWalBytes in the database's pages
  std::mutex mutex_;
  std::condition_variable wake_;
  bool requested_ = false;  // guarded by mutex_
  bool stopping_ = false;   // guarded by mutex_
  std::thread thread_;
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_WAL_CHECKPOINTER_H_
