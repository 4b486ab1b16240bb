#include "db/sqlite_handle.h"

#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::db {

absl::Status SqliteError(sqlite3* db, int code, absl::string_view context) {
  std::string message =
      absl::StrCat(context, ": ", db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code));
  switch (code & 0xff) {
    case SQLITE_CONSTRAINT:
      if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY) {
        return absl::AlreadyExistsError(message);
      }
      return absl::FailedPreconditionError(message);
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return absl::DataLossError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CANTOPEN:
      return absl::UnavailableError(message);
    case SQLITE_READONLY:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::PrepareForBind() {
  if (needs_reset_) {
    sqlite3_reset(stmt_);
    needs_reset_ = false;
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  needs_reset_ = false;
  bind_error_ = 0;
}

Statement& Statement::Bind(int index, int64_t value) {
  PrepareForBind();
  if (int rc = sqlite3_bind_int64(stmt_, index, value); rc != SQLITE_OK && !bind_error_) {
    bind_error_ = rc;
  }
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  PrepareForBind();
  if (int rc = sqlite3_bind_double(stmt_, index, value); rc != SQLITE_OK && !bind_error_) {
    bind_error_ = rc;
  }
  return *this;
}

Statement& Statement::Bind(int index, absl::string_view text) {
  PrepareForBind();
  if (int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()),
                                 SQLITE_TRANSIENT);
      rc != SQLITE_OK && !bind_error_) {
    bind_error_ = rc;
  }
  return *this;
}

Statement& Statement::BindBlob(int index, absl::string_view bytes) {
  PrepareForBind();
  if (int rc = sqlite3_bind_blob(stmt_, index, bytes.data(), static_cast<int>(bytes.size()),
                                 SQLITE_TRANSIENT);
      rc != SQLITE_OK && !bind_error_) {
    bind_error_ = rc;
  }
  return *this;
}

Statement& Statement::Bind(int index, const std::optional<double>& value) {
  return value.has_value() ? Bind(index, *value) : BindNull(index);
}

Statement& Statement::BindNull(int index) {
  PrepareForBind();
  if (int rc = sqlite3_bind_null(stmt_, index); rc != SQLITE_OK && !bind_error_) {
    bind_error_ = rc;
  }
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (bind_error_ != 0) {
    int rc = bind_error_;
    bind_error_ = 0;
    return SqliteError(db_, rc, "bind");
  }
  if (needs_reset_) {
    // A completed statement stepped again starts over.
    sqlite3_reset(stmt_);
    needs_reset_ = false;
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  needs_reset_ = true;
  if (rc == SQLITE_DONE) return false;
  // The statement names the failure's place; a long one (an import's INSERT
  // of many rows has a thousand parameters) only by its start.
  constexpr size_t kMaxContext = 120;
  absl::string_view sql = sqlite3_sql(stmt_);
  std::string context(sql.substr(0, kMaxContext));
  if (sql.size() > kMaxContext) context += "...";
  absl::Status status = SqliteError(db_, sqlite3_extended_errcode(db_), context);
  sqlite3_reset(stmt_);
  needs_reset_ = false;
  return status;
}

absl::Status Statement::Run() {
  RETURN_IF_ERROR(Step().status());
  needs_reset_ = true;
  return absl::OkStatus();
}

bool Statement::IsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
int64_t Statement::Int(int column) const { return sqlite3_column_int64(stmt_, column); }
double Statement::Double(int column) const { return sqlite3_column_double(stmt_, column); }
std::optional<double> Statement::OptionalDouble(int column) const {
  if (IsNull(column)) return std::nullopt;
  return Double(column);
}
std::string Statement::Text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text), sqlite3_column_bytes(stmt_, column));
}
std::string Statement::Blob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  if (blob == nullptr) return {};
  return std::string(static_cast<const char*>(blob), sqlite3_column_bytes(stmt_, column));
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path,
                                                             Mode mode) {
  if (mode == Mode::kReadOnly && path != ":memory:" && !std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat("no such store file: ", path));
  }
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI |
              (mode == Mode::kReadOnly ? SQLITE_OPEN_READONLY
                                       : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Connection> connection(new Connection(raw));
  if (rc != SQLITE_OK) {
    return SqliteError(raw, rc, absl::StrCat("cannot open ", path));
  }
  sqlite3_extended_result_codes(raw, 1);
  // Concurrent writers wait rather than fail at once.
  sqlite3_busy_timeout(raw, 10'000);
  return connection;
}

Connection::~Connection() { sqlite3_close_v2(db_); }

absl::Status Connection::Execute(absl::string_view sql) {
  std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string message = error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  return SqliteError(nullptr, sqlite3_extended_errcode(db_), message);
}

absl::StatusOr<std::unique_ptr<Statement>> Connection::Prepare(absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                              SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    return SqliteError(db_, rc, absl::StrCat("prepare '", sql.substr(0, 60), "'"));
  }
  return std::make_unique<Statement>(db_, stmt);
}

absl::StatusOr<int64_t> Connection::QueryInt(absl::string_view sql) {
  ASSIGN_OR_RETURN(auto stmt, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, stmt->Step());
  if (!row) return absl::InternalError(absl::StrCat("no result for ", sql));
  return stmt->Int(0);
}

int64_t Connection::changes() const { return sqlite3_changes64(db_); }
int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

}  // namespace perfcast::db
