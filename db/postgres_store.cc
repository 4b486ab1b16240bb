#include "db/postgres_store.h"

#include <algorithm>
#include <limits>
#include <pqxx/pqxx>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/node_columns.h"
#include "db/postgres_connection.h"
#include "db/postgres_import.h"
#include "db/postgres_rows.h"
#include "db/postgres_schema.h"
#include "db/store_rules.h"

namespace perfcast::db {
namespace {

using models::Node;
using models::Profile;

// Model versions lock per name: (kModelLockSpace, hashtext(name)).
constexpr int kModelLockSpace = kPostgresLockSpace + 1;
// Connections one store opens at most; callers beyond wait for one to free.
constexpr size_t kMaxConnections = 16;
// Rows fetched per round trip by ScanProfiles.
constexpr int64_t kScanBatch = 2000;

int NodeColumnCount() { return static_cast<int>(NodeColumns().size()); }

// Statements every connection prepares once: the node writes of imports and
// registrations.
std::vector<std::pair<std::string, std::string>> PreparedStatements() {
  return {
      {"insert_node", absl::StrCat("INSERT INTO nodes (", NodeColumnList(), ") VALUES (",
                                   PostgresPlaceholders(NodeColumnCount()), ") RETURNING id")},
      {"insert_node_if_absent",
       absl::StrCat("INSERT INTO nodes (", NodeColumnList(), ") VALUES (",
                    PostgresPlaceholders(NodeColumnCount()),
                    ") ON CONFLICT (name) DO NOTHING RETURNING id")},
      {"find_node", "SELECT id, gpu_model FROM nodes WHERE name = $1"},
      {"refresh_node",
       absl::StrCat("UPDATE nodes SET ", NodeRefreshAssignments("$"), " WHERE name = $1 AND ",
                    NodeRefreshGuard("$"))},
  };
}

absl::Status ReadOnlyError() {
  return absl::FailedPreconditionError("the store was opened read-only");
}

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
    RETURN_IF_ERROR(ValidateNode(node));
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
    ASSIGN_OR_RETURN(int64_t after_id, NodePageStart(filter));
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
    return BeginPostgresImport(pool_);
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
        std::string sql = absl::StrCat(PostgresProfileScanSelect(), " WHERE p.id > ", params.Add(after_id));
        AppendProfileFilter(filter, sql, params);
        absl::StrAppend(&sql, " ORDER BY p.id LIMIT ", batch);
        pqxx::result r = params.Exec(tx, sql);
        for (const pqxx::row& row : r) {
          ASSIGN_OR_RETURN(Profile profile, ReadProfile(row));
          visited = true;
          if (!visit(profile)) return absl::OkStatus();
          after_id = profile.id;
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
    RETURN_IF_ERROR(WithConnection([&](pqxx::connection& c) -> absl::Status {
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
    }));
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
               "SELECT ", kPostgresModelColumns, " FROM models ORDER BY created_at_us DESC, id DESC"))) {
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
          absl::StrCat("SELECT ", kPostgresModelColumns, ", payload FROM models ", where), value);
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
      ASSIGN_OR_RETURN(PostgresConnectionPool::Lease lease, pool_.Acquire());
      try {
        return fn(*lease);
      } catch (...) {
        if (PqxxConnectionLost()) lease.MarkBroken();
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
  RETURN_IF_ERROR(store->Init());
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
