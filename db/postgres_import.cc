#include "db/postgres_import.h"

#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/node_columns.h"
#include "db/postgres_rows.h"
#include "db/postgres_schema.h"
#include "db/store_rules.h"
#include "models/descriptor.h"
#include "models/profile_columns.h"

namespace perfcast::db {
namespace {

using models::Node;
using models::Profile;

// How long BeginImport waits for another replica's import to end.
constexpr int kImportLockTimeoutSeconds = 60;
// Profiles an import sends per INSERT: one round trip per row made imports
// several times slower than SQLite's (34 parameters a row; PostgreSQL takes
// up to 65,535 per statement).
constexpr size_t kInsertBatch = 500;

// One import: a transaction on a connection this object holds until it ends.
class PostgresImport final : public ImportTransaction {
 public:
  PostgresImport(PostgresConnectionPool::Lease lease, std::unique_ptr<pqxx::work> tx)
      : lease_(std::move(lease)), tx_(std::move(tx)) {}

  ~PostgresImport() override {
    if (!state_.finished) RollBack();
  }

  absl::Status UpsertNode(const Node& node) override {
    RETURN_IF_ERROR(state_.Usable());
    RETURN_IF_ERROR(ValidateNode(node));
    try {
      Node stored = node;
      if (stored.registered_at_us <= 0) stored.registered_at_us = NowMicros();
      pqxx::result inserted = InsertNode(*tx_, "insert_node_if_absent", stored);
      if (!inserted.empty()) {
        node_ids_[node.name] = inserted[0][0].as<int64_t>();
        return absl::OkStatus();
      }
      pqxx::result found = tx_->exec_prepared("find_node", node.name);
      if (found.empty()) return absl::InternalError("node vanished during its upsert");
      const std::string model = found[0][1].as<std::string>();
      if (model != node.gpu.model) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node '", node.name, "' is registered with GPU ", model, ", not ", node.gpu.model));
      }
      std::vector<std::optional<std::string>> values = {node.name};
      for (const NodeColumn& column : NodeColumns()) {
        if (column.refreshed) values.push_back(NodeParam(column.get(stored)));
      }
      tx_->exec_prepared("refresh_node", pqxx::prepare::make_dynamic_params(values));
      node_ids_[node.name] = found[0][0].as<int64_t>();
      return absl::OkStatus();
    } catch (...) {
      return FailWithCurrentException();
    }
  }

  absl::Status AddPrepared(int64_t index, absl::StatusOr<PreparedProfile>&& prepared) override {
    RETURN_IF_ERROR(state_.Usable());
    if (!prepared.ok()) return state_.Reject(index, prepared.status().message());
    try {
      const Profile& profile = prepared->profile();
      std::optional<int64_t> node_id = NodeId(profile.node_name);
      if (!node_id.has_value()) {
        return state_.Reject(index, absl::StrCat("unknown node '", profile.node_name,
                                                 "' (register it first: perfcast nodes register)"));
      }
      const std::string& key = prepared->workload_key();
      if (!workload_ids_.contains(key)) unresolved_workloads_.emplace(key, profile.workload);
      pending_.push_back({*std::move(prepared), *node_id});
      if (pending_.size() == kInsertBatch) FlushPending();
      return absl::OkStatus();
    } catch (...) {
      return FailWithCurrentException();
    }
  }

  // Sends the staged rows first, so that the counts are exact. The object is
  // never const itself (BeginImport hands out a mutable one); if sending
  // fails, the import is rolled back and the next call reports it.
  const ImportSummary& summary() const override {
    auto* self = const_cast<PostgresImport*>(this);
    if (self->state_.Usable().ok() && !pending_.empty()) {
      try {
        self->FlushPending();
      } catch (...) {
        self->FailWithCurrentException().IgnoreError();
      }
    }
    return state_.summary;
  }

  absl::StatusOr<ImportSummary> Commit() override {
    RETURN_IF_ERROR(state_.Usable());
    try {
      FlushPending();
      tx_->commit();
    } catch (...) {
      return FailWithCurrentException();
    }
    Finish();
    return state_.summary;
  }

 private:
  // A failed statement aborts the PostgreSQL transaction: roll back at once
  // so the connection and the import lock are released before the caller
  // drops the object. Call only inside a catch.
  absl::Status FailWithCurrentException() {
    absl::Status status = PqxxExceptionToStatus();
    if (PqxxConnectionLost()) lease_->MarkBroken();
    state_.failed = true;
    RollBack();
    return status;
  }

  void RollBack() {
    try {
      if (tx_ != nullptr) tx_->abort();
    } catch (...) {
      if (lease_.has_value()) lease_->MarkBroken();
    }
    Finish();
  }

  // Ends the transaction and hands the connection back: the import object
  // may outlive its transaction.
  void Finish() {
    state_.finished = true;
    tx_.reset();
    lease_.reset();
  }

  template <typename T>
  static std::optional<std::string> Param(const T& value) {
    return pqxx::to_string(value);
  }
  static std::optional<std::string> Param(const std::optional<double>& value) {
    if (!value.has_value()) return std::nullopt;
    return pqxx::to_string(*value);
  }
  static std::optional<std::string> Param(const std::optional<int64_t>& value) {
    if (!value.has_value()) return std::nullopt;
    return pqxx::to_string(*value);
  }
  static std::optional<std::string> Param(const std::string& value) { return value; }

  // "(decode($1, 'hex'), $2, ...), (...)": `rows` rows of `columns` parameters,
  // the first column of each a hexadecimal content hash if `hash_first`.
  static std::string ValuesList(int rows, int columns, bool hash_first) {
    std::string sql;
    for (int row = 0; row < rows; ++row) {
      const int first = row * columns + 1;
      absl::StrAppend(&sql, row > 0 ? ", (" : "(");
      if (hash_first) {
        absl::StrAppend(&sql, "decode($", first, ", 'hex'), ", PostgresPlaceholders(columns - 1, first + 1));
      } else {
        absl::StrAppend(&sql, PostgresPlaceholders(columns, first));
      }
      absl::StrAppend(&sql, ")");
    }
    return sql;
  }

  // Stores the workloads the staged profiles name and this import has not
  // seen yet, and learns their ids: two statements for the whole batch.
  void ResolveWorkloads() {
    if (unresolved_workloads_.empty()) return;
    std::vector<std::optional<std::string>> values;
    std::vector<std::optional<std::string>> keys;
    for (const auto& [key, spec] : unresolved_workloads_) {
      // Analytic columns make the store self-describing for ad-hoc SQL; a
      // workload that cannot be described is still stored.
      absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(spec);
      values.insert(values.end(),
                    {Param(key), Param(std::string(models::WorkloadKindName(spec.kind))),
                     Param(spec.family), Param(spec.batch_size),
                     Param(std::string(models::PrecisionName(spec.precision))),
                     Param(std::string(models::PhaseName(spec.phase))),
                     d.ok() ? Param(d->parameters) : std::nullopt,
                     d.ok() ? Param(d->total_flops()) : std::nullopt,
                     d.ok() ? Param(d->inner_modules) : std::nullopt});
      keys.push_back(key);
    }
    const int count = static_cast<int>(keys.size());
    tx_->exec_params(absl::StrCat("INSERT INTO workloads (key, kind, family, batch_size, "
                                  "precision, phase, parameters, total_flops, inner_modules) "
                                  "VALUES ",
                                  ValuesList(count, 9, false), " ON CONFLICT (key) DO NOTHING"),
                     pqxx::prepare::make_dynamic_params(values));
    pqxx::result ids = tx_->exec_params(
        absl::StrCat("SELECT key, id FROM workloads WHERE key IN (", PostgresPlaceholders(count), ")"),
        pqxx::prepare::make_dynamic_params(keys));
    for (const pqxx::row& row : ids) {
      workload_ids_[row[0].as<std::string>()] = row[1].as<int64_t>();
    }
    unresolved_workloads_.clear();
  }

  // Inserts the staged profiles with one statement; a profile whose content
  // hash is stored already (or staged twice) is a duplicate. Throws libpqxx
  // errors.
  void FlushPending() {
    if (pending_.empty()) return;
    ResolveWorkloads();
    std::vector<std::optional<std::string>> values;
    values.reserve(pending_.size() * ProfileInsertColumnCount());
    for (const StagedProfile& staged : pending_) {
      const Profile& p = staged.prepared.profile();
      values.insert(values.end(), {Param(p.content_hash), Param(staged.node_id),
                                   Param(workload_ids_.at(staged.prepared.workload_key()))});
      for (const models::ProfileColumn& column : models::ProfileColumns()) {
        values.push_back(std::visit([](const auto* value) { return Param(*value); },
                                    models::FieldOf(column, p)));
      }
    }
    const int64_t rows = static_cast<int64_t>(pending_.size());
    pqxx::result r = tx_->exec_params(
        absl::StrCat("INSERT INTO profiles (content_hash, node_id, workload_id, ",
                     ProfileColumnList(), ") VALUES ",
                     ValuesList(static_cast<int>(rows), ProfileInsertColumnCount(), true),
                     " ON CONFLICT (content_hash) DO NOTHING"),
        pqxx::prepare::make_dynamic_params(values));
    const int64_t inserted = static_cast<int64_t>(r.affected_rows());
    state_.summary.accepted += inserted;
    state_.summary.duplicates += rows - inserted;
    pending_.clear();
  }

  // The id of node `name`, or nullopt if there is none.
  std::optional<int64_t> NodeId(const std::string& name) {
    if (auto it = node_ids_.find(name); it != node_ids_.end()) return it->second;
    pqxx::result found = tx_->exec_prepared("find_node", name);
    if (found.empty()) return std::nullopt;
    const int64_t id = found[0][0].as<int64_t>();
    node_ids_[name] = id;
    return id;
  }

  std::optional<PostgresConnectionPool::Lease> lease_;
  std::unique_ptr<pqxx::work> tx_;
  ImportState state_;
  absl::flat_hash_map<std::string, int64_t> node_ids_;
  absl::flat_hash_map<std::string, int64_t> workload_ids_;
  // Validated profiles waiting for the next FlushPending, and the workloads
  // among theirs that have no id yet.
  struct StagedProfile {
    PreparedProfile prepared;
    int64_t node_id = 0;
  };
  std::vector<StagedProfile> pending_;
  absl::flat_hash_map<std::string, models::WorkloadSpec> unresolved_workloads_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginPostgresImport(PostgresConnectionPool& pool) {
  for (int attempt = 1;; ++attempt) {
    ASSIGN_OR_RETURN(PostgresConnectionPool::Lease lease, pool.Acquire());
    try {
      auto tx = std::make_unique<pqxx::work>(*lease);
      // An import that never ends (a stalled client stream) must not block
      // every other replica's imports for ever.
      tx->exec(absl::StrCat("SET LOCAL lock_timeout = '", kImportLockTimeoutSeconds, "s'"));
      tx->exec_params("SELECT pg_advisory_xact_lock($1, $2)", kPostgresLockSpace,
                      kPostgresImportLock);
      return std::unique_ptr<ImportTransaction>(
          new PostgresImport(std::move(lease), std::move(tx)));
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() == "55P03") {  // lock_not_available
        return absl::AbortedError(absl::StrCat(
            "another import has held the store's import lock for ", kImportLockTimeoutSeconds,
            " s; retry later"));
      }
      if (PqxxConnectionLost()) lease.MarkBroken();
      if (attempt > 1 || !PqxxSafeToRetry()) return PqxxExceptionToStatus();
    } catch (...) {
      if (PqxxConnectionLost()) lease.MarkBroken();
      if (attempt > 1 || !PqxxSafeToRetry()) return PqxxExceptionToStatus();
    }
  }
}

}  // namespace perfcast::db
