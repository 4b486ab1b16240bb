#include "db/wal_checkpointer.h"

#include <sqlite3.h>

#include <algorithm>
#include <utility>

#include "base/status_macros.h"

namespace perfcast::db {

absl::StatusOr<std::unique_ptr<WalCheckpointer>> WalCheckpointer::Start(Connection& writer,
                                                                        const std::string& path) {
  ASSIGN_OR_RETURN(auto connection, Connection::Open(path, Connection::Mode::kReadWriteCreate));
  // The checkpoint syncs the main file before the WAL may be reused.
  RETURN_IF_ERROR(connection->Execute("PRAGMA synchronous = FULL"));
  ASSIGN_OR_RETURN(int64_t page_size, writer.QueryInt("PRAGMA page_size"));
  const int wal_pages =
      static_cast<int>(std::max<int64_t>(1, kWalBytes / std::max<int64_t>(1, page_size)));
  std::unique_ptr<WalCheckpointer> checkpointer(
      new WalCheckpointer(writer, std::move(connection), wal_pages));
  // Replaces the hook through which SQLite runs its automatic checkpoints.
  sqlite3_wal_hook(writer.raw(), &WalCheckpointer::OnCommit, checkpointer.get());
  return checkpointer;
}

WalCheckpointer::WalCheckpointer(Connection& writer, std::unique_ptr<Connection> connection,
                                 int wal_pages)
    : writer_(writer),
      connection_(std::move(connection)),
      wal_pages_(wal_pages),
      thread_([this] { Run(); }) {}

WalCheckpointer::~WalCheckpointer() {
  sqlite3_wal_autocheckpoint(writer_.raw(), wal_pages_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

int WalCheckpointer::OnCommit(void* self, sqlite3*, const char*, int wal_pages) {
  auto* checkpointer = static_cast<WalCheckpointer*>(self);
  if (wal_pages >= checkpointer->wal_pages_) {
    {
      std::lock_guard<std::mutex> lock(checkpointer->mutex_);
      checkpointer->requested_ = true;
    }
    checkpointer->wake_.notify_all();
  }
  return SQLITE_OK;
}

void WalCheckpointer::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return requested_ || stopping_; });
    if (stopping_) return;
    requested_ = false;
    lock.unlock();
    // PASSIVE never waits for readers or the writer; what it cannot copy
    // now, the next request copies. Errors are left to that retry too, as
    // SQLite's automatic checkpoint leaves them.
    sqlite3_wal_checkpoint_v2(connection_->raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr,
                              nullptr);
    lock.lock();
  }
}

}  // namespace perfcast::db
