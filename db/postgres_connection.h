// Connections to PostgreSQL for the store: a bounded pool of libpqxx
// connections, and the one place where libpqxx exceptions become
// absl::Status. Internal to db/.
#ifndef PERFCAST_DB_POSTGRES_CONNECTION_H_
#define PERFCAST_DB_POSTGRES_CONNECTION_H_

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <pqxx/connection>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace perfcast::db {

// Maps the exception being handled to a Status. Call only inside a catch.
// Unique violation -> AlreadyExists; other constraint violations and writes
// in a read-only session -> FailedPrecondition; serialization failure or
// deadlock -> Aborted; broken connection, server shutting down, unknown
// commit outcome -> Unavailable; missing privilege -> PermissionDenied; out
// of resources -> ResourceExhausted; unreadable value -> DataLoss; anything
// else -> Internal.
absl::Status PqxxExceptionToStatus();

// Whether the exception being handled leaves its connection unusable.
// Call only inside a catch.
bool PqxxConnectionLost();

// Whether the work that raised the exception being handled may run again on
// a fresh connection: the connection was lost, but not during a COMMIT (whose
// outcome is then unknown). Call only inside a catch.
bool PqxxSafeToRetry();

// A bounded pool of connections to one database. Thread-safe.
class PostgresConnectionPool {
 public:
  // A checked-out connection, back in the pool when destroyed (or closed for
  // good if marked broken). Must not outlive its pool.
  class Lease {
   public:
    Lease(PostgresConnectionPool* pool, std::unique_ptr<pqxx::connection> connection)
        : pool_(pool), connection_(std::move(connection)) {}
    Lease(Lease&& other) noexcept
        : pool_(std::exchange(other.pool_, nullptr)),
          connection_(std::move(other.connection_)),
          broken_(other.broken_) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    ~Lease() {
      if (pool_ != nullptr) pool_->Return(std::move(connection_), broken_);
    }
    pqxx::connection& operator*() const { return *connection_; }
    void MarkBroken() { broken_ = true; }

   private:
    PostgresConnectionPool* pool_;
    std::unique_ptr<pqxx::connection> connection_;
    bool broken_ = false;
  };

  // `uri` is a libpq connection URI. Every new connection prepares
  // `statements` (name, SQL) and, if `read_only`, runs its sessions with
  // default_transaction_read_only. At most `max_connections` are open.
  PostgresConnectionPool(std::string uri, bool read_only,
                         std::vector<std::pair<std::string, std::string>> statements,
                         size_t max_connections)
      : uri_(std::move(uri)), read_only_(read_only), statements_(std::move(statements)),
        max_connections_(max_connections) {}
  PostgresConnectionPool(const PostgresConnectionPool&) = delete;
  PostgresConnectionPool& operator=(const PostgresConnectionPool&) = delete;

  // Waits while max_connections are checked out. Unavailable if a new
  // connection cannot be opened.
  absl::StatusOr<Lease> Acquire();

 private:
  absl::StatusOr<std::unique_ptr<pqxx::connection>> Connect();
  void Return(std::unique_ptr<pqxx::connection> connection, bool broken);

  const std::string uri_;
  const bool read_only_;
  const std::vector<std::pair<std::string, std::string>> statements_;
  const size_t max_connections_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  size_t open_ = 0;  // idle plus checked out
};

}  // namespace perfcast::db

#endif  // PERFCAST_DB_POSTGRES_CONNECTION_H_
