// Thin RAII wrappers over the SQLite C API: a connection and a prepared
// statement. Every sqlite3* and sqlite3_stmt* in perfcast lives inside one of
// these, so no error path can leak a handle or leave a statement un-reset.
//
// Not thread-safe: a Connection and its Statements belong to one thread at a
// time (callers serialise access).
#ifndef PERFCAST_DB_SQLITE_HANDLE_H_
#define PERFCAST_DB_SQLITE_HANDLE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"

struct sqlite3;
struct sqlite3_stmt;

namespace perfcast::db {

// A prepared statement. Bind parameters are 1-based, columns 0-based, as in
// SQLite. Reset() is implied by the next Bind after a completed Step.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);
  Statement& Bind(int index, absl::string_view text);
  Statement& Bind(int index, const char* text) { return Bind(index, absl::string_view(text)); }
  Statement& BindBlob(int index, absl::string_view bytes);
  Statement& Bind(int index, const std::optional<double>& value);
  Statement& BindNull(int index);

  // Advances. Returns true if a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps a statement that must not return rows.
  absl::Status Run();
  // Clears bindings and rewinds, ready for reuse.
  void Reset();

  bool IsNull(int column) const;
  int64_t Int(int column) const;
  double Double(int column) const;
  std::optional<double> OptionalDouble(int column) const;
  std::string Text(int column) const;
  std::string Blob(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool needs_reset_ = false;
  // The first bind error, reported by the next Step (keeps call sites fluent).
  int bind_error_ = 0;

  void PrepareForBind();
};

// An open database connection.
class Connection {
 public:
  enum class Mode { kReadWriteCreate, kReadOnly };

  // Opens `path` (":memory:" for a private in-memory database) and sets a busy
  // timeout. Returns NotFound if a read-only open finds no file.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& path, Mode mode);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one or more statements that return no rows of interest.
  absl::Status Execute(absl::string_view sql);
  absl::StatusOr<std::unique_ptr<Statement>> Prepare(absl::string_view sql);
  // Runs a single-value query such as "PRAGMA user_version".
  absl::StatusOr<int64_t> QueryInt(absl::string_view sql);

  int64_t changes() const;
  int64_t last_insert_rowid() const;
  sqlite3* raw() { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

// Maps an SQLite result code (with the connection's message) to a Status:
// SQLITE_CONSTRAINT → AlreadyExists/FailedPrecondition, SQLITE_NOTADB and
// SQLITE_CORRUPT → DataLoss, SQLITE_BUSY → Unavailable, others → Internal.
absl::Status SqliteError(sqlite3* db, int code, absl::string_view context);

// Runs `body` inside BEGIN IMMEDIATE ... COMMIT; rolls back if it fails.
template <typename Body>
absl::Status InTransaction(Connection& connection, Body&& body) {
  RETURN_IF_ERROR(connection.Execute("BEGIN IMMEDIATE"));
  absl::Status status = body();
  if (status.ok()) status = connection.Execute("COMMIT");
  if (!status.ok()) connection.Execute("ROLLBACK").IgnoreError();
  return status;
}

}  // namespace perfcast::db

#endif  // PERFCAST_DB_SQLITE_HANDLE_H_
