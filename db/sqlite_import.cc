#include "db/sqlite_import.h"

#include <sqlite3.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/node_columns.h"
#include "db/prepared_profile.h"
#include "db/sqlite_rows.h"
#include "db/sqlite_store.h"
#include "db/store_rules.h"
#include "models/descriptor.h"
#include "models/profile_columns.h"

namespace perfcast::db {
namespace {

using models::Node;
using models::Profile;


// Profile rows an import inserts with one statement. Each sqlite3_step of a
// one-row INSERT starts its program, opens and positions its cursors and
// resets; one statement of many rows pays that once for all of them, and
// larger groups gained nothing more (docs/sqlite-import.md).
constexpr int kProfilesPerInsert = 32;

// The import's INSERT of up to `rows` profile rows, each of
// ProfileInsertColumnCount() parameters in turn, then one parameter more:
// how many of the rows to insert. The LIMIT lets the last, partial group of
// an import run through the same statement: the rows past it, stale or
// unbound, are never read.
//
// OR FAIL: with the default (ABORT) SQLite keeps a statement journal to undo
// a failed statement alone, copying every page it touches first (a large
// share of the insert time, docs/sqlite-import.md). A row's checks all come
// before its writes, and an import whose statement fails is rolled back whole
// (SqliteImport::Fail), so nothing needs it.
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

// One import: a transaction on the store's writer, holding its write lock
// until it ends.
class SqliteImport final : public ImportTransaction {
 public:
  // `stored_profiles`: how many profiles the store held when the import
  // began (an upper bound will do).
  SqliteImport(Connection& writer, ImportStatements& statements, std::unique_lock<std::mutex> lock,
               int64_t stored_profiles)
      : writer_(writer), statements_(statements), lock_(std::move(lock)),
        stored_profiles_(stored_profiles) {}

  // Sizes the writer's page cache for the store as it grows (ImportCacheKiB).
  absl::Status FitCache() {
    const int64_t kib = ImportCacheKiB(stored_profiles_ + state_.summary.accepted);
    if (kib == cache_kib_) return absl::OkStatus();
    cache_kib_ = kib;
    return writer_.Execute(absl::StrCat("PRAGMA cache_size = -", kib));
  }

  ~SqliteImport() override {
    if (!state_.finished) RollBack();
  }

  absl::Status UpsertNode(const Node& node) override {
    RETURN_IF_ERROR(state_.Usable());
    RETURN_IF_ERROR(ValidateNode(node));
    ImportStatements& st = statements_;
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
        if (column.refreshed) BindNodeCell(u, index++, column.get(fresh));
      }
      if (absl::Status s = u.Run(); !s.ok()) return Fail(s);
      node_ids_[node.name] = id;
      return absl::OkStatus();
    }
    st.find_node->Reset();
    Node stored = node;
    if (stored.registered_at_us <= 0) stored.registered_at_us = NowMicros();
    if (absl::Status s = statements_.InsertNode(stored); !s.ok()) return Fail(s);
    node_ids_[node.name] = writer_.last_insert_rowid();
    return absl::OkStatus();
  }

  absl::Status AddPrepared(int64_t index, absl::StatusOr<PreparedProfile>&& prepared) override {
    RETURN_IF_ERROR(state_.Usable());
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
    ImportStatements& st = statements_;
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
    RETURN_IF_ERROR(state_.Usable());
    RETURN_IF_ERROR(InsertStaged());
    absl::Status status = writer_.Execute("COMMIT");
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
    Statement& s = *statements_.insert_profiles;
    const int rows = staged_rows_;
    staged_rows_ = 0;
    s.Bind(statements_.profiles_per_insert * ProfileInsertColumnCount() + 1,
           int64_t{rows});
    if (absl::Status status = s.Run(); !status.ok()) return Fail(status);
    const int64_t inserted = writer_.changes();
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
    writer_.Execute("ROLLBACK").IgnoreError();
    End();
  }

  // After COMMIT or ROLLBACK: every other write checks foreign keys again
  // (see BeginImport) and has the writer's usual cache, and the lock is
  // released, since the import object may outlive its transaction.
  void End() {
    writer_
        .Execute(absl::StrCat("PRAGMA foreign_keys = ON; PRAGMA cache_size = -", kWriterCacheKiB))
        .IgnoreError();
    state_.finished = true;
    if (lock_.owns_lock()) lock_.unlock();
  }

  absl::StatusOr<int64_t> NodeId(const PrehashedName& name) {
    if (auto it = node_ids_.find(name); it != node_ids_.end()) return it->second;
    Statement& find = *statements_.find_node;
    find.Bind(1, name.text);
    ASSIGN_OR_RETURN(bool row, find.Step());
    if (!row) {
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
    ImportStatements& st = statements_;
    st.find_workload->Bind(1, key.text);
    ASSIGN_OR_RETURN(bool row, st.find_workload->Step());
    int64_t id = 0;
    if (row) {
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
      RETURN_IF_ERROR(insert.Run());
      id = writer_.last_insert_rowid();
    }
    workload_ids_.emplace(std::string(key.text), id);
    return id;
  }

  Connection& writer_;
  ImportStatements& statements_;
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

}  // namespace

absl::Status ImportStatements::Prepare(Connection& writer) {
  auto prepare = [&](std::unique_ptr<Statement>& out, const std::string& sql) -> absl::Status {
    auto stmt = writer.Prepare(sql);
    if (!stmt.ok()) return stmt.status();
    out = *std::move(stmt);
    return absl::OkStatus();
  };
  // Within what this SQLite allows a statement to bind (999 before 3.32).
  const int max_parameters = sqlite3_limit(writer.raw(), SQLITE_LIMIT_VARIABLE_NUMBER, -1);
  profiles_per_insert =
      std::clamp((max_parameters - 1) / ProfileInsertColumnCount(), 1, kProfilesPerInsert);
  for (auto [slot, sql] : std::initializer_list<std::pair<std::unique_ptr<Statement>*, std::string>>{
           {&find_node, "SELECT id, gpu_model FROM nodes WHERE name = ?1"},
           {&find_workload, "SELECT id FROM workloads WHERE key = ?1"},
           {&insert_workload,
            "INSERT INTO workloads (key, kind, family, batch_size, precision, phase, "
            "parameters, total_flops, inner_modules) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"},
           {&insert_profiles, InsertProfilesSql(profiles_per_insert)},
           {&insert_node,
            absl::StrCat("INSERT INTO nodes (", NodeColumnList(), ") VALUES (",
                         SqlitePlaceholders(static_cast<int>(NodeColumns().size())), ")")},
           {&refresh_node, absl::StrCat("UPDATE nodes SET ", NodeRefreshAssignments("?"),
                                        " WHERE name = ?1 AND ", NodeRefreshGuard("?"))},
       }) {
    RETURN_IF_ERROR(prepare(*slot, sql));
  }
  return absl::OkStatus();
}

absl::Status ImportStatements::InsertNode(const models::Node& node) {
  BindNode(*insert_node, node);
  return insert_node->Run();
}

absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginSqliteImport(
    Connection& writer, ImportStatements& statements, std::unique_lock<std::mutex> lock) {
  // SQLite would look up each profile's node and workload to check its
  // foreign keys: two more B-tree searches per row (docs/sqlite-import.md).
  // An import writes only ids it read or inserted itself inside
  // this transaction, under the write lock (its caches die with it), so the
  // check is off for the import's transaction alone. The pragma does nothing
  // inside a transaction, hence before BEGIN; SqliteImport::End turns it
  // back on however the import ends.
  if (absl::Status s = writer.Execute("PRAGMA foreign_keys = OFF; BEGIN IMMEDIATE"); !s.ok()) {
    writer.Execute("PRAGMA foreign_keys = ON").IgnoreError();
    return s;
  }
  // The largest id bounds the count from above (deregistration deletes rows)
  // and is found in one descent of the table.
  absl::StatusOr<int64_t> stored = writer.QueryInt("SELECT max(id) FROM profiles");
  auto import = std::make_unique<SqliteImport>(writer, statements, std::move(lock),
                                               stored.ok() ? *stored : 0);
  if (!stored.ok()) return stored.status();  // the import rolls back
  RETURN_IF_ERROR(import->FitCache());
  return std::unique_ptr<ImportTransaction>(std::move(import));
}

int64_t ImportCacheKiB(int64_t profiles) {
  // The content-hash index's size per profile on 16 KiB pages
  // (docs/sqlite-import.md says how it was measured).
  constexpr int64_t kIndexBytesPerProfile = 27;
  constexpr int64_t kMinKiB = 8192;
  const int64_t wanted_kib = std::max<int64_t>(profiles, 0) * kIndexBytesPerProfile * 3 / 2 / 1024;
  const int64_t whole_mib_kib = (wanted_kib + 1023) / 1024 * 1024;
  return std::clamp(whole_mib_kib, kMinKiB, kWriterCacheKiB);
}

}  // namespace perfcast::db
