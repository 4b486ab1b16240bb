#include "tests/reliability/store_check.h"

#include <sqlite3.h>

#include <fstream>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"

namespace perfcast::testing {
namespace {

struct CloseDatabase {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
struct FinalizeStatement {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Database = std::unique_ptr<sqlite3, CloseDatabase>;
using Statement = std::unique_ptr<sqlite3_stmt, FinalizeStatement>;

absl::StatusOr<Database> OpenReadOnly(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  Database db(raw);
  if (rc != SQLITE_OK) {
    return absl::UnavailableError(absl::StrCat("cannot open ", path, ": ", sqlite3_errstr(rc)));
  }
  // perfcastd may be writing beside us (WAL readers never block, but a
  // recovery of a hot WAL briefly does).
  sqlite3_busy_timeout(raw, 10'000);
  return db;
}

absl::StatusOr<Statement> Prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  if (int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr); rc != SQLITE_OK) {
    return absl::InternalError(absl::StrCat(sql, ": ", sqlite3_errmsg(db)));
  }
  return Statement(raw);
}

std::string Text(sqlite3_stmt* stmt, int column) {
  const unsigned char* text = sqlite3_column_text(stmt, column);
  return text == nullptr ? std::string() : reinterpret_cast<const char*>(text);
}

}  // namespace

std::string CheckIntegrity(const std::string& path) {
  absl::StatusOr<Database> db = OpenReadOnly(path);
  if (!db.ok()) return std::string(db.status().message());
  std::string problems;
  for (const char* pragma : {"PRAGMA integrity_check", "PRAGMA foreign_key_check"}) {
    absl::StatusOr<Statement> stmt = Prepare(db->get(), pragma);
    if (!stmt.ok()) return std::string(stmt.status().message());
    int rc;
    while ((rc = sqlite3_step(stmt->get())) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(stmt->get()); ++c) {
        absl::StrAppend(&row, c > 0 ? "|" : "", Text(stmt->get(), c));
      }
      if (row != "ok") absl::StrAppend(&problems, pragma, ": ", row, "\n");
    }
    if (rc != SQLITE_DONE) {
      absl::StrAppend(&problems, pragma, " failed: ", sqlite3_errmsg(db->get()), "\n");
    }
  }
  return problems.empty() ? "ok" : problems;
}

absl::StatusOr<std::map<std::string, int64_t>> ProfilesPerNode(const std::string& path,
                                                               const std::string& prefix) {
  ASSIGN_OR_RETURN(Database db, OpenReadOnly(path));
  ASSIGN_OR_RETURN(
      Statement stmt,
      Prepare(db.get(),
              "SELECT n.name, COUNT(p.id) FROM nodes n LEFT JOIN profiles p ON p.node_id = n.id "
              "WHERE substr(n.name, 1, length(?1)) = ?1 GROUP BY n.id"));
  sqlite3_bind_text(stmt.get(), 1, prefix.c_str(), -1, SQLITE_TRANSIENT);
  std::map<std::string, int64_t> counts;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    counts[Text(stmt.get(), 0)] = sqlite3_column_int64(stmt.get(), 1);
  }
  if (rc != SQLITE_DONE) return absl::InternalError(sqlite3_errmsg(db.get()));
  return counts;
}

absl::StatusOr<std::set<std::string>> WorkloadKeysOf(const std::string& path,
                                                     const std::string& node) {
  ASSIGN_OR_RETURN(Database db, OpenReadOnly(path));
  ASSIGN_OR_RETURN(
      Statement stmt,
      Prepare(db.get(),
              "SELECT w.key FROM profiles p JOIN workloads w ON w.id = p.workload_id "
              "JOIN nodes n ON n.id = p.node_id WHERE n.name = ?1"));
  sqlite3_bind_text(stmt.get(), 1, node.c_str(), -1, SQLITE_TRANSIENT);
  std::set<std::string> keys;
  int rc;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) keys.insert(Text(stmt.get(), 0));
  if (rc != SQLITE_DONE) return absl::InternalError(sqlite3_errmsg(db.get()));
  return keys;
}

int64_t ResidentKib(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "VmRSS:")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    int64_t kib = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) return kib;
  }
  return -1;
}

}  // namespace perfcast::testing
