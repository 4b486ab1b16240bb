#include "db/postgres_connection.h"

#include <exception>
#include <pqxx/pqxx>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"

namespace perfcast::db {
namespace {

// libpq's messages span lines ("...failed: Connection refused\n\tIs the
// server running..."); statuses travel as one line (logs, gRPC, CLI).
std::string ExceptionMessage(const std::exception& e) {
  return absl::StrReplaceAll(absl::StripTrailingAsciiWhitespace(e.what()),
                             {{"\n\t", " "}, {"\n", " "}});
}

}  // namespace

absl::Status PqxxExceptionToStatus() {
  try {
    throw;
  } catch (const pqxx::unique_violation& e) {
    return absl::AlreadyExistsError(ExceptionMessage(e));
  } catch (const pqxx::integrity_constraint_violation& e) {
    return absl::FailedPreconditionError(ExceptionMessage(e));
  } catch (const pqxx::transaction_rollback& e) {
    // Serialization failure or deadlock: the caller may retry.
    return absl::AbortedError(ExceptionMessage(e));
  } catch (const pqxx::in_doubt_error& e) {
    return absl::UnavailableError(absl::StrCat(
        "the connection broke during COMMIT; whether it took effect is unknown: ",
        ExceptionMessage(e)));
  } catch (const pqxx::broken_connection& e) {
    return absl::UnavailableError(absl::StrCat("PostgreSQL unreachable: ", ExceptionMessage(e)));
  } catch (const pqxx::insufficient_privilege& e) {
    return absl::PermissionDeniedError(ExceptionMessage(e));
  } catch (const pqxx::insufficient_resources& e) {
    return absl::ResourceExhaustedError(ExceptionMessage(e));
  } catch (const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    // Class 08: connection exception; 57: operator intervention (shutdown).
    if (absl::StartsWith(state, "08") || absl::StartsWith(state, "57")) {
      return absl::UnavailableError(absl::StrCat("PostgreSQL unavailable: ", ExceptionMessage(e)));
    }
    if (state == "25006") {  // read_only_sql_transaction
      return absl::FailedPreconditionError(ExceptionMessage(e));
    }
    return absl::InternalError(absl::StrCat("PostgreSQL error ", state, ": ", ExceptionMessage(e)));
  } catch (const pqxx::conversion_error& e) {
    return absl::DataLossError(absl::StrCat("a stored value cannot be read: ", ExceptionMessage(e)));
  } catch (const std::exception& e) {
    return absl::InternalError(ExceptionMessage(e));
  } catch (...) {
    return absl::UnknownError("unknown exception from libpqxx");
  }
}

bool PqxxConnectionLost() {
  try {
    throw;
  } catch (const pqxx::broken_connection&) {
    return true;
  } catch (const pqxx::in_doubt_error&) {
    return true;
  } catch (const pqxx::sql_error& e) {
    const std::string state = e.sqlstate();
    return absl::StartsWith(state, "08") || absl::StartsWith(state, "57");
  } catch (...) {
    return false;
  }
}

bool PqxxSafeToRetry() {
  try {
    throw;
  } catch (const pqxx::in_doubt_error&) {
    return false;
  } catch (...) {
    return PqxxConnectionLost();
  }
}

absl::StatusOr<PostgresConnectionPool::Lease> PostgresConnectionPool::Acquire() {
  std::unique_lock<std::mutex> lock(mutex_);
  available_.wait(lock, [&] { return !idle_.empty() || open_ < max_connections_; });
  if (!idle_.empty()) {
    std::unique_ptr<pqxx::connection> connection = std::move(idle_.back());
    idle_.pop_back();
    return Lease(this, std::move(connection));
  }
  ++open_;
  lock.unlock();
  absl::StatusOr<std::unique_ptr<pqxx::connection>> connection = Connect();
  if (!connection.ok()) {
    Return(nullptr, /*broken=*/true);
    return connection.status();
  }
  return Lease(this, *std::move(connection));
}

absl::StatusOr<std::unique_ptr<pqxx::connection>> PostgresConnectionPool::Connect() {
  try {
    auto connection = std::make_unique<pqxx::connection>(uri_);
    if (read_only_) connection->set_variable("default_transaction_read_only", "on");
    for (const auto& [name, sql] : statements_) connection->prepare(name, sql);
    return connection;
  } catch (...) {
    return PqxxExceptionToStatus();
  }
}

void PostgresConnectionPool::Return(std::unique_ptr<pqxx::connection> connection, bool broken) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (broken || connection == nullptr || !connection->is_open()) {
    --open_;
  } else {
    idle_.push_back(std::move(connection));
  }
  available_.notify_one();
}

}  // namespace perfcast::db
