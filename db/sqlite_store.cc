#include "db/sqlite_store_impl.h"

#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/node_columns.h"
#include "db/sqlite_import.h"
#include "db/sqlite_rows.h"
#include "db/store_rules.h"
#include "db/wal_checkpointer.h"

namespace perfcast::db {
namespace {

using models::Node;
using models::Profile;

class SqliteStore final : public Store {
 public:
  // `writer` is null for a read-only store. `reader_path` is where new reader
  // connections open; empty means reads share the writer (in-memory stores).
  SqliteStore(std::unique_ptr<Connection> writer, std::unique_ptr<Connection> reader,
              std::string reader_path)
      : writer_(std::move(writer)), shared_reader_(std::move(reader)),
        reader_path_(std::move(reader_path)) {}

  // Prepares the import's statements on the writer.
  absl::Status Init() {
    if (writer_ == nullptr) return absl::OkStatus();
    return import_.Prepare(*writer_);
  }

  // Moves the WAL checkpoints of a file-backed store off its commits (see
  // wal_checkpointer.h).
  absl::Status StartCheckpointer() {
    ASSIGN_OR_RETURN(checkpointer_, WalCheckpointer::Start(*writer_, reader_path_));
    return absl::OkStatus();
  }

  absl::StatusOr<Node> RegisterNode(const Node& node) override {
    RETURN_IF_ERROR(ValidateNode(node));
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    Node stored = node;
    stored.registered_at_us = node.registered_at_us > 0 ? node.registered_at_us : NowMicros();
    absl::Status status = InTransaction(*writer_, [&]() -> absl::Status {
      absl::Status s = import_.InsertNode(stored);
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
      ASSIGN_OR_RETURN(auto stmt,
          c.Prepare(absl::StrCat("SELECT id, ", NodeColumnList(), " FROM nodes WHERE name = ?1")));
      stmt->Bind(1, name);
      ASSIGN_OR_RETURN(bool row, stmt->Step());
      if (!row) return absl::NotFoundError(absl::StrCat("no node named '", name, "'"));
      return ReadNode(*stmt);
    });
  }

  absl::StatusOr<NodePage> ListNodes(const NodeFilter& filter) override {
    ASSIGN_OR_RETURN(int64_t after_id, NodePageStart(filter));
    std::string sql = absl::StrCat("SELECT id, ", NodeColumnList(), " FROM nodes WHERE id > ?1");
    if (!filter.gpu_model.empty()) absl::StrAppend(&sql, " AND gpu_model = ?2");
    int param = 3;
    for (const auto& [key, value] : filter.labels) {
      absl::StrAppend(&sql, " AND json_extract(labels, '$.\"", key, "\"') = ?", param++);
    }
    absl::StrAppend(&sql, " ORDER BY id LIMIT ", filter.page_size + 1);
    return WithReader([&](Connection& c) -> absl::StatusOr<NodePage> {
      ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
      Statement& s = *stmt;
      s.Bind(1, after_id);
      if (!filter.gpu_model.empty()) s.Bind(2, filter.gpu_model);
      int p = 3;
      for (const auto& [key, value] : filter.labels) s.Bind(p++, value);
      NodePage page;
      while (true) {
        ASSIGN_OR_RETURN(bool row, s.Step());
        if (!row) break;
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
      ASSIGN_OR_RETURN(auto find, writer_->Prepare("SELECT id FROM nodes WHERE name = ?1"));
      find->Bind(1, name);
      ASSIGN_OR_RETURN(bool row, find->Step());
      if (!row) return absl::NotFoundError(absl::StrCat("no node named '", name, "'"));
      const int64_t id = find->Int(0);
      ASSIGN_OR_RETURN(auto count,
          writer_->Prepare("SELECT count(*) FROM profiles WHERE node_id = ?1"));
      count->Bind(1, id);
      RETURN_IF_ERROR(count->Step().status());
      const int64_t profiles = count->Int(0);
      if (profiles > 0 && !purge_profiles) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node '", name, "' has ", profiles,
            " profiles; remove them with it (--purge-profiles) or keep the node"));
      }
      for (absl::string_view sql : {"DELETE FROM profiles WHERE node_id = ?1",
                                    "DELETE FROM nodes WHERE id = ?1"}) {
        ASSIGN_OR_RETURN(auto del, writer_->Prepare(sql));
        RETURN_IF_ERROR(del->Bind(1, id).Run());
      }
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginImport() override {
    if (writer_ == nullptr) return ReadOnlyError();
    return BeginSqliteImport(*writer_, import_, std::unique_lock<std::mutex>(write_mutex_));
  }

  absl::Status ScanProfiles(const ProfileFilter& filter,
                            const std::function<bool(const Profile&)>& visit) override {
    return WithReader([&](Connection& c) -> absl::Status {
      ASSIGN_OR_RETURN(auto stmt,
          PrepareFiltered(c, SqliteProfileScanSelect(), filter, " ORDER BY p.id"));
      while (true) {
        ASSIGN_OR_RETURN(bool row, stmt->Step());
        if (!row) return absl::OkStatus();
        ASSIGN_OR_RETURN(Profile profile, ReadProfile(*stmt));
        if (!visit(profile)) return absl::OkStatus();
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
      ASSIGN_OR_RETURN(auto stmt, PrepareFiltered(c, std::move(sql), filter, ""));
      RETURN_IF_ERROR(stmt->Step().status());
      return stmt->Int(0);
    });
  }

  absl::Status RecordSkipped(const SkippedRun& run) override {
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    ASSIGN_OR_RETURN(auto stmt, writer_->Prepare(
        "INSERT INTO skipped_runs (node_name, workload_key, reason, at_us) VALUES (?1, ?2, ?3, ?4)"));
    return stmt
        ->Bind(1, run.node_name)
        .Bind(2, run.workload_key)
        .Bind(3, run.reason)
        .Bind(4, run.at_us > 0 ? run.at_us : NowMicros())
        .Run();
  }

  absl::StatusOr<std::vector<SkippedRun>> ListSkipped() override {
    return WithReader([&](Connection& c) -> absl::StatusOr<std::vector<SkippedRun>> {
      ASSIGN_OR_RETURN(auto stmt, c.Prepare(
          "SELECT node_name, workload_key, reason, at_us FROM skipped_runs ORDER BY id"));
      std::vector<SkippedRun> runs;
      while (true) {
        ASSIGN_OR_RETURN(bool row, stmt->Step());
        if (!row) return runs;
        runs.push_back({stmt->Text(0), stmt->Text(1), stmt->Text(2), stmt->Int(3)});
      }
    });
  }

  absl::StatusOr<StoredModel> SaveModel(const StoredModel& model) override {
    if (model.name.empty()) return absl::InvalidArgumentError("model name is empty");
    if (writer_ == nullptr) return ReadOnlyError();
    std::lock_guard<std::mutex> lock(write_mutex_);
    StoredModel stored = model;
    stored.created_at_us = model.created_at_us > 0 ? model.created_at_us : NowMicros();
    RETURN_IF_ERROR(InTransaction(*writer_, [&]() -> absl::Status {
      ASSIGN_OR_RETURN(auto next, writer_->Prepare(
          "SELECT coalesce(max(version), 0) + 1 FROM models WHERE name = ?1"));
      next->Bind(1, stored.name);
      RETURN_IF_ERROR(next->Step().status());
      stored.version = next->Int(0);
      ASSIGN_OR_RETURN(auto insert, writer_->Prepare(
          "INSERT INTO models (name, version, target, summary, cv_mape, created_at_us, payload) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
      absl::Status s = insert->Bind(1, stored.name)
                           .Bind(2, stored.version)
                           .Bind(3, stored.target)
                           .Bind(4, stored.summary)
                           .Bind(5, stored.cv_mape)
                           .Bind(6, stored.created_at_us)
                           .Bind(7, stored.payload)
                           .Run();
      stored.id = writer_->last_insert_rowid();
      return s;
    }));
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
      ASSIGN_OR_RETURN(auto stmt, c.Prepare(
          "SELECT id, name, version, target, summary, cv_mape, created_at_us, '' FROM models "
          "ORDER BY created_at_us DESC, id DESC"));
      std::vector<StoredModel> models;
      while (true) {
        ASSIGN_OR_RETURN(bool row, stmt->Step());
        if (!row) return models;
        models.push_back(ReadModel(*stmt));
      }
    });
  }

  absl::StatusOr<int64_t> ApproximateSizeBytes() override {
    if (reader_path_.empty()) {
      // In memory, or a read-only copy: the pages are all there is.
      return WithReader([&](Connection& c) -> absl::StatusOr<int64_t> {
        ASSIGN_OR_RETURN(int64_t pages, c.QueryInt("PRAGMA page_count"));
        ASSIGN_OR_RETURN(int64_t page_size, c.QueryInt("PRAGMA page_size"));
        return pages * page_size;
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

 private:
  static absl::Status ReadOnlyError() {
    return absl::FailedPreconditionError("the store was opened read-only");
  }

  template <typename BindFn>
  absl::StatusOr<StoredModel> QueryModel(absl::string_view where, BindFn bind,
                                         const std::string& not_found) {
    return WithReader([&](Connection& c) -> absl::StatusOr<StoredModel> {
      ASSIGN_OR_RETURN(auto stmt, c.Prepare(absl::StrCat(
          "SELECT id, name, version, target, summary, cv_mape, created_at_us, payload "
          "FROM models ",
          where)));
      bind(*stmt);
      ASSIGN_OR_RETURN(bool row, stmt->Step());
      if (!row) return absl::NotFoundError(not_found);
      return ReadModel(*stmt);
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
    ASSIGN_OR_RETURN(auto stmt, c.Prepare(sql));
    Statement& s = *stmt;
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
      ASSIGN_OR_RETURN(connection, Connection::Open(reader_path_, Connection::Mode::kReadOnly));
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

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> NewSqliteStore(std::unique_ptr<Connection> writer,
                                                      std::unique_ptr<Connection> reader,
                                                      std::string reader_path) {
  const bool checkpointed = writer != nullptr && !reader_path.empty();
  auto store = std::make_unique<SqliteStore>(std::move(writer), std::move(reader),
                                             std::move(reader_path));
  RETURN_IF_ERROR(store->Init());
  if (checkpointed) {
    RETURN_IF_ERROR(store->StartCheckpointer());
  }
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace perfcast::db
