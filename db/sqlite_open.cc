// Opening, creating and migrating SQLite store files (sqlite_store.h): the
// writer's configuration, the refusal of files that are not the server's
// database, and the read-only open that migrates an old file in memory.
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/schema.h"
#include "db/sqlite_handle.h"
#include "db/sqlite_import.h"
#include "db/sqlite_store.h"
#include "db/sqlite_store_impl.h"

namespace perfcast::db {
namespace {

enum class Role { kServer, kAgent };

// The page size of a new database file. Against SQLite's 4 KiB, 16 KiB
// pages make an import's rows a quarter as many pages to allocate, fill,
// balance, checksum and write, and its commit shorter (docs/sqlite-import.md);
// a small write (a node, a model) writes 16 KiB per page it touches instead
// of 4. An existing file keeps its page size (WAL mode cannot change it).
constexpr int kNewFilePageSize = 16384;

absl::Status ConfigureWriter(Connection& c, bool file_backed, bool fresh) {
  // WAL lets readers run beside the single writer; FULL makes an
  // acknowledged commit durable across power loss, not only process crashes.
  if (file_backed) {
    // Before WAL mode, which fixes the page size when it creates the file.
    if (fresh) {
      RETURN_IF_ERROR(c.Execute(absl::StrCat("PRAGMA page_size = ", kNewFilePageSize)));
    }
    RETURN_IF_ERROR(c.Execute("PRAGMA journal_mode = WAL"));
  }
  return c.Execute(
      absl::StrCat("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;"
                   "PRAGMA cache_size = -", kWriterCacheKiB));
}

// OK when the perfcast store behind `c` is a server database. An agent's
// store carries kAgentApplicationId; one written before that mark existed
// (as the shipped data/*.sqlite) or a copy of a database is told apart by its
// journal: perfcastd keeps its database in WAL mode, and SQLite keeps that
// mode in the file.
absl::Status IsServerDatabase(Connection& c, const std::string& path, bool in_memory) {
  ASSIGN_OR_RETURN(int64_t app, c.QueryInt("PRAGMA application_id"));
  bool agent = app == kAgentApplicationId;
  if (!agent && !in_memory) {
    ASSIGN_OR_RETURN(std::unique_ptr<Statement> mode, c.Prepare("PRAGMA journal_mode"));
    ASSIGN_OR_RETURN(bool row, mode->Step());
    agent = !row || absl::AsciiStrToLower(mode->Text(0)) != "wal";
  }
  if (!agent) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      path, " is a perfcast agent store (or a copy), not a server database: it was left "
      "untouched. Import it with `perfcast import ", path,
      "` into the server's own database; a copied server database is adopted with `sqlite3 ",
      path, " 'PRAGMA journal_mode=WAL'`"));
}

absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path, Role role) {
  const bool in_memory = path == ":memory:";
  if (!in_memory) {
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code error;
    if (!parent.empty()) std::filesystem::create_directories(parent, error);
  }
  ASSIGN_OR_RETURN(auto writer, Connection::Open(path, Connection::Mode::kReadWriteCreate));
  ASSIGN_OR_RETURN(int64_t version, CheckStore(*writer));
  if (role == Role::kServer && version > 0) {
    // Reading the header and the journal mode writes nothing; the checks
    // come before anything that would.
    absl::Status refused = IsServerDatabase(*writer, path, in_memory);
    if (!refused.ok()) return refused;
  }
  if (absl::Status s = ConfigureWriter(*writer, !in_memory, version == 0); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot configure ", path, ": ", s.message()));
  }
  RETURN_IF_ERROR(Migrate(*writer));
  if (role == Role::kAgent) {
    RETURN_IF_ERROR(writer->Execute(absl::StrCat("PRAGMA application_id = ", kAgentApplicationId)));
  }
  return NewSqliteStore(std::move(writer), nullptr, in_memory ? std::string() : path);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  return Open(path, Role::kServer);
}

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteAgentStore(const std::string& path) {
  return Open(path, Role::kAgent);
}

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStoreReadOnly(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<Connection> connection,
                   Connection::Open(path, Connection::Mode::kReadOnly));
  ASSIGN_OR_RETURN(int64_t version, CheckStore(*connection));
  if (version == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is an empty SQLite file, not a perfcast store"));
  }
  if (version < CurrentSchemaVersion()) {
    ASSIGN_OR_RETURN(auto copy, Connection::Open(":memory:", Connection::Mode::kReadWriteCreate));
    sqlite3_backup* backup = sqlite3_backup_init(copy->raw(), "main", connection->raw(), "main");
    if (backup == nullptr) return SqliteError(copy->raw(), SQLITE_ERROR, "copy for migration");
    sqlite3_backup_step(backup, -1);
    if (int rc = sqlite3_backup_finish(backup); rc != SQLITE_OK) {
      return SqliteError(copy->raw(), rc, "copy for migration");
    }
    RETURN_IF_ERROR(Migrate(*copy));
    connection = std::move(copy);
  }
  return NewSqliteStore(nullptr, std::move(connection), std::string());
}

absl::Status CreateSqliteStoreAtVersion(const std::string& path, int64_t version) {
  if (std::filesystem::exists(path)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " already exists"));
  }
  ASSIGN_OR_RETURN(auto connection, Connection::Open(path, Connection::Mode::kReadWriteCreate));
  // As perfcastd left its database at every version.
  RETURN_IF_ERROR(connection->Execute("PRAGMA journal_mode = WAL"));
  return Migrate(*connection, version);
}

}  // namespace perfcast::db
