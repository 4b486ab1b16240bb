// What the PostgreSQL store adds to the conformance suite (store_test.cc):
// several stores (perfcastd replicas) on one database, migrations under
// concurrency, schema versions, lost connections.
#include "db/postgres_store.h"

#include <atomic>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/postgres_server.h"
#include "tests/db/test_util.h"
#include "tests/environment_gap.h"

namespace perfcast::db {
namespace {

using perfcast::testing::PostgresServer;
using perfcast::testing::SampleNode;
using perfcast::testing::SampleProfile;

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PostgresServer*> server = testing::SharedPostgresServer();
    if (absl::IsNotFound(server.status()) && !testing::PostgresRequired()) {
      SKIP_FOR_ENVIRONMENT_GAP() << server.status().message();
    }
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *server;
    absl::StatusOr<std::string> uri = server_->CreateDatabase();
    ASSERT_TRUE(uri.ok()) << uri.status();
    uri_ = *uri;
  }

  std::unique_ptr<Store> Open() {
    auto store = OpenStore(uri_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Runs one SQL statement on the test database, outside any store.
  pqxx::result Sql(const std::string& sql) {
    pqxx::connection connection(uri_);
    pqxx::nontransaction tx(connection);
    return tx.exec(sql);
  }

  static ImportSummary ImportAll(Store& store, const std::vector<models::Profile>& profiles) {
    auto import = store.BeginImport();
    EXPECT_TRUE(import.ok()) << import.status();
    if (!import.ok()) return {};
    for (size_t i = 0; i < profiles.size(); ++i) {
      EXPECT_TRUE((*import)->Add(static_cast<int64_t>(i), profiles[i]).ok());
    }
    auto summary = (*import)->Commit();
    EXPECT_TRUE(summary.ok()) << summary.status();
    return summary.ok() ? *summary : ImportSummary{};
  }

  PostgresServer* server_ = nullptr;
  std::string uri_;
};

TEST_F(PostgresStoreTest, ReplicasStartingTogetherMigrateOnce) {
  constexpr int kReplicas = 4;
  std::vector<absl::Status> results(kReplicas);
  std::vector<std::thread> threads;
  for (int i = 0; i < kReplicas; ++i) {
    threads.emplace_back([&, i] { results[i] = OpenStore(uri_).status(); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) EXPECT_TRUE(s.ok()) << s;
  pqxx::result applied = Sql("SELECT count(*), max(version) FROM perfcast_schema_migrations");
  EXPECT_EQ(applied[0][0].as<int64_t>(), PostgresSchemaVersion());
  EXPECT_EQ(applied[0][1].as<int64_t>(), PostgresSchemaVersion());
  // Opening a current store again applies nothing.
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(Sql("SELECT count(*) FROM perfcast_schema_migrations")[0][0].as<int64_t>(),
            PostgresSchemaVersion());
}

// A database an older build left at schema version 1 migrates on the next
// read-write open: its rows read back as method 1 without run conditions,
// and the new columns take new profiles.
TEST_F(PostgresStoreTest, MigratesAVersionOneStore) {
  ASSERT_TRUE(CreatePostgresStoreAtVersion(uri_, 1).ok());
  Sql("INSERT INTO nodes (name, source, labels, gpu_count, gpu_model, gpu_vendor_name, "
      "architecture, compute_capability, sm_count, boost_clock_mhz, memory_gib, "
      "memory_bus_width_bits, memory_bandwidth_gbs, fp32_tflops, tf32_tflops, fp16_tflops, "
      "bf16_tflops, fp64_tflops, l2_cache_mib, interconnect, hostname, cpu_model, cpu_cores, "
      "driver_version, cuda_version, torch_version, registered_at_us) VALUES ('old', "
      "'catalog', '{}', 1, 'H100-SXM5-80GB', 'NVIDIA H100', 'hopper', '9.0', 132, 1980, 80, "
      "5120, 3350, 67, 494.7, 989.4, 989.4, 34, 50, '', '', '', 0, '', '', '', 7)");
  Sql("INSERT INTO workloads (key, kind, family, batch_size, precision, phase) VALUES "
      "('model/lstm{hidden=128,horizon=12,layers=1,nodes=32,seq_len=24}/b64/fp32/train/adam', "
      "'model', 'lstm', 64, 'fp32', 'train')");
  Sql("INSERT INTO profiles (content_hash, node_id, workload_id, measured_at_us, "
      "agent_version, iterations, mean_ms, median_ms, p95_ms, stddev_ms, min_ms, max_ms, "
      "repeats) SELECT decode('00112233445566778899aabbccddeeff', 'hex'), n.id, w.id, 5, "
      "'old', 10, 2, 2, 2, 0, 2, 2, 1 FROM nodes n, workloads w");
  EXPECT_EQ(OpenStoreReadOnly(uri_).status().code(), absl::StatusCode::kFailedPrecondition);
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  std::vector<models::Profile> profiles;
  ASSERT_TRUE(store->ScanProfiles({}, [&](const models::Profile& p) {
                     profiles.push_back(p);
                     return true;
                   }).ok());
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].method_version, 1);
  EXPECT_EQ(profiles[0].conditions, models::RunConditions{});
  EXPECT_FALSE(store->GetNode("old")->measured.dispatch_ops_per_s.has_value());
  models::Profile current = SampleProfile("old", 1);
  current.method_version = models::kCurrentMethodVersion;
  current.conditions.board_power_w = 500;
  ASSERT_EQ(ImportAll(*store, {current}).accepted, 1);
  EXPECT_EQ(*store->CountProfiles({.method_version = models::kCurrentMethodVersion}), 1);
  EXPECT_EQ(Sql("SELECT max(version) FROM perfcast_schema_migrations")[0][0].as<int64_t>(),
            PostgresSchemaVersion());
}

TEST_F(PostgresStoreTest, TwoStoresSeeEachOthersWrites) {
  std::unique_ptr<Store> a = Open();
  std::unique_ptr<Store> b = Open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->RegisterNode(SampleNode("n1")).ok());
  EXPECT_EQ(b->GetNode("n1")->gpu.model, "H100-SXM5-80GB");
  EXPECT_EQ(b->RegisterNode(SampleNode("n1")).status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_EQ(ImportAll(*b, {SampleProfile("n1", 1), SampleProfile("n1", 2)}).accepted, 2);
  EXPECT_EQ(*a->CountProfiles({}), 2);
  auto saved = a->SaveModel({.name = "default", .target = "t", .payload = "{}"});
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(b->LatestModel("default")->id, saved->id);
  EXPECT_EQ(b->DeregisterNode("n1", false).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(b->DeregisterNode("n1", true).ok());
  EXPECT_EQ(a->GetNode("n1").status().code(), absl::StatusCode::kNotFound);
}

// Two replicas import overlapping streams in opposite orders at once: each
// profile is stored once, and neither import fails.
TEST_F(PostgresStoreTest, ConcurrentOverlappingImportsStoreEachProfileOnce) {
  std::unique_ptr<Store> a = Open();
  std::unique_ptr<Store> b = Open();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->RegisterNode(SampleNode("n1")).ok());
  std::vector<models::Profile> first, second;
  for (int i = 0; i < 300; ++i) first.push_back(SampleProfile("n1", i));
  for (int i = 499; i >= 200; --i) second.push_back(SampleProfile("n1", i));
  ImportSummary from_a, from_b;
  std::thread ta([&] { from_a = ImportAll(*a, first); });
  std::thread tb([&] { from_b = ImportAll(*b, second); });
  ta.join();
  tb.join();
  EXPECT_EQ(from_a.accepted + from_b.accepted, 500);
  EXPECT_EQ(from_a.duplicates + from_b.duplicates, 100);
  EXPECT_EQ(*a->CountProfiles({}), 500);
  EXPECT_EQ(Sql("SELECT count(DISTINCT content_hash) FROM profiles")[0][0].as<int64_t>(), 500);
}

TEST_F(PostgresStoreTest, ConcurrentSaveModelGivesDistinctVersions) {
  std::unique_ptr<Store> a = Open();
  std::unique_ptr<Store> b = Open();
  ASSERT_TRUE(a && b);
  constexpr int kPerStore = 15;
  std::vector<int64_t> versions_a, versions_b;
  auto save = [](Store& store, std::vector<int64_t>& versions) {
    for (int i = 0; i < kPerStore; ++i) {
      auto saved = store.SaveModel({.name = "default", .target = "t", .payload = "{}"});
      EXPECT_TRUE(saved.ok()) << saved.status();
      if (saved.ok()) versions.push_back(saved->version);
    }
  };
  std::thread ta([&] { save(*a, versions_a); });
  std::thread tb([&] { save(*b, versions_b); });
  ta.join();
  tb.join();
  std::set<int64_t> all(versions_a.begin(), versions_a.end());
  all.insert(versions_b.begin(), versions_b.end());
  EXPECT_EQ(all.size(), 2u * kPerStore);
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), 2 * kPerStore);
  EXPECT_EQ(a->LatestModel("default")->version, 2 * kPerStore);
}

TEST_F(PostgresStoreTest, NewerSchemaIsRefused) {
  ASSERT_NE(Open(), nullptr);
  Sql(absl::StrCat("INSERT INTO perfcast_schema_migrations (version) VALUES (",
                   PostgresSchemaVersion() + 1, ")"));
  auto store = OpenStore(uri_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("upgrade perfcast"), std::string::npos) << store.status();
  EXPECT_EQ(OpenStoreReadOnly(uri_).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(PostgresStoreTest, ForeignDatabaseIsNeverModified) {
  Sql("CREATE TABLE invoices (id integer)");
  EXPECT_EQ(OpenStore(uri_).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Sql("SELECT to_regclass('perfcast_schema_migrations')")[0][0].is_null());
}

TEST_F(PostgresStoreTest, ReadOnlyStoreNeedsAMigratedDatabase) {
  EXPECT_EQ(OpenStoreReadOnly(uri_).status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_NE(Open(), nullptr);
  auto ro = OpenStoreReadOnly(uri_);
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_EQ((*ro)->SaveModel({.name = "m"}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE((*ro)->ListModels().ok());
}

TEST_F(PostgresStoreTest, UnreachableServerIsUnavailable) {
  // Port 1 on loopback: nothing listens there.
  auto store = OpenStore("postgresql://postgres@127.0.0.1:1/perfcast?connect_timeout=2");
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
  // One line, fit for logs and the CLI's one-line errors.
  EXPECT_EQ(store.status().message().find('\n'), absl::string_view::npos) << store.status();
}

// Connections the server drops while they are idle in the pool (restart,
// failover, idle timeout) are replaced without failing the call.
TEST_F(PostgresStoreTest, ConnectionsDroppedWhileIdleAreReplaced) {
  std::unique_ptr<Store> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->RegisterNode(SampleNode("n1")).ok());
  auto drop_connections = [&] {
    Sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()");
  };
  drop_connections();
  absl::StatusOr<models::Node> node = store->GetNode("n1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->name, "n1");
  drop_connections();
  ASSERT_TRUE(store->RegisterNode(SampleNode("n2")).ok());
  drop_connections();
  EXPECT_EQ(ImportAll(*store, {SampleProfile("n2", 1)}).accepted, 1);
  drop_connections();
  int scanned = 0;
  EXPECT_TRUE(store->ScanProfiles({}, [&](const models::Profile&) { return ++scanned > 0; }).ok());
  EXPECT_EQ(scanned, 1);
  drop_connections();
  auto saved = store->SaveModel({.name = "default", .target = "t", .payload = "{}"});
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_EQ(saved->version, 1);
}

}  // namespace
}  // namespace perfcast::db
