#include "db/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "db/node_columns.h"
#include "db/schema.h"
#include "db/sqlite_handle.h"
#include "db/store_rules.h"
#include "db/wal_checkpointer.h"
#include "models/descriptor.h"
#include "models/profile_columns.h"

namespace perfcast::db {
namespace {

using models::Node;
using models::Profile;

void BindCell(Statement& s, int index, const NodeCell& cell) {
  std::visit([&](const auto& value) { s.Bind(index, value); }, cell);
}

// Binds every node column, parameters 1.. in NodeColumns() order.
void BindNode(Statement& s, const Node& n) {
  int index = 1;
  for (const NodeColumn& column : NodeColumns()) BindCell(s, index++, column.get(n));
}

// Reads a node from a row of `id, NodeColumnList()`.
Node ReadNode(const Statement& s) {
  Node n;
  n.id = s.Int(0);
  int c = 1;
  for (const NodeColumn& column : NodeColumns()) {
    switch (column.kind) {
      case NodeCellKind::kInteger: column.set(s.Int(c), n); break;
      case NodeCellKind::kReal: column.set(s.Double(c), n); break;
      case NodeCellKind::kOptionalReal: column.set(s.OptionalDouble(c), n); break;
      case NodeCellKind::kText: column.set(s.Text(c), n); break;
    }
    ++c;
  }
  return n;
}

std::string Placeholders(int count) {
  std::string out;
  for (int i = 1; i <= count; ++i) absl::StrAppend(&out, i > 1 ? ", ?" : "?", i);
  return out;
}

// The profile row as an import inserts it: content hash, node id, workload
// id, then the profile columns.
constexpr int kProfileKeyColumns = 3;
int ProfileInsertColumnCount() {
  return kProfileKeyColumns + static_cast<int>(models::ProfileColumns().size());
}

// Profile rows an import inserts with one statement. Each sqlite3_step of a
// one-row INSERT starts its program, opens and positions its cursors and
// resets; one statement of many rows pays that once for all of them. On the
// idle 2-core VM (import_bench's SQLite alone, 4 KiB pages) 32 rows per
// statement wrote 226,000-231,000 rows/s against 164,000-183,000 one at a
// time; 64 and 128 gained nothing more.
constexpr int kProfilesPerInsert = 32;

// The writer's page cache outside imports (node and model writes,
// deregistration, every read of an in-memory store); imports size it
// themselves (ImportCacheKiB).
constexpr int64_t kWriterCacheKiB = 65536;

// The import's INSERT of up to `rows` profile rows, each of
// ProfileInsertColumnCount() parameters in turn, then one parameter more:
// how many of the rows to insert. The LIMIT lets the last, partial group of
// an import run through the same statement: the rows past it, stale or
// unbound, are never read.
//
// OR FAIL: with the default (ABORT) SQLite keeps a statement journal to undo
// a failed statement alone, copying every page it touches first (10-20% of
// the insert time, measured). A row's checks all come before its writes, and
// an import whose statement fails is rolled back whole (SqliteImport::Fail),
// so nothing needs it.
std::string InsertProfilesSql(int rows) {
  const int width = ProfileInsertColumnCount();
  std::string sql = absl::StrCat("INSERT OR FAIL INTO profiles (content_hash, node_id, workload_id, ",
                                 ProfileColumnList(), ") SELECT * FROM (VALUES ");
  for (int row = 0; row < rows; ++row) {
    absl::StrAppend(&sql, row > 0 ? ", (" : "(");
    for (int i = 1; i <= width; ++i) absl::StrAppend(&sql, i > 1 ? ", ?" : "?", row * width + i);
    absl::StrAppend(&sql, ")");
  }
  absl::StrAppend(&sql, ") LIMIT ?", rows * width + 1,
                  " ON CONFLICT (content_hash) DO NOTHING");
  return sql;
}

// Where each profile column lives inside a Profile and how it binds, found
// once from the column table: binding a row then costs one switch per column
// instead of a call through the column's accessor and two variant dispatches,
// which were 6% of an import writer's time (measured with import_bench). A
// member's offset is the same in every Profile, so the offsets found in one
// locate the columns of all.
class ProfileColumnBinder {
 public:
  ProfileColumnBinder() {
    const Profile probe;
    const char* base = reinterpret_cast<const char*>(&probe);
    for (const models::ProfileColumn& column : models::ProfileColumns()) {
      std::visit(
          [&](const auto* field) {
            using T = std::remove_cv_t<std::remove_pointer_t<decltype(field)>>;
            Slot slot;
            slot.offset = reinterpret_cast<const char*>(field) - base;
            if constexpr (std::is_same_v<T, int64_t>) {
              slot.kind = Kind::kInt64;
            } else if constexpr (std::is_same_v<T, int>) {
              slot.kind = Kind::kInt;
            } else if constexpr (std::is_same_v<T, double>) {
              slot.kind = Kind::kDouble;
            } else if constexpr (std::is_same_v<T, std::optional<double>>) {
              slot.kind = Kind::kOptionalDouble;
            } else {
              static_assert(std::is_same_v<T, std::string>);
              slot.kind = Kind::kText;
            }
            slots_.push_back(slot);
          },
          models::FieldOf(column, probe));
    }
  }

  // Binds the profile columns from parameter `first` on.
  void Bind(Statement& s, int first, const Profile& p) const {
    const char* base = reinterpret_cast<const char*>(&p);
    int index = first;
    for (const Slot& slot : slots_) {
      const char* at = base + slot.offset;
      switch (slot.kind) {
        case Kind::kInt64:
          s.Bind(index, *reinterpret_cast<const int64_t*>(at));
          break;
        case Kind::kInt:
          s.Bind(index, int64_t{*reinterpret_cast<const int*>(at)});
          break;
        case Kind::kDouble:
          s.Bind(index, *reinterpret_cast<const double*>(at));
          break;
        case Kind::kOptionalDouble:
          s.Bind(index, *reinterpret_cast<const std::optional<double>*>(at));
          break;
        case Kind::kText:
          s.Bind(index, absl::string_view(*reinterpret_cast<const std::string*>(at)));
          break;
      }
      ++index;
    }
  }

 private:
  enum class Kind { kInt64, kInt, kDouble, kOptionalDouble, kText };
  struct Slot {
    Kind kind = Kind::kInt64;
    ptrdiff_t offset = 0;
  };
  std::vector<Slot> slots_;
};

// Reads the profile columns from result column `first` on.
void ReadProfileColumns(const Statement& s, int first, Profile& p) {
  int c = first;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::optional<double>>) {
            *field = s.OptionalDouble(c);
          } else if constexpr (std::is_same_v<T, double>) {
            *field = s.Double(c);
          } else if constexpr (std::is_same_v<T, std::string>) {
            *field = s.Text(c);
          } else {
            *field = static_cast<T>(s.Int(c));
          }
        },
        column.field(p));
    ++c;
  }
}

// The select list used by scans: profile id, node name, workload key,
// content hash, then the profile columns.
std::string ScanSelect() {
  return absl::StrCat("SELECT p.id, n.name, w.key, p.content_hash, ", ProfileColumnList("p."),
                      " FROM profiles p JOIN nodes n ON n.id = p.node_id "
                      "JOIN workloads w ON w.id = p.workload_id");
}

absl::StatusOr<Profile> ReadProfile(const Statement& s) {
  Profile p;
  p.id = s.Int(0);
  p.node_name = s.Text(1);
  absl::StatusOr<models::WorkloadSpec> spec = models::ParseWorkloadKey(s.Text(2));
  if (!spec.ok()) {
    return absl::DataLossError(absl::StrCat("stored workload key is corrupt: ", spec.status().message()));
  }
  p.workload = *std::move(spec);
  p.content_hash = absl::BytesToHexString(s.Blob(3));
  ReadProfileColumns(s, 4, p);
  return p;
}

class SqliteStore;

// Statements an import reuses for every record, prepared once per store.
struct ImportStatements {
  std::unique_ptr<Statement> find_node;
  std::unique_ptr<Statement> find_workload;
  std::unique_ptr<Statement> insert_workload;
  // InsertProfilesSql(profiles_per_insert).
  std::unique_ptr<Statement> insert_profiles;
  int profiles_per_insert = 1;
  std::unique_ptr<Statement> insert_node;
  std::unique_ptr<Statement> refresh_node;
  ProfileColumnBinder profile_columns;
};

class SqliteStore final : public Store {
 public:
  // `writer` is null for a read-only store. `reader_path` is where new reader
  // connections open; empty means reads share the writer (in-memory stores).
  SqliteStore(std::unique_ptr<Connection> writer, std::unique_ptr<Connection> reader,
              std::string reader_path)
      : writer_(std::move(writer)), shared_reader_(std::move(reader)),
        reader_path_(std::move(reader_path)) {}

  absl::Status Init() {
    if (writer_ == nullptr) return absl::OkStatus();
    auto prepare = [&](std::unique_ptr<Statement>& out, const std::string& sql) -> absl::Status {
      auto stmt = writer_->Prepare(sql);
      if (!stmt.ok()) return stmt.status();
      out = *std::move(stmt);
      return absl::OkStatus();
    };
    ImportStatements& st = import_;
    // Within what this SQLite allows a statement to bind (999 before 3.32).
    const int max_parameters = sqlite3_limit(writer_->raw(), SQLITE_LIMIT_VARIABLE_NUMBER, -1);
    st.profiles_per_insert =
        std::clamp((max_parameters - 1) / ProfileInsertColumnCount(), 1, kProfilesPerInsert);
    for (auto [slot, sql] : std::initializer_list<std::pair<std::unique_ptr<Statement>*, std::string>>{
             {&st.find_node, "SELECT id, gpu_model FROM nodes WHERE name = ?1"},
             {&st.find_workload, "SELECT id FROM workloads WHERE key = ?1"},
             {&st.insert_workload,
              "INSERT INTO workloads (key, kind, family, batch_size, precision, phase, "
              "parameters, total_flops, inner_modules) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
             {&st.insert_profiles, InsertProfilesSql(st.profiles_per_insert)},
             {&st.insert_node,
              absl::StrCat("INSERT INTO nodes (", NodeColumnList(), ") VALUES (",
                           Placeholders(static_cast<int>(NodeColumns().size())), ")")},
             {&st.refresh_node, absl::StrCat("UPDATE nodes SET ", NodeRefreshAssignments("?"),
                                             " WHERE name = ?1 AND ", NodeRefreshGuard("?"))},
         }) {
      if (absl::Status s = prepare(*slot, sql); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Moves the WAL checkpoints of a file-backed store off its commits (see
  // wal_checkpointer.h).
  absl::Status StartCheckpointer() {
    absl::StatusOr<std::unique_ptr<WalCheckpointer>> started =
        WalCheckpointer::Start(*writer_, reader_path_);
    if (!started.ok()) return started.status();
    checkpointer_ = *std::move(started);
    return absl::OkStatus();
  }

  absl::StatusOr<Node> RegisterNode(const Node& node) override {
    if (absl::Status s = ValidateNode(node); !s.ok()) return s;
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    Node stored = node;
    stored.registered_at_us = node.registered_at_us > 0 ? node.registered_at_us : NowMicros();
    absl::Status status = InTransaction(*writer_, [&]() -> absl::Status {
      absl::Status s = InsertNodeLocked(stored);
      stored.id = writer_->last_insert_rowid();
      return s;
    });
    if (absl::IsAlreadyExists(status)) {
      return absl::AlreadyExistsError(absl::StrCat("a node named '", node.name, "' already exists"));
    }
    if (!status.ok()) return status;
    return stored;
  }

  absl::StatusOr<Node> GetNode(absl::string_view name) override {
    return WithReader([&](Connection& c) -> absl::StatusOr<Node> {
      auto stmt = c.Prepare(absl::StrCat("SELECT id, ", NodeColumnList(), " FROM nodes WHERE name = ?1"));
      if (!stmt.ok()) return stmt.status();
      (*stmt)->Bind(1, name);
      absl::StatusOr<bool> row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::NotFoundError(absl::StrCat("no node named '", name, "'"));
      return ReadNode(**stmt);
    });
  }

  absl::StatusOr<NodePage> ListNodes(const NodeFilter& filter) override {
    if (filter.page_size < 1 || filter.page_size > 1000) {
      return absl::InvalidArgumentError(
          absl::StrCat("page size must be within 1..1000, got ", filter.page_size));
    }
    int64_t after_id = 0;
    if (!filter.page_token.empty() &&
        (!absl::SimpleAtoi(filter.page_token, &after_id) || after_id < 0)) {
      return absl::InvalidArgumentError(absl::StrCat("invalid page token '", filter.page_token, "'"));
    }
    for (const auto& [key, value] : filter.labels) {
      if (!IsLabelKey(key)) {
        return absl::InvalidArgumentError(absl::StrCat("invalid label key '", key, "'"));
      }
    }
    std::string sql = absl::StrCat("SELECT id, ", NodeColumnList(), " FROM nodes WHERE id > ?1");
    if (!filter.gpu_model.empty()) absl::StrAppend(&sql, " AND gpu_model = ?2");
    int param = 3;
    for (const auto& [key, value] : filter.labels) {
      absl::StrAppend(&sql, " AND json_extract(labels, '$.\"", key, "\"') = ?", param++);
    }
    absl::StrAppend(&sql, " ORDER BY id LIMIT ", filter.page_size + 1);
    return WithReader([&](Connection& c) -> absl::StatusOr<NodePage> {
      auto stmt = c.Prepare(sql);
      if (!stmt.ok()) return stmt.status();
      Statement& s = **stmt;
      s.Bind(1, after_id);
      if (!filter.gpu_model.empty()) s.Bind(2, filter.gpu_model);
      int p = 3;
      for (const auto& [key, value] : filter.labels) s.Bind(p++, value);
      NodePage page;
      while (true) {
        absl::StatusOr<bool> row = s.Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        if (static_cast<int>(page.nodes.size()) == filter.page_size) {
          page.next_page_token = absl::StrCat(page.nodes.back().id);
          break;
        }
        page.nodes.push_back(ReadNode(s));
      }
      return page;
    });
  }

  absl::Status DeregisterNode(absl::string_view name, bool purge_profiles) override {
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    return InTransaction(*writer_, [&]() -> absl::Status {
      auto find = writer_->Prepare("SELECT id FROM nodes WHERE name = ?1");
      if (!find.ok()) return find.status();
      (*find)->Bind(1, name);
      absl::StatusOr<bool> row = (*find)->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::NotFoundError(absl::StrCat("no node named '", name, "'"));
      const int64_t id = (*find)->Int(0);
      auto count = writer_->Prepare("SELECT count(*) FROM profiles WHERE node_id = ?1");
      if (!count.ok()) return count.status();
      (*count)->Bind(1, id);
      if (absl::StatusOr<bool> r = (*count)->Step(); !r.ok()) return r.status();
      const int64_t profiles = (*count)->Int(0);
      if (profiles > 0 && !purge_profiles) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node '", name, "' has ", profiles,
            " profiles; remove them with it (--purge-profiles) or keep the node"));
      }
      for (absl::string_view sql : {"DELETE FROM profiles WHERE node_id = ?1",
                                    "DELETE FROM nodes WHERE id = ?1"}) {
        auto del = writer_->Prepare(sql);
        if (!del.ok()) return del.status();
        if (absl::Status s = (*del)->Bind(1, id).Run(); !s.ok()) return s;
      }
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginImport() override;

  absl::Status ScanProfiles(const ProfileFilter& filter,
                            const std::function<bool(const Profile&)>& visit) override {
    return WithReader([&](Connection& c) -> absl::Status {
      auto stmt = PrepareFiltered(c, ScanSelect(), filter, " ORDER BY p.id");
      if (!stmt.ok()) return stmt.status();
      while (true) {
        absl::StatusOr<bool> row = (*stmt)->Step();
        if (!row.ok()) return row.status();
        if (!*row) return absl::OkStatus();
        absl::StatusOr<Profile> profile = ReadProfile(**stmt);
        if (!profile.ok()) return profile.status();
        if (!visit(*profile)) return absl::OkStatus();
      }
    });
  }

  absl::StatusOr<int64_t> CountProfiles(const ProfileFilter& filter) override {
    return WithReader([&](Connection& c) -> absl::StatusOr<int64_t> {
      // Joined only to what the filter names: every profile has its node and
      // workload (foreign keys), so the joins change no count.
      std::string sql = "SELECT count(*) FROM profiles p";
      if (!filter.node_name.empty() || !filter.gpu_model.empty()) {
        absl::StrAppend(&sql, " JOIN nodes n ON n.id = p.node_id");
      }
      if (!filter.family.empty() || filter.phase.has_value() || filter.kind.has_value()) {
        absl::StrAppend(&sql, " JOIN workloads w ON w.id = p.workload_id");
      }
      auto stmt = PrepareFiltered(c, std::move(sql), filter, "");
      if (!stmt.ok()) return stmt.status();
      absl::StatusOr<bool> row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      return (*stmt)->Int(0);
    });
  }

  absl::Status RecordSkipped(const SkippedRun& run) override {
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    auto stmt = writer_->Prepare(
        "INSERT INTO skipped_runs (node_name, workload_key, reason, at_us) VALUES (?1, ?2, ?3, ?4)");
    if (!stmt.ok()) return stmt.status();
    return (*stmt)
        ->Bind(1, run.node_name)
        .Bind(2, run.workload_key)
        .Bind(3, run.reason)
        .Bind(4, run.at_us > 0 ? run.at_us : NowMicros())
        .Run();
  }

  absl::StatusOr<std::vector<SkippedRun>> ListSkipped() override {
    return WithReader([&](Connection& c) -> absl::StatusOr<std::vector<SkippedRun>> {
      auto stmt = c.Prepare(
          "SELECT node_name, workload_key, reason, at_us FROM skipped_runs ORDER BY id");
      if (!stmt.ok()) return stmt.status();
      std::vector<SkippedRun> runs;
      while (true) {
        absl::StatusOr<bool> row = (*stmt)->Step();
        if (!row.ok()) return row.status();
        if (!*row) return runs;
        runs.push_back({(*stmt)->Text(0), (*stmt)->Text(1), (*stmt)->Text(2), (*stmt)->Int(3)});
      }
    });
  }

  absl::StatusOr<StoredModel> SaveModel(const StoredModel& model) override {
    if (model.name.empty()) return absl::InvalidArgumentError("model name is empty");
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    StoredModel stored = model;
    stored.created_at_us = model.created_at_us > 0 ? model.created_at_us : NowMicros();
    absl::Status status = InTransaction(*writer_, [&]() -> absl::Status {
      auto next = writer_->Prepare(
          "SELECT coalesce(max(version), 0) + 1 FROM models WHERE name = ?1");
      if (!next.ok()) return next.status();
      (*next)->Bind(1, stored.name);
      if (absl::StatusOr<bool> r = (*next)->Step(); !r.ok()) return r.status();
      stored.version = (*next)->Int(0);
      auto insert = writer_->Prepare(
          "INSERT INTO models (name, version, target, summary, cv_mape, created_at_us, payload) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
      if (!insert.ok()) return insert.status();
      absl::Status s = (*insert)
                           ->Bind(1, stored.name)
                           .Bind(2, stored.version)
                           .Bind(3, stored.target)
                           .Bind(4, stored.summary)
                           .Bind(5, stored.cv_mape)
                           .Bind(6, stored.created_at_us)
                           .Bind(7, stored.payload)
                           .Run();
      stored.id = writer_->last_insert_rowid();
      return s;
    });
    if (!status.ok()) return status;
    return stored;
  }

  absl::StatusOr<StoredModel> GetModel(int64_t id) override {
    return QueryModel("WHERE id = ?1", [&](Statement& s) { s.Bind(1, id); },
                      absl::StrCat("no model with id ", id));
  }

  absl::StatusOr<StoredModel> LatestModel(absl::string_view name) override {
    return QueryModel("WHERE name = ?1 ORDER BY version DESC LIMIT 1",
                      [&](Statement& s) { s.Bind(1, name); },
                      absl::StrCat("no fitted model named '", name, "'; run `perfcast fit` first"));
  }

  absl::StatusOr<std::vector<StoredModel>> ListModels() override {
    return WithReader([&](Connection& c) -> absl::StatusOr<std::vector<StoredModel>> {
      auto stmt = c.Prepare(
          "SELECT id, name, version, target, summary, cv_mape, created_at_us, '' FROM models "
          "ORDER BY created_at_us DESC, id DESC");
      if (!stmt.ok()) return stmt.status();
      std::vector<StoredModel> models;
      while (true) {
        absl::StatusOr<bool> row = (*stmt)->Step();
        if (!row.ok()) return row.status();
        if (!*row) return models;
        models.push_back(ReadModel(**stmt));
      }
    });
  }

  absl::StatusOr<int64_t> ApproximateSizeBytes() override {
    if (reader_path_.empty()) {
      // In memory, or a read-only copy: the pages are all there is.
      return WithReader([&](Connection& c) -> absl::StatusOr<int64_t> {
        absl::StatusOr<int64_t> pages = c.QueryInt("PRAGMA page_count");
        if (!pages.ok()) return pages.status();
        absl::StatusOr<int64_t> page_size = c.QueryInt("PRAGMA page_size");
        if (!page_size.ok()) return page_size.status();
        return *pages * *page_size;
      });
    }
    // On disk the WAL holds committed pages not yet checkpointed into the
    // main file, and it takes disk space of its own.
    std::error_code error;
    const std::uintmax_t main_bytes = std::filesystem::file_size(reader_path_, error);
    if (error) {
      return absl::UnavailableError(
          absl::StrCat("cannot read the size of ", reader_path_, ": ", error.message()));
    }
    const std::uintmax_t wal_bytes = std::filesystem::file_size(reader_path_ + "-wal", error);
    return static_cast<int64_t>(main_bytes + (error ? 0 : wal_bytes));
  }

  // --- Used by SqliteImport, which holds write_mutex_. ---
  Connection& writer() { return *writer_; }
  ImportStatements& import_statements() { return import_; }
  std::mutex& write_mutex() { return write_mutex_; }

  absl::Status InsertNodeLocked(const Node& node) {
    Statement& insert = *import_.insert_node;
    BindNode(insert, node);
    return insert.Run();
  }

 private:
  static absl::Status ReadOnlyError() {
    return absl::FailedPreconditionError("the store was opened read-only");
  }

  static StoredModel ReadModel(const Statement& s) {
    StoredModel m;
    m.id = s.Int(0);
    m.name = s.Text(1);
    m.version = s.Int(2);
    m.target = s.Text(3);
    m.summary = s.Text(4);
    m.cv_mape = s.Double(5);
    m.created_at_us = s.Int(6);
    m.payload = s.Text(7);
    return m;
  }

  template <typename BindFn>
  absl::StatusOr<StoredModel> QueryModel(absl::string_view where, BindFn bind,
                                         const std::string& not_found) {
    return WithReader([&](Connection& c) -> absl::StatusOr<StoredModel> {
      auto stmt = c.Prepare(absl::StrCat(
          "SELECT id, name, version, target, summary, cv_mape, created_at_us, payload "
          "FROM models ",
          where));
      if (!stmt.ok()) return stmt.status();
      bind(**stmt);
      absl::StatusOr<bool> row = (*stmt)->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::NotFoundError(not_found);
      return ReadModel(**stmt);
    });
  }

  static absl::StatusOr<std::unique_ptr<Statement>> PrepareFiltered(
      Connection& c, std::string sql, const ProfileFilter& f, absl::string_view suffix) {
    // A bound left at its default matches every stored time, and is left out
    // of the query: with no condition at all, a count reads only the
    // smallest index.
    const bool since = f.since_us != ProfileFilter{}.since_us;
    const bool until = f.until_us != ProfileFilter{}.until_us;
    absl::StrAppend(&sql, " WHERE 1");
    if (since) absl::StrAppend(&sql, " AND p.measured_at_us >= ?1");
    if (until) absl::StrAppend(&sql, " AND p.measured_at_us <= ?2");
    if (!f.node_name.empty()) absl::StrAppend(&sql, " AND n.name = ?3");
    if (!f.gpu_model.empty()) absl::StrAppend(&sql, " AND n.gpu_model = ?4");
    if (!f.family.empty()) absl::StrAppend(&sql, " AND w.family = ?5");
    if (f.phase.has_value()) absl::StrAppend(&sql, " AND w.phase = ?6");
    if (f.kind.has_value()) absl::StrAppend(&sql, " AND w.kind = ?7");
    if (f.method_version.has_value()) absl::StrAppend(&sql, " AND p.method_version = ?8");
    absl::StrAppend(&sql, suffix);
    if (f.limit > 0) absl::StrAppend(&sql, " LIMIT ", f.limit);
    auto stmt = c.Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    Statement& s = **stmt;
    if (since) s.Bind(1, f.since_us);
    if (until) s.Bind(2, f.until_us);
    if (!f.node_name.empty()) s.Bind(3, f.node_name);
    if (!f.gpu_model.empty()) s.Bind(4, f.gpu_model);
    if (!f.family.empty()) s.Bind(5, f.family);
    if (f.phase.has_value()) s.Bind(6, models::PhaseName(*f.phase));
    if (f.kind.has_value()) s.Bind(7, models::WorkloadKindName(*f.kind));
    if (f.method_version.has_value()) s.Bind(8, int64_t{*f.method_version});
    return stmt;
  }

  // Runs `fn` with a reader connection: a pooled one for file stores, the
  // shared one (under the write lock) for in-memory and read-only stores.
  template <typename Fn>
  auto WithReader(Fn fn) -> decltype(fn(std::declval<Connection&>())) {
    if (reader_path_.empty()) {
      std::lock_guard<std::mutex> lock(write_mutex_);
      return fn(shared_reader_ != nullptr ? *shared_reader_ : *writer_);
    }
    std::unique_ptr<Connection> connection;
    {
      std::lock_guard<std::mutex> lock(pool_mutex_);
      if (!idle_readers_.empty()) {
        connection = std::move(idle_readers_.back());
        idle_readers_.pop_back();
      }
    }
    if (connection == nullptr) {
      auto opened = Connection::Open(reader_path_, Connection::Mode::kReadOnly);
      if (!opened.ok()) return opened.status();
      connection = *std::move(opened);
    }
    auto result = fn(*connection);
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (idle_readers_.size() < kMaxIdleReaders) idle_readers_.push_back(std::move(connection));
    return result;
  }

  static constexpr size_t kMaxIdleReaders = 8;

  std::unique_ptr<Connection> writer_;
  std::unique_ptr<Connection> shared_reader_;
  std::string reader_path_;
  // After writer_: stops before the writer closes.
  std::unique_ptr<WalCheckpointer> checkpointer_;
  std::mutex write_mutex_;
  ImportStatements import_;
  std::mutex pool_mutex_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;
};

class SqliteImport final : public ImportTransaction {
 public:
  // `stored_profiles`: how many profiles the store held when the import
  // began (an upper bound will do).
  SqliteImport(SqliteStore& store, std::unique_lock<std::mutex> lock, int64_t stored_profiles)
      : store_(store), lock_(std::move(lock)), stored_profiles_(stored_profiles) {}

  // Sizes the writer's page cache for the store as it grows (ImportCacheKiB).
  absl::Status FitCache() {
    const int64_t kib = ImportCacheKiB(stored_profiles_ + state_.summary.accepted);
    if (kib == cache_kib_) return absl::OkStatus();
    cache_kib_ = kib;
    return store_.writer().Execute(absl::StrCat("PRAGMA cache_size = -", kib));
  }

  ~SqliteImport() override {
    if (!state_.finished) RollBack();
  }

  absl::Status UpsertNode(const Node& node) override {
    if (absl::Status s = state_.Usable(); !s.ok()) return s;
    if (absl::Status s = ValidateNode(node); !s.ok()) return s;
    ImportStatements& st = store_.import_statements();
    st.find_node->Bind(1, node.name);
    absl::StatusOr<bool> row = st.find_node->Step();
    if (!row.ok()) return Fail(row.status());
    if (*row) {
      const int64_t id = st.find_node->Int(0);
      const std::string model = st.find_node->Text(1);
      st.find_node->Reset();
      if (model != node.gpu.model) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node '", node.name, "' is registered with GPU ", model, ", not ", node.gpu.model));
      }
      Node fresh = node;
      if (fresh.registered_at_us <= 0) fresh.registered_at_us = NowMicros();
      Statement& u = *st.refresh_node;
      u.Bind(1, node.name);
      int index = 2;
      for (const NodeColumn& column : NodeColumns()) {
        if (column.refreshed) BindCell(u, index++, column.get(fresh));
      }
      if (absl::Status s = u.Run(); !s.ok()) return Fail(s);
      node_ids_[node.name] = id;
      return absl::OkStatus();
    }
    st.find_node->Reset();
    Node stored = node;
    if (stored.registered_at_us <= 0) stored.registered_at_us = NowMicros();
    if (absl::Status s = store_.InsertNodeLocked(stored); !s.ok()) return Fail(s);
    node_ids_[node.name] = store_.writer().last_insert_rowid();
    return absl::OkStatus();
  }

  absl::Status AddPrepared(int64_t index, absl::StatusOr<PreparedProfile>&& prepared) override {
    if (absl::Status s = state_.Usable(); !s.ok()) return s;
    if (!prepared.ok()) return state_.Reject(index, prepared.status().message());
    const Profile& profile = prepared->profile();
    absl::StatusOr<int64_t> node_id = NodeId(prepared->node_name());
    if (!node_id.ok()) {
      if (absl::IsNotFound(node_id.status())) {
        return state_.Reject(index, node_id.status().message());
      }
      return Fail(node_id.status());
    }
    absl::StatusOr<int64_t> workload_id = WorkloadId(prepared->workload_name(), profile.workload);
    if (!workload_id.ok()) return Fail(workload_id.status());

    // The row's values go straight into its place in the next INSERT; SQLite
    // copies what it keeps, so nothing of `prepared` need outlive this call.
    ImportStatements& st = store_.import_statements();
    Statement& s = *st.insert_profiles;
    const int first = staged_rows_ * ProfileInsertColumnCount();
    s.BindBlob(first + 1, prepared->hash_bytes());
    s.Bind(first + 2, *node_id).Bind(first + 3, *workload_id);
    st.profile_columns.Bind(s, first + kProfileKeyColumns + 1, profile);
    if (++staged_rows_ == st.profiles_per_insert) return InsertStaged();
    return absl::OkStatus();
  }

  // Inserts the staged rows first, so that the counts are exact. The object
  // is never const itself (BeginImport hands out a mutable one); if the
  // insert fails, the import is rolled back and the next call reports it.
  const ImportSummary& summary() const override {
    auto* self = const_cast<SqliteImport*>(this);
    if (self->state_.Usable().ok()) self->InsertStaged().IgnoreError();
    return state_.summary;
  }

  absl::StatusOr<ImportSummary> Commit() override {
    if (absl::Status s = state_.Usable(); !s.ok()) return s;
    if (absl::Status s = InsertStaged(); !s.ok()) return s;
    absl::Status status = store_.writer().Execute("COMMIT");
    if (!status.ok()) {
      RollBack();
      return status;
    }
    End();
    return state_.summary;
  }

 private:
  // Inserts the rows bound since the last insert; a profile whose content
  // hash is stored already (or staged twice) is a duplicate.
  absl::Status InsertStaged() {
    if (staged_rows_ == 0) return absl::OkStatus();
    Statement& s = *store_.import_statements().insert_profiles;
    const int rows = staged_rows_;
    staged_rows_ = 0;
    s.Bind(store_.import_statements().profiles_per_insert * ProfileInsertColumnCount() + 1,
           int64_t{rows});
    if (absl::Status status = s.Run(); !status.ok()) return Fail(status);
    const int64_t inserted = store_.writer().changes();
    state_.summary.accepted += inserted;
    state_.summary.duplicates += rows - inserted;
    if (absl::Status status = FitCache(); !status.ok()) return Fail(status);
    return absl::OkStatus();
  }

  // A failed statement leaves the transaction unusable: undo it at once so
  // the write lock is not held until the caller drops the object.
  absl::Status Fail(absl::Status status) {
    state_.failed = true;
    RollBack();
    return status;
  }

  void RollBack() {
    store_.writer().Execute("ROLLBACK").IgnoreError();
    End();
  }

  // After COMMIT or ROLLBACK: every other write checks foreign keys again
  // (see BeginImport) and has the writer's usual cache, and the lock is
  // released, since the import object may outlive its transaction.
  void End() {
    store_.writer()
        .Execute(absl::StrCat("PRAGMA foreign_keys = ON; PRAGMA cache_size = -", kWriterCacheKiB))
        .IgnoreError();
    state_.finished = true;
    if (lock_.owns_lock()) lock_.unlock();
  }

  absl::StatusOr<int64_t> NodeId(const PrehashedName& name) {
    if (auto it = node_ids_.find(name); it != node_ids_.end()) return it->second;
    Statement& find = *store_.import_statements().find_node;
    find.Bind(1, name.text);
    absl::StatusOr<bool> row = find.Step();
    if (!row.ok()) return row.status();
    if (!*row) {
      return absl::NotFoundError(absl::StrCat(
          "unknown node '", name.text, "' (register it first: perfcast nodes register)"));
    }
    const int64_t id = find.Int(0);
    find.Reset();
    node_ids_.emplace(std::string(name.text), id);
    return id;
  }

  absl::StatusOr<int64_t> WorkloadId(const PrehashedName& key, const models::WorkloadSpec& spec) {
    if (auto it = workload_ids_.find(key); it != workload_ids_.end()) return it->second;
    ImportStatements& st = store_.import_statements();
    st.find_workload->Bind(1, key.text);
    absl::StatusOr<bool> row = st.find_workload->Step();
    if (!row.ok()) return row.status();
    int64_t id = 0;
    if (*row) {
      id = st.find_workload->Int(0);
      st.find_workload->Reset();
    } else {
      st.find_workload->Reset();
      Statement& insert = *st.insert_workload;
      insert.Bind(1, key.text).Bind(2, models::WorkloadKindName(spec.kind)).Bind(3, spec.family);
      insert.Bind(4, spec.batch_size).Bind(5, models::PrecisionName(spec.precision));
      insert.Bind(6, models::PhaseName(spec.phase));
      // Analytic columns make the store self-describing for ad-hoc SQL; a
      // workload that cannot be described is still stored.
      absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(spec);
      if (d.ok()) {
        insert.Bind(7, d->parameters).Bind(8, d->total_flops()).Bind(9, d->inner_modules);
      } else {
        insert.BindNull(7).BindNull(8).BindNull(9);
      }
      if (absl::Status s = insert.Run(); !s.ok()) return s;
      id = store_.writer().last_insert_rowid();
    }
    workload_ids_.emplace(std::string(key.text), id);
    return id;
  }

  SqliteStore& store_;
  std::unique_lock<std::mutex> lock_;
  const int64_t stored_profiles_;
  // The writer's cache size as FitCache last set it.
  int64_t cache_kib_ = 0;
  ImportState state_;
  // Rows bound into the insert statement and not yet inserted.
  int staged_rows_ = 0;
  // Ids by name, looked up with the hashes the profiles were prepared with.
  absl::flat_hash_map<std::string, int64_t, PrehashedNameHash, PrehashedNameEq> node_ids_;
  absl::flat_hash_map<std::string, int64_t, PrehashedNameHash, PrehashedNameEq> workload_ids_;
};

absl::StatusOr<std::unique_ptr<ImportTransaction>> SqliteStore::BeginImport() {
  if (writer_ == nullptr) return ReadOnlyError();
  std::unique_lock<std::mutex> lock(write_mutex_);
  // SQLite would look up each profile's node and workload to check its
  // foreign keys: two more B-tree searches per row, 7% of the insert time
  // (measured). An import writes only ids it read or inserted itself inside
  // this transaction, under the write lock (its caches die with it), so the
  // check is off for the import's transaction alone. The pragma does nothing
  // inside a transaction, hence before BEGIN; SqliteImport::End turns it
  // back on however the import ends.
  if (absl::Status s = writer_->Execute("PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE"); !s.ok()) {
    writer_->Execute("PRAGMA foreign_keys = ON").IgnoreError();
    return s;
  }
  // The largest id bounds the count from above (deregistration deletes rows)
  // and is found in one descent of the table.
  absl::StatusOr<int64_t> stored = writer_->QueryInt("SELECT max(id) FROM profiles");
  auto import = std::make_unique<SqliteImport>(*this, std::move(lock), stored.ok() ? *stored : 0);
  if (!stored.ok()) return stored.status();  // the import rolls back
  if (absl::Status s = import->FitCache(); !s.ok()) return s;
  return std::unique_ptr<ImportTransaction>(std::move(import));
}

enum class Role { kServer, kAgent };

// The page size of a new database file. Against SQLite's 4 KiB, 16 KiB
// pages make an import's rows a quarter as many pages to allocate, fill,
// balance, checksum and write: on the idle VM import_bench's SQLite alone (one
// row per INSERT) wrote 191,000 and 196,000 rows/s at 4 KiB, 245,000 at 16
// KiB (64 KiB: 249,000), and its commit took 0.26-0.32 s against 0.19 s. A
// small write (a node, a model) writes 16 KiB per page it touches instead of
// 4. An existing file keeps its page size (WAL mode cannot change it).
constexpr int kNewFilePageSize = 16384;

absl::Status ConfigureWriter(Connection& c, bool file_backed, bool fresh) {
  // WAL lets readers run beside the single writer; FULL makes an
  // acknowledged commit durable across power loss, not only process crashes.
  if (file_backed) {
    // Before WAL mode, which fixes the page size when it creates the file.
    if (fresh) {
      if (absl::Status s = c.Execute(absl::StrCat("PRAGMA page_size = ", kNewFilePageSize));
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = c.Execute("PRAGMA journal_mode = WAL"); !s.ok()) return s;
  }
  return c.Execute(
      absl::StrCat("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA temp_store = MEMORY;"
                   "PRAGMA cache_size = -", kWriterCacheKiB));
}

}  // namespace

int64_t ImportCacheKiB(int64_t profiles) {
  // The content-hash index took 27 bytes a profile (1,200,000 random hashes,
  // 16 KiB pages; dbstat).
  constexpr int64_t kIndexBytesPerProfile = 27;
  constexpr int64_t kMinKiB = 8192;
  const int64_t wanted_kib = std::max<int64_t>(profiles, 0) * kIndexBytesPerProfile * 3 / 2 / 1024;
  const int64_t whole_mib_kib = (wanted_kib + 1023) / 1024 * 1024;
  return std::clamp(whole_mib_kib, kMinKiB, kWriterCacheKiB);
}

namespace {

// OK when the perfcast store behind `c` is a server database. An agent's
// store carries kAgentApplicationId; one written before that mark existed
// (as the shipped data/*.sqlite) or a copy of a database is told apart by its
// journal: perfcastd keeps its database in WAL mode, and SQLite keeps that
// mode in the file.
absl::Status IsServerDatabase(Connection& c, const std::string& path, bool in_memory) {
  absl::StatusOr<int64_t> app = c.QueryInt("PRAGMA application_id");
  if (!app.ok()) return app.status();
  bool agent = *app == kAgentApplicationId;
  if (!agent && !in_memory) {
    absl::StatusOr<std::unique_ptr<Statement>> mode = c.Prepare("PRAGMA journal_mode");
    if (!mode.ok()) return mode.status();
    absl::StatusOr<bool> row = (*mode)->Step();
    if (!row.ok()) return row.status();
    agent = !*row || absl::AsciiStrToLower((*mode)->Text(0)) != "wal";
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
  auto writer = Connection::Open(path, Connection::Mode::kReadWriteCreate);
  if (!writer.ok()) return writer.status();
  absl::StatusOr<int64_t> version = CheckStore(**writer);
  if (!version.ok()) return version.status();
  if (role == Role::kServer && *version > 0) {
    // Reading the header and the journal mode writes nothing; the checks
    // come before anything that would.
    absl::Status refused = IsServerDatabase(**writer, path, in_memory);
    if (!refused.ok()) return refused;
  }
  if (absl::Status s = ConfigureWriter(**writer, !in_memory, *version == 0); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot configure ", path, ": ", s.message()));
  }
  if (absl::Status s = Migrate(**writer); !s.ok()) return s;
  if (role == Role::kAgent) {
    if (absl::Status s = (*writer)->Execute(
            absl::StrCat("PRAGMA application_id = ", kAgentApplicationId));
        !s.ok()) {
      return s;
    }
  }
  auto store = std::make_unique<SqliteStore>(*std::move(writer), nullptr,
                                             in_memory ? std::string() : path);
  if (absl::Status s = store->Init(); !s.ok()) return s;
  if (!in_memory) {
    if (absl::Status s = store->StartCheckpointer(); !s.ok()) return s;
  }
  return store;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path) {
  return Open(path, Role::kServer);
}

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteAgentStore(const std::string& path) {
  return Open(path, Role::kAgent);
}

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStoreReadOnly(const std::string& path) {
  auto connection = Connection::Open(path, Connection::Mode::kReadOnly);
  if (!connection.ok()) return connection.status();
  absl::StatusOr<int64_t> version = CheckStore(**connection);
  if (!version.ok()) return version.status();
  if (*version == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is an empty SQLite file, not a perfcast store"));
  }
  if (*version < CurrentSchemaVersion()) {
    auto copy = Connection::Open(":memory:", Connection::Mode::kReadWriteCreate);
    if (!copy.ok()) return copy.status();
    sqlite3_backup* backup = sqlite3_backup_init((*copy)->raw(), "main", (*connection)->raw(), "main");
    if (backup == nullptr) return SqliteError((*copy)->raw(), SQLITE_ERROR, "copy for migration");
    sqlite3_backup_step(backup, -1);
    if (int rc = sqlite3_backup_finish(backup); rc != SQLITE_OK) {
      return SqliteError((*copy)->raw(), rc, "copy for migration");
    }
    if (absl::Status s = Migrate(**copy); !s.ok()) return s;
    connection = std::move(copy);
  }
  return std::unique_ptr<Store>(
      std::make_unique<SqliteStore>(nullptr, *std::move(connection), std::string()));
}

absl::Status CreateSqliteStoreAtVersion(const std::string& path, int64_t version) {
  if (std::filesystem::exists(path)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " already exists"));
  }
  auto connection = Connection::Open(path, Connection::Mode::kReadWriteCreate);
  if (!connection.ok()) return connection.status();
  // As perfcastd left its database at every version.
  if (absl::Status s = (*connection)->Execute("PRAGMA journal_mode = WAL"); !s.ok()) return s;
  return Migrate(**connection, version);
}

}  // namespace perfcast::db
