#include "db/postgres_store.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "db/postgres_connection.h"
#include "db/node_columns.h"
#include "db/postgres_schema.h"
#include "db/store_rules.h"
#include "models/descriptor.h"
#include "models/profile_columns.h"

namespace perfcast::db {
namespace {

using models::Node;
using models::Profile;

// Model versions lock per name: (kModelLockSpace, hashtext(name)).
constexpr int kModelLockSpace = kPostgresLockSpace + 1;
// Connections one store opens at most; callers beyond wait for one to free.
constexpr size_t kMaxConnections = 16;
// How long BeginImport waits for another replica's import to end.
constexpr int kImportLockTimeoutSeconds = 60;
// Rows fetched per round trip by ScanProfiles.
constexpr int64_t kScanBatch = 2000;
// Profiles an import sends per INSERT: one round trip per row made imports
// several times slower than SQLite's (34 parameters a row; PostgreSQL takes
// up to 65,535 per statement).
constexpr size_t kInsertBatch = 500;

// The profile row as an import inserts it: content hash, node id, workload
// id, then the profile columns.
constexpr int kProfileKeyColumns = 3;
int ProfileInsertColumnCount() {
  return kProfileKeyColumns + static_cast<int>(models::ProfileColumns().size());
}

// Profile id, node name, workload key, content hash, then the profile columns.
std::string ScanSelect() {
  return absl::StrCat("SELECT p.id, n.name, w.key, encode(p.content_hash, 'hex'), ",
                      ProfileColumnList("p."),
                      " FROM profiles p JOIN nodes n ON n.id = p.node_id "
                      "JOIN workloads w ON w.id = p.workload_id");
}

constexpr absl::string_view kModelColumns =
    "id, name, version, target, summary, cv_mape, created_at_us";

int NodeColumnCount() { return static_cast<int>(NodeColumns().size()); }

std::string Placeholders(int count, int first = 1) {
  std::string out;
  for (int i = first; i < first + count; ++i) absl::StrAppend(&out, i > first ? ", $" : "$", i);
  return out;
}

// Statements every connection prepares once: the node writes of imports and
// registrations.
std::vector<std::pair<std::string, std::string>> PreparedStatements() {
  return {
      {"insert_node", absl::StrCat("INSERT INTO nodes (", NodeColumnList(), ") VALUES (",
                                   Placeholders(NodeColumnCount()), ") RETURNING id")},
      {"insert_node_if_absent",
       absl::StrCat("INSERT INTO nodes (", NodeColumnList(), ") VALUES (",
                    Placeholders(NodeColumnCount()),
                    ") ON CONFLICT (name) DO NOTHING RETURNING id")},
      {"find_node", "SELECT id, gpu_model FROM nodes WHERE name = $1"},
      {"refresh_node",
       absl::StrCat("UPDATE nodes SET ", NodeRefreshAssignments("$"), " WHERE name = $1 AND ",
                    NodeRefreshGuard("$"))},
  };
}

std::optional<double> OptionalDouble(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<double>();
}

// A node cell as a statement parameter (NULL for an absent rate).
std::optional<std::string> NodeParam(const NodeCell& cell) {
  return std::visit(
      [](const auto& value) -> std::optional<std::string> {
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else if constexpr (std::is_same_v<T, std::optional<double>>) {
          if (!value.has_value()) return std::nullopt;
          return pqxx::to_string(*value);
        } else {
          return pqxx::to_string(value);
        }
      },
      cell);
}

// Runs the insert statement `name` (insert_node or insert_node_if_absent).
pqxx::result InsertNode(pqxx::transaction_base& tx, const std::string& name, const Node& n) {
  std::vector<std::optional<std::string>> values;
  for (const NodeColumn& column : NodeColumns()) values.push_back(NodeParam(column.get(n)));
  return tx.exec_prepared(name, pqxx::prepare::make_dynamic_params(values));
}

// Reads a node from a row of `id, NodeColumnList()`.
Node ReadNode(const pqxx::row& r) {
  Node n;
  n.id = r[0].as<int64_t>();
  int c = 1;
  for (const NodeColumn& column : NodeColumns()) {
    switch (column.kind) {
      case NodeCellKind::kInteger: column.set(r[c].as<int64_t>(), n); break;
      case NodeCellKind::kReal: column.set(r[c].as<double>(), n); break;
      case NodeCellKind::kOptionalReal: column.set(OptionalDouble(r[c]), n); break;
      case NodeCellKind::kText: column.set(r[c].as<std::string>(), n); break;
    }
    ++c;
  }
  return n;
}

// Reads a profile from a row of ScanSelect().
absl::StatusOr<Profile> ReadProfile(const pqxx::row& r) {
  Profile p;
  p.id = r[0].as<int64_t>();
  p.node_name = r[1].as<std::string>();
  absl::StatusOr<models::WorkloadSpec> spec = models::ParseWorkloadKey(r[2].as<std::string>());
  if (!spec.ok()) {
    return absl::DataLossError(
        absl::StrCat("stored workload key is corrupt: ", spec.status().message()));
  }
  p.workload = *std::move(spec);
  p.content_hash = r[3].as<std::string>();
  int c = 4;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          if constexpr (std::is_same_v<T, std::optional<double>>) {
            *field = OptionalDouble(r[c]);
          } else {
            *field = r[c].as<T>();
          }
        },
        column.field(p));
    ++c;
  }
  return p;
}

StoredModel ReadModel(const pqxx::row& r, bool with_payload) {
  StoredModel m;
  m.id = r[0].as<int64_t>();
  m.name = r[1].as<std::string>();
  m.version = r[2].as<int64_t>();
  m.target = r[3].as<std::string>();
  m.summary = r[4].as<std::string>();
  m.cv_mape = r[5].as<double>();
  m.created_at_us = r[6].as<int64_t>();
  if (with_payload) m.payload = r[7].as<std::string>();
  return m;
}

// Positional parameters of a query built at run time ($1, $2, ...).
class QueryParams {
 public:
  // Appends `value` and returns its placeholder.
  std::string Add(std::string value) {
    values_.push_back(std::move(value));
    return absl::StrCat("$", values_.size());
  }
  std::string Add(int64_t value) { return Add(absl::StrCat(value)); }
  pqxx::result Exec(pqxx::transaction_base& tx, const std::string& sql) const {
    return tx.exec_params(sql, pqxx::prepare::make_dynamic_params(values_));
  }

 private:
  std::vector<std::string> values_;
};

// Appends the WHERE conditions of `f` to `sql` (which must accept " AND ...").
void AppendProfileFilter(const ProfileFilter& f, std::string& sql, QueryParams& params) {
  absl::StrAppend(&sql, " AND p.measured_at_us >= ", params.Add(f.since_us),
                  " AND p.measured_at_us <= ", params.Add(f.until_us));
  if (!f.node_name.empty()) absl::StrAppend(&sql, " AND n.name = ", params.Add(f.node_name));
  if (!f.gpu_model.empty()) absl::StrAppend(&sql, " AND n.gpu_model = ", params.Add(f.gpu_model));
  if (!f.family.empty()) absl::StrAppend(&sql, " AND w.family = ", params.Add(f.family));
  if (f.phase.has_value()) {
    absl::StrAppend(&sql, " AND w.phase = ", params.Add(std::string(models::PhaseName(*f.phase))));
  }
  if (f.kind.has_value()) {
    absl::StrAppend(&sql, " AND w.kind = ",
                    params.Add(std::string(models::WorkloadKindName(*f.kind))));
  }
  if (f.method_version.has_value()) {
    absl::StrAppend(&sql, " AND p.method_version = ", params.Add(int64_t{*f.method_version}));
  }
}

absl::Status ReadOnlyError() {
  return absl::FailedPreconditionError("the store was opened read-only");
}

// One import: a transaction on a connection this object holds until it ends.
class PostgresImport final : public ImportTransaction {
 public:
  PostgresImport(PostgresConnectionPool::Lease lease, std::unique_ptr<pqxx::work> tx)
      : lease_(std::move(lease)), tx_(std::move(tx)) {}

  ~PostgresImport() override {
    if (!state_.finished) RollBack();
  }

  absl::Status UpsertNode(const Node& node) override {
    if (absl::Status s = state_.Usable(); !s.ok()) return s;
    if (absl::Status s = ValidateNode(node); !s.ok()) return s;
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
    if (absl::Status s = state_.Usable(); !s.ok()) return s;
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
    if (absl::Status s = state_.Usable(); !s.ok()) return s;
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
        absl::StrAppend(&sql, "decode($", first, ", 'hex'), ", Placeholders(columns - 1, first + 1));
      } else {
        absl::StrAppend(&sql, Placeholders(columns, first));
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
        absl::StrCat("SELECT key, id FROM workloads WHERE key IN (", Placeholders(count), ")"),
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

class PostgresStore final : public Store {
 public:
  PostgresStore(std::string uri, bool read_only)
      : pool_(std::move(uri), read_only, PreparedStatements(), kMaxConnections),
        read_only_(read_only) {}

  // Applies pending migrations (read-write) or checks the version (read-only).
  absl::Status Init() {
    return WithConnection([&](pqxx::connection& c) -> absl::Status {
      return read_only_ ? CheckPostgresSchemaIsCurrent(c) : MigratePostgres(c);
    });
  }

  absl::StatusOr<Node> RegisterNode(const Node& node) override {
    if (absl::Status s = ValidateNode(node); !s.ok()) return s;
    if (read_only_) return ReadOnlyError();
    Node stored = node;
    stored.registered_at_us = node.registered_at_us > 0 ? node.registered_at_us : NowMicros();
    absl::Status status = WithConnection([&](pqxx::connection& c) -> absl::Status {
      pqxx::work tx(c);
      stored.id = InsertNode(tx, "insert_node", stored)[0][0].as<int64_t>();
      tx.commit();
      return absl::OkStatus();
    });
    if (absl::IsAlreadyExists(status)) {
      return absl::AlreadyExistsError(absl::StrCat("a node named '", node.name, "' already exists"));
    }
    if (!status.ok()) return status;
    return stored;
  }

  absl::StatusOr<Node> GetNode(absl::string_view name) override {
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<Node> {
      pqxx::nontransaction tx(c);
      pqxx::result r = tx.exec_params(
          absl::StrCat("SELECT id, ", NodeColumnList(), " FROM nodes WHERE name = $1"),
          std::string(name));
      if (r.empty()) return absl::NotFoundError(absl::StrCat("no node named '", name, "'"));
      return ReadNode(r[0]);
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
    QueryParams params;
    std::string sql =
        absl::StrCat("SELECT id, ", NodeColumnList(), " FROM nodes WHERE id > ", params.Add(after_id));
    if (!filter.gpu_model.empty()) {
      absl::StrAppend(&sql, " AND gpu_model = ", params.Add(filter.gpu_model));
    }
    for (const auto& [key, value] : filter.labels) {
      absl::StrAppend(&sql, " AND labels ->> ", params.Add(key), "::text = ", params.Add(value),
                      "::text");
    }
    absl::StrAppend(&sql, " ORDER BY id LIMIT ", filter.page_size + 1);
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<NodePage> {
      pqxx::nontransaction tx(c);
      pqxx::result r = params.Exec(tx, sql);
      NodePage page;
      for (const pqxx::row& row : r) {
        if (static_cast<int>(page.nodes.size()) == filter.page_size) {
          page.next_page_token = absl::StrCat(page.nodes.back().id);
          break;
        }
        page.nodes.push_back(ReadNode(row));
      }
      return page;
    });
  }

  absl::Status DeregisterNode(absl::string_view name, bool purge_profiles) override {
    if (read_only_) return ReadOnlyError();
    return WithConnection([&](pqxx::connection& c) -> absl::Status {
      pqxx::work tx(c);
      // FOR UPDATE waits for imports that reference the node, so the count
      // below includes everything committed before the delete.
      pqxx::result found =
          tx.exec_params("SELECT id FROM nodes WHERE name = $1 FOR UPDATE", std::string(name));
      if (found.empty()) return absl::NotFoundError(absl::StrCat("no node named '", name, "'"));
      const int64_t id = found[0][0].as<int64_t>();
      const int64_t profiles =
          tx.exec_params("SELECT count(*) FROM profiles WHERE node_id = $1", id)[0][0].as<int64_t>();
      if (profiles > 0 && !purge_profiles) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node '", name, "' has ", profiles,
            " profiles; remove them with it (--purge-profiles) or keep the node"));
      }
      tx.exec_params("DELETE FROM profiles WHERE node_id = $1", id);
      tx.exec_params("DELETE FROM nodes WHERE id = $1", id);
      tx.commit();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::unique_ptr<ImportTransaction>> BeginImport() override {
    if (read_only_) return ReadOnlyError();
    for (int attempt = 1;; ++attempt) {
      absl::StatusOr<PostgresConnectionPool::Lease> lease = pool_.Acquire();
      if (!lease.ok()) return lease.status();
      try {
        auto tx = std::make_unique<pqxx::work>(**lease);
        // An import that never ends (a stalled client stream) must not block
        // every other replica's imports for ever.
        tx->exec(absl::StrCat("SET LOCAL lock_timeout = '", kImportLockTimeoutSeconds, "s'"));
        tx->exec_params("SELECT pg_advisory_xact_lock($1, $2)", kPostgresLockSpace,
                        kPostgresImportLock);
        return std::unique_ptr<ImportTransaction>(
            new PostgresImport(*std::move(lease), std::move(tx)));
      } catch (const pqxx::sql_error& e) {
        if (e.sqlstate() == "55P03") {  // lock_not_available
          return absl::AbortedError(absl::StrCat(
              "another import has held the store's import lock for ", kImportLockTimeoutSeconds,
              " s; retry later"));
        }
        if (PqxxConnectionLost()) lease->MarkBroken();
        if (attempt > 1 || !PqxxSafeToRetry()) return PqxxExceptionToStatus();
      } catch (...) {
        if (PqxxConnectionLost()) lease->MarkBroken();
        if (attempt > 1 || !PqxxSafeToRetry()) return PqxxExceptionToStatus();
      }
    }
  }

  absl::Status ScanProfiles(const ProfileFilter& filter,
                            const std::function<bool(const Profile&)>& visit) override {
    bool visited = false;  // the visitor must never see a row twice
    return WithConnection([&](pqxx::connection& c) -> absl::Status {
      // Batches by id under one snapshot: memory stays bounded and the scan
      // sees one consistent state, as one SQLite statement would.
      pqxx::transaction<pqxx::repeatable_read, pqxx::read_only> tx(c);
      int64_t remaining = filter.limit > 0 ? filter.limit : std::numeric_limits<int64_t>::max();
      int64_t after_id = 0;
      while (remaining > 0) {
        const int64_t batch = std::min(kScanBatch, remaining);
        QueryParams params;
        std::string sql = absl::StrCat(ScanSelect(), " WHERE p.id > ", params.Add(after_id));
        AppendProfileFilter(filter, sql, params);
        absl::StrAppend(&sql, " ORDER BY p.id LIMIT ", batch);
        pqxx::result r = params.Exec(tx, sql);
        for (const pqxx::row& row : r) {
          absl::StatusOr<Profile> profile = ReadProfile(row);
          if (!profile.ok()) return profile.status();
          visited = true;
          if (!visit(*profile)) return absl::OkStatus();
          after_id = profile->id;
        }
        if (static_cast<int64_t>(r.size()) < batch) break;
        remaining -= batch;
      }
      return absl::OkStatus();
    }, [&] { return !visited; });
  }

  absl::StatusOr<int64_t> CountProfiles(const ProfileFilter& filter) override {
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<int64_t> {
      pqxx::nontransaction tx(c);
      QueryParams params;
      std::string sql =
          "SELECT count(*) FROM profiles p JOIN nodes n ON n.id = p.node_id "
          "JOIN workloads w ON w.id = p.workload_id WHERE true";
      AppendProfileFilter(filter, sql, params);
      return params.Exec(tx, sql)[0][0].as<int64_t>();
    });
  }

  absl::Status RecordSkipped(const SkippedRun& run) override {
    if (read_only_) return ReadOnlyError();
    return WithConnection([&](pqxx::connection& c) -> absl::Status {
      pqxx::work tx(c);
      tx.exec_params(
          "INSERT INTO skipped_runs (node_name, workload_key, reason, at_us) "
          "VALUES ($1, $2, $3, $4)",
          run.node_name, run.workload_key, run.reason, run.at_us > 0 ? run.at_us : NowMicros());
      tx.commit();
      return absl::OkStatus();
    });
  }

  absl::StatusOr<std::vector<SkippedRun>> ListSkipped() override {
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<std::vector<SkippedRun>> {
      pqxx::nontransaction tx(c);
      std::vector<SkippedRun> runs;
      for (const pqxx::row& r :
           tx.exec("SELECT node_name, workload_key, reason, at_us FROM skipped_runs ORDER BY id")) {
        runs.push_back({r[0].as<std::string>(), r[1].as<std::string>(), r[2].as<std::string>(),
                        r[3].as<int64_t>()});
      }
      return runs;
    });
  }

  absl::StatusOr<StoredModel> SaveModel(const StoredModel& model) override {
    if (model.name.empty()) return absl::InvalidArgumentError("model name is empty");
    if (read_only_) return ReadOnlyError();
    StoredModel stored = model;
    stored.created_at_us = model.created_at_us > 0 ? model.created_at_us : NowMicros();
    absl::Status status = WithConnection([&](pqxx::connection& c) -> absl::Status {
      pqxx::work tx(c);
      // Another replica saving the same name waits here until it commits;
      // READ COMMITTED then lets max(version) below see its row.
      tx.exec_params("SELECT pg_advisory_xact_lock($1, hashtext($2))", kModelLockSpace,
                     stored.name);
      stored.version = tx.exec_params(
                             "SELECT coalesce(max(version), 0) + 1 FROM models WHERE name = $1",
                             stored.name)[0][0]
                           .as<int64_t>();
      stored.id = tx.exec_params(
                        "INSERT INTO models (name, version, target, summary, cv_mape, "
                        "created_at_us, payload) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                        stored.name, stored.version, stored.target, stored.summary,
                        stored.cv_mape, stored.created_at_us, stored.payload)[0][0]
                      .as<int64_t>();
      tx.commit();
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    return stored;
  }

  absl::StatusOr<StoredModel> GetModel(int64_t id) override {
    return QueryModel("WHERE id = $1", absl::StrCat(id), absl::StrCat("no model with id ", id));
  }

  absl::StatusOr<StoredModel> LatestModel(absl::string_view name) override {
    return QueryModel(
        "WHERE name = $1 ORDER BY version DESC LIMIT 1", std::string(name),
        absl::StrCat("no fitted model named '", name, "'; run `perfcast fit` first"));
  }

  absl::StatusOr<std::vector<StoredModel>> ListModels() override {
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<std::vector<StoredModel>> {
      pqxx::nontransaction tx(c);
      std::vector<StoredModel> models;
      for (const pqxx::row& r : tx.exec(absl::StrCat(
               "SELECT ", kModelColumns, " FROM models ORDER BY created_at_us DESC, id DESC"))) {
        models.push_back(ReadModel(r, /*with_payload=*/false));
      }
      return models;
    });
  }

  // The whole database, indexes and TOAST included: what the operator pays
  // for on the PostgreSQL host.
  absl::StatusOr<int64_t> ApproximateSizeBytes() override {
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<int64_t> {
      pqxx::nontransaction tx(c);
      return tx.exec("SELECT pg_database_size(current_database())")[0][0].as<int64_t>();
    });
  }

 private:
  absl::StatusOr<StoredModel> QueryModel(absl::string_view where, const std::string& value,
                                         const std::string& not_found) {
    return WithConnection([&](pqxx::connection& c) -> absl::StatusOr<StoredModel> {
      pqxx::nontransaction tx(c);
      pqxx::result r = tx.exec_params(
          absl::StrCat("SELECT ", kModelColumns, ", payload FROM models ", where), value);
      if (r.empty()) return absl::NotFoundError(not_found);
      return ReadModel(r[0], /*with_payload=*/true);
    });
  }

  // Runs `fn` on a pooled connection; every libpqxx exception becomes a
  // Status here, and a connection that broke is not reused. If it broke
  // before any commit (it died idle in the pool: server restart, failover,
  // idle timeout), `fn` runs once more on a fresh connection, provided
  // `may_retry()`: nothing of a transaction that never committed took effect.
  template <typename Fn, typename MayRetry>
  auto WithConnection(Fn fn, MayRetry may_retry)
      -> decltype(fn(std::declval<pqxx::connection&>())) {
    for (int attempt = 1;; ++attempt) {
      absl::StatusOr<PostgresConnectionPool::Lease> lease = pool_.Acquire();
      if (!lease.ok()) return lease.status();
      try {
        return fn(**lease);
      } catch (...) {
        if (PqxxConnectionLost()) lease->MarkBroken();
        if (attempt > 1 || !PqxxSafeToRetry() || !may_retry()) return PqxxExceptionToStatus();
      }
    }
  }
  template <typename Fn>
  auto WithConnection(Fn fn) -> decltype(fn(std::declval<pqxx::connection&>())) {
    return WithConnection(std::move(fn), [] { return true; });
  }

  PostgresConnectionPool pool_;
  const bool read_only_;
};

absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& uri, bool read_only) {
  auto store = std::make_unique<PostgresStore>(uri, read_only);
  if (absl::Status s = store->Init(); !s.ok()) return s;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(const std::string& uri) {
  return Open(uri, /*read_only=*/false);
}

absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStoreReadOnly(const std::string& uri) {
  return Open(uri, /*read_only=*/true);
}

absl::Status CreatePostgresStoreAtVersion(const std::string& uri, int64_t version) {
  try {
    pqxx::connection connection(uri);
    return MigratePostgres(connection, version);
  } catch (...) {
    return PqxxExceptionToStatus();
  }
}

}  // namespace perfcast::db
