// The store conformance suite: every behaviour of db::Store, run against
// each backend this build has (SQLite always; PostgreSQL on a real server
// that the test starts, see postgres_server.h). Backend-specific tests live
// in schema_test.cc (SQLite file format) and postgres_store_test.cc.
#include "db/store.h"

#include <filesystem>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <variant>

#include "gtest/gtest.h"
#include "models/profile_columns.h"
#include "tests/db/test_util.h"
#include "tests/environment_gap.h"
#ifdef PERFCAST_HAVE_POSTGRES
#include "tests/db/postgres_server.h"
#endif

namespace perfcast::db {
namespace {

using perfcast::testing::SampleNode;
using perfcast::testing::SampleProfile;
using perfcast::testing::TempDir;

// The parameter names the backend: "sqlite" or "postgres". Each test gets a
// fresh store: a new file, or a new database on the shared server.
class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      uri_ = dir_.File("store.db");
    } else {
#ifdef PERFCAST_HAVE_POSTGRES
      absl::StatusOr<testing::PostgresServer*> server = testing::SharedPostgresServer();
      if (absl::IsNotFound(server.status()) && !testing::PostgresRequired()) {
        SKIP_FOR_ENVIRONMENT_GAP() << server.status().message();
      }
      ASSERT_TRUE(server.ok()) << server.status();
      absl::StatusOr<std::string> uri = (*server)->CreateDatabase();
      ASSERT_TRUE(uri.ok()) << uri.status();
      uri_ = *uri;
#endif
    }
    auto opened = OpenStore(uri_);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
  }

  ImportSummary Import(const std::vector<models::Profile>& profiles) {
    auto import = store_->BeginImport();
    EXPECT_TRUE(import.ok()) << import.status();
    for (size_t i = 0; i < profiles.size(); ++i) {
      EXPECT_TRUE((*import)->Add(static_cast<int64_t>(i), profiles[i]).ok());
    }
    auto summary = (*import)->Commit();
    EXPECT_TRUE(summary.ok()) << summary.status();
    return summary.ok() ? *summary : ImportSummary{};
  }

  std::vector<models::Profile> All(const ProfileFilter& filter = {}) {
    std::vector<models::Profile> out;
    EXPECT_TRUE(store_->ScanProfiles(filter, [&](const models::Profile& p) {
                  out.push_back(p);
                  return true;
                }).ok());
    return out;
  }

  TempDir dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreTest, RegisterGetRoundTripsEveryField) {
  models::Node node = SampleNode("n1");
  auto registered = store_->RegisterNode(node);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_GT(registered->id, 0);
  EXPECT_GT(registered->registered_at_us, 0);
  auto fetched = store_->GetNode("n1");
  ASSERT_TRUE(fetched.ok());
  EXPECT_EQ(*fetched, *registered);
  EXPECT_EQ(fetched->measured.launch_latency_us, 4.25);
  EXPECT_EQ(fetched->gpu.nvlink_gbs, 450);
  EXPECT_EQ(fetched->gpu.nvlink_gpus, 8);
  EXPECT_EQ(fetched->gpu.network_gbs, 50);
  EXPECT_FALSE(fetched->measured.fp32_tflops.has_value());
}

// Every node column, the measured rates and the source included, comes back
// as it was registered, and an upsert refreshes exactly the host and rates.
TEST_P(StoreTest, EveryNodeFieldRoundTripsAndRefreshes) {
  models::Node node = SampleNode("full");
  node.source = models::NodeSource::kSpecFile;
  models::MeasuredRates& m = node.measured;
  double value = 1.5;
  for (std::optional<double>* rate :
       {&m.memory_bandwidth_gbs, &m.fp32_tflops, &m.tf32_tflops, &m.fp16_tflops, &m.bf16_tflops,
        &m.fp64_tflops, &m.launch_latency_us, &m.h2d_pinned_gbs, &m.h2d_pageable_gbs,
        &m.cpu_single_thread_score, &m.idle_power_watts, &m.dispatch_ops_per_s, &m.python_op_us,
        &m.torchscript_op_us}) {
    *rate = value;
    value += 1.25;
  }
  node.host.driver_version = "550.54";
  node.host.cuda_version = "12.4";
  node.host.torch_version = "2.3";
  node.host.python_version = "3.12.3";
  node.host.python_torch_version = "2.11.0+cu130";
  auto registered = store_->RegisterNode(node);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_EQ(*store_->GetNode("full"), *registered);

  models::Node refreshed = *registered;
  refreshed.host.hostname = "moved.example";
  refreshed.host.cpu_cores = 64;
  refreshed.measured.dispatch_ops_per_s = 123456;
  refreshed.measured.python_op_us = 7.5;
  refreshed.host.python_version = "3.13.1";
  refreshed.measured.fp32_tflops.reset();
  refreshed.gpu.sm_count = 1;  // hardware identity: not refreshed
  refreshed.labels = {{"zone", "elsewhere"}};  // not refreshed either
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  ASSERT_TRUE((*import)->UpsertNode(refreshed).ok());
  ASSERT_TRUE((*import)->Commit().ok());
  models::Node expected = *registered;
  expected.host = refreshed.host;
  expected.measured = refreshed.measured;
  EXPECT_EQ(*store_->GetNode("full"), expected);
}

TEST_P(StoreTest, DuplicateNameIsAlreadyExists) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  auto again = store_->RegisterNode(SampleNode("n1", "A100-SXM4-80GB"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->GetNode("n1")->gpu.model, "H100-SXM5-80GB");
}

TEST_P(StoreTest, InvalidNodesAreRejected) {
  models::Node node = SampleNode("");
  EXPECT_EQ(store_->RegisterNode(node).status().code(), absl::StatusCode::kInvalidArgument);
  node = SampleNode("x");
  node.gpu.model.clear();
  EXPECT_EQ(store_->RegisterNode(node).status().code(), absl::StatusCode::kInvalidArgument);
  node = SampleNode("x");
  node.gpu.memory_bandwidth_gbs = -1;
  EXPECT_EQ(store_->RegisterNode(node).status().code(), absl::StatusCode::kInvalidArgument);
  node = SampleNode("x");
  node.labels["bad key'"] = "v";
  EXPECT_EQ(store_->RegisterNode(node).status().code(), absl::StatusCode::kInvalidArgument);
  // `nodes list` prints names to terminals: escape sequences are refused.
  node = SampleNode("x\x1b[2J\x1b[H");
  EXPECT_EQ(store_->RegisterNode(node).status().code(), absl::StatusCode::kInvalidArgument);
  node = SampleNode("x");
  node.gpu.model = "H100\r\n";
  EXPECT_EQ(store_->RegisterNode(node).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->GetNode("x").status().code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreTest, ListFiltersAndPaginates) {
  for (int i = 0; i < 7; ++i) {
    models::Node node = SampleNode("n" + std::to_string(i), i % 2 ? "A100-SXM4-80GB" : "H100-SXM5-80GB");
    node.labels["pool"] = i < 3 ? "train" : "serve";
    ASSERT_TRUE(store_->RegisterNode(node).ok());
  }
  NodeFilter filter;
  filter.page_size = 3;
  std::vector<std::string> names;
  do {
    auto page = store_->ListNodes(filter);
    ASSERT_TRUE(page.ok()) << page.status();
    EXPECT_LE(page->nodes.size(), 3u);
    for (const auto& n : page->nodes) names.push_back(n.name);
    filter.page_token = page->next_page_token;
  } while (!filter.page_token.empty());
  EXPECT_EQ(names.size(), 7u);
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), 7u);

  NodeFilter by_gpu{.gpu_model = "A100-SXM4-80GB"};
  EXPECT_EQ(store_->ListNodes(by_gpu)->nodes.size(), 3u);
  NodeFilter by_label{.labels = {{"pool", "train"}}};
  EXPECT_EQ(store_->ListNodes(by_label)->nodes.size(), 3u);
  NodeFilter both{.gpu_model = "H100-SXM5-80GB", .labels = {{"pool", "serve"}}};
  EXPECT_EQ(store_->ListNodes(both)->nodes.size(), 2u);

  EXPECT_EQ(store_->ListNodes({.page_size = 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListNodes({.page_token = "abc"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ImportCountsAcceptedDuplicatesAndRejected) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  std::vector<models::Profile> batch;
  for (int i = 0; i < 5; ++i) batch.push_back(SampleProfile("n1", i));
  models::Profile bad = SampleProfile("n1", 99);
  bad.iteration.mean_ms = -3;
  batch.insert(batch.begin() + 2, bad);
  batch.push_back(SampleProfile("ghost", 1));  // unknown node
  batch.push_back(SampleProfile("n1", 0));     // duplicate within the import

  ImportSummary first = Import(batch);
  EXPECT_EQ(first.accepted, 5);
  EXPECT_EQ(first.duplicates, 1);
  ASSERT_EQ(first.rejected.size(), 2u);
  EXPECT_EQ(first.rejected[0].index, 2);
  EXPECT_NE(first.rejected[0].reason.find("mean_ms"), std::string::npos);
  EXPECT_EQ(first.rejected[1].index, 6);
  EXPECT_NE(first.rejected[1].reason.find("ghost"), std::string::npos);
  EXPECT_EQ(*store_->CountProfiles({}), 5);

  // Importing the same run again is idempotent.
  ImportSummary second = Import(batch);
  EXPECT_EQ(second.accepted, 0);
  EXPECT_EQ(second.duplicates, 6);
  EXPECT_EQ(*store_->CountProfiles({}), 5);
}

// A record that brings its content hash (a file exported by perfcast) is
// stored under that hash's bytes, whatever the case of its hex digits, and
// deduplicated by it.
TEST_P(StoreTest, AGivenContentHashIsStoredAsItsBytes) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  models::Profile given = SampleProfile("n1", 1);
  given.content_hash = "00112233445566778899AABBCCDDEEFF";
  ASSERT_EQ(Import({given}).accepted, 1);
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].content_hash, "00112233445566778899aabbccddeeff");

  models::Profile same_hash = SampleProfile("n1", 2);
  same_hash.content_hash = "00112233445566778899aabbccddeeff";
  models::Profile computed = SampleProfile("n1", 1);  // its own hash differs from the given one
  ImportSummary summary = Import({same_hash, computed});
  EXPECT_EQ(summary.duplicates, 1);
  EXPECT_EQ(summary.accepted, 1);
  all = All();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].content_hash, models::ComputeContentHash(computed));
}

TEST_P(StoreTest, ProfilesRoundTripThroughScan) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  models::Profile p = SampleProfile("n1", 3);
  p.phases.h2d_ms = 0.01;
  p.repeat_cv = 0.015;
  p.roofline_fraction = 0.5;
  ASSERT_EQ(Import({p}).accepted, 1);
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  models::Profile stored = all[0];
  EXPECT_GT(stored.id, 0);
  EXPECT_EQ(stored.content_hash, models::ComputeContentHash(stored));
  stored.id = 0;
  stored.content_hash.clear();
  EXPECT_EQ(stored, p);
}

// Every column of the profile table, each set to a value no other column
// holds, is stored in its own column: the import binds columns by where they
// live in a Profile, found once from the column table.
TEST_P(StoreTest, EveryProfileColumnIsStoredInItsOwnColumn) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  models::Profile p = SampleProfile("n1", 3);
  int i = 0;
  for (const models::ProfileColumn& column : models::ProfileColumns()) {
    ++i;
    std::visit(
        [&](auto* field) {
          using T = std::remove_pointer_t<decltype(field)>;
          // Optional numbers unset in the sample get a distinct small value
          // (valid for every one: a fraction, a rate, a size).
          if constexpr (std::is_same_v<T, std::optional<double>>) {
            if (!field->has_value()) *field = 0.001 * i;
          }
        },
        column.field(p));
  }
  p.agent_version = "agent-9";
  p.method_version = models::kCurrentMethodVersion;
  ASSERT_EQ(Import({p}).accepted, 1);
  auto all = All();
  ASSERT_EQ(all.size(), 1u);
  all[0].id = 0;
  all[0].content_hash.clear();
  EXPECT_EQ(all[0], p);
}

// A profile of the current method with every run condition set keeps them
// all through the store, and its hash covers them.
TEST_P(StoreTest, MethodVersionAndRunConditionsRoundTrip) {
  models::Node node = SampleNode("n1");
  node.measured.dispatch_ops_per_s = 187654.5;
  ASSERT_TRUE(store_->RegisterNode(node).ok());
  EXPECT_EQ(store_->GetNode("n1")->measured.dispatch_ops_per_s, 187654.5);
  models::Profile p = SampleProfile("n1", 3);
  p.method_version = models::kCurrentMethodVersion;
  p.conditions = {.dispatch_ops_per_s = 128000.25, .launch_latency_us = 2.125,
                  .cpu_single_thread_score = 1.75, .h2d_pinned_gbs = 52.5,
                  .h2d_pageable_gbs = 17.25, .board_power_w = 612.5, .sm_clock_mhz = 1980,
                  .gpu_temperature_c = 58.5, .python_op_us = 8.125, .torchscript_op_us = 5.25};
  p.loop = "cpp";
  models::Profile old_method = SampleProfile("n1", 4);
  ASSERT_EQ(Import({p, old_method}).accepted, 2);
  auto all = All();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].content_hash, models::ComputeContentHash(p));
  all[0].id = 0;
  all[0].content_hash.clear();
  EXPECT_EQ(all[0], p);
  EXPECT_EQ(all[1].method_version, 1);
  EXPECT_EQ(all[1].conditions, models::RunConditions{});
  EXPECT_EQ(all[1].loop, "");
  // The refresh of an imported node carries the dispatch rate too.
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  node.measured.dispatch_ops_per_s = 99999;
  ASSERT_TRUE((*import)->UpsertNode(node).ok());
  ASSERT_TRUE((*import)->Commit().ok());
  EXPECT_EQ(store_->GetNode("n1")->measured.dispatch_ops_per_s, 99999);
}

TEST_P(StoreTest, ScanFiltersByMethodVersion) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  std::vector<models::Profile> batch;
  for (int i = 0; i < 5; ++i) {
    batch.push_back(SampleProfile("n1", i));
    if (i < 2) batch.back().method_version = 2;
  }
  ASSERT_EQ(Import(batch).accepted, 5);
  EXPECT_EQ(All({.method_version = 2}).size(), 2u);
  EXPECT_EQ(All({.method_version = 1}).size(), 3u);
  EXPECT_EQ(*store_->CountProfiles({.method_version = 2}), 2);
  EXPECT_EQ(All().size(), 5u);
}

// Whatever an import accepted, an unfiltered scan (what export runs) returns:
// a time before 1970 included.
TEST_P(StoreTest, ProfilesMeasuredBefore1970AreScanned) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  models::Profile p = SampleProfile("n1", 1);
  p.measured_at_us = -5'000'000;
  ASSERT_EQ(Import({p, SampleProfile("n1", 2)}).accepted, 2);
  EXPECT_EQ(All().size(), 2u);
  EXPECT_EQ(*store_->CountProfiles({}), 2);
  EXPECT_EQ(All({.since_us = 0}).size(), 1u);
}

TEST_P(StoreTest, RolledBackImportLeavesStoreUnchanged) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  ASSERT_EQ(Import({SampleProfile("n1", 1)}).accepted, 1);
  {
    auto import = store_->BeginImport();
    ASSERT_TRUE(import.ok());
    models::Node agent_node = SampleNode("agent-node");
    ASSERT_TRUE((*import)->UpsertNode(agent_node).ok());
    for (int i = 2; i < 50; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("agent-node", i)).ok());
    EXPECT_EQ((*import)->summary().accepted, 48);
    // Destroyed without Commit: an interrupted stream.
  }
  EXPECT_EQ(*store_->CountProfiles({}), 1);
  EXPECT_EQ(store_->GetNode("agent-node").status().code(), absl::StatusCode::kNotFound);
  // The store is still writable afterwards.
  EXPECT_EQ(Import({SampleProfile("n1", 2)}).accepted, 1);
}

TEST_P(StoreTest, UpsertNodeRefreshesMeasurementsButKeepsGpuModel) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  models::Node refreshed = SampleNode("n1");
  refreshed.measured.bf16_tflops = 700;
  ASSERT_TRUE((*import)->UpsertNode(refreshed).ok());
  models::Node other = SampleNode("n1", "L4-24GB");
  EXPECT_EQ((*import)->UpsertNode(other).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*import)->Commit().ok());
  EXPECT_EQ(store_->GetNode("n1")->measured.bf16_tflops, 700);
}

// Agent files of one node imported out of order: the newest fingerprint's
// host and rates stay, an older file only adds its profiles.
TEST_P(StoreTest, AnOlderFingerprintDoesNotRollTheNodeBack) {
  models::Node newer = SampleNode("n1");
  newer.registered_at_us = 2'000'000;
  newer.measured.launch_latency_us = 1.0;
  newer.measured.dispatch_ops_per_s = 180000;
  models::Node older = SampleNode("n1");
  older.registered_at_us = 1'000'000;
  older.measured.launch_latency_us = 5.2;
  older.measured.dispatch_ops_per_s.reset();
  for (const models::Node* node : {&newer, &older}) {
    auto import = store_->BeginImport();
    ASSERT_TRUE(import.ok());
    ASSERT_TRUE((*import)->UpsertNode(*node).ok());
    ASSERT_TRUE((*import)->Add(0, SampleProfile("n1", static_cast<int>(node->registered_at_us / 1000000))).ok());
    ASSERT_TRUE((*import)->Commit().ok());
  }
  absl::StatusOr<models::Node> stored = store_->GetNode("n1");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->registered_at_us, 2'000'000);
  EXPECT_EQ(stored->measured.launch_latency_us, 1.0);
  EXPECT_EQ(stored->measured.dispatch_ops_per_s, 180000);
  EXPECT_EQ(*store_->CountProfiles({}), 2);

  // A newer one still refreshes.
  models::Node newest = newer;
  newest.registered_at_us = 3'000'000;
  newest.measured.launch_latency_us = 0.9;
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  ASSERT_TRUE((*import)->UpsertNode(newest).ok());
  ASSERT_TRUE((*import)->Commit().ok());
  EXPECT_EQ(store_->GetNode("n1")->measured.launch_latency_us, 0.9);
  EXPECT_EQ(store_->GetNode("n1")->registered_at_us, 3'000'000);
}

TEST_P(StoreTest, ScanFilters) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("h", "H100-SXM5-80GB")).ok());
  ASSERT_TRUE(store_->RegisterNode(SampleNode("a", "A100-SXM4-80GB")).ok());
  std::vector<models::Profile> batch;
  for (int i = 0; i < 6; ++i) batch.push_back(SampleProfile(i < 4 ? "h" : "a", i));
  models::Profile model_run = SampleProfile("h", 10);
  model_run.workload = {};
  model_run.workload.family = "lstm";
  model_run.workload.phase = models::Phase::kTrain;
  batch.push_back(model_run);
  ASSERT_EQ(Import(batch).accepted, 7);
  EXPECT_EQ(All({.node_name = "h"}).size(), 5u);
  EXPECT_EQ(All({.gpu_model = "A100-SXM4-80GB"}).size(), 2u);
  EXPECT_EQ(All({.family = "lstm"}).size(), 1u);
  EXPECT_EQ(All({.phase = models::Phase::kTrain}).size(), 1u);
  EXPECT_EQ(All({.kind = models::WorkloadKind::kOperation}).size(), 6u);
  EXPECT_EQ(All({.since_us = 1'760'000'000'000'000 + 4}).size(), 3u);
  EXPECT_EQ(All({.limit = 2}).size(), 2u);
  EXPECT_EQ(All({.since_us = 1'760'000'000'000'000 + 2, .until_us = 1'760'000'000'000'000 + 4})
                .size(),
            3u);
  // Counts join nodes and workloads, and bound the time, only as asked.
  EXPECT_EQ(*store_->CountProfiles({.node_name = "a"}), 2);
  EXPECT_EQ(*store_->CountProfiles({.gpu_model = "H100-SXM5-80GB"}), 5);
  EXPECT_EQ(*store_->CountProfiles({.family = "lstm"}), 1);
  EXPECT_EQ(*store_->CountProfiles({.kind = models::WorkloadKind::kOperation}), 6);
  EXPECT_EQ(*store_->CountProfiles({.node_name = "h", .phase = models::Phase::kTrain}), 1);
  EXPECT_EQ(*store_->CountProfiles({.until_us = 1'760'000'000'000'000 + 1}), 2);
  EXPECT_EQ(*store_->CountProfiles({}), 7);
}

TEST_P(StoreTest, DeregisterNeedsPurgeWhenProfilesExist) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n2")).ok());
  ASSERT_EQ(Import({SampleProfile("n1", 1), SampleProfile("n2", 2)}).accepted, 2);
  EXPECT_EQ(store_->DeregisterNode("n1", false).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store_->CountProfiles({}), 2);
  EXPECT_TRUE(store_->DeregisterNode("n1", true).ok());
  EXPECT_EQ(*store_->CountProfiles({}), 1);
  EXPECT_EQ(store_->GetNode("n1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->DeregisterNode("n1", true).code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreTest, ModelsAreVersionedPerName) {
  StoredModel m{.name = "default", .target = "train_iteration_ms", .summary = "s",
                .cv_mape = 0.1, .payload = "{\"a\":1}"};
  auto v1 = store_->SaveModel(m);
  auto v2 = store_->SaveModel(m);
  m.name = "other";
  auto o1 = store_->SaveModel(m);
  ASSERT_TRUE(v1.ok() && v2.ok() && o1.ok());
  EXPECT_EQ(v1->version, 1);
  EXPECT_EQ(v2->version, 2);
  EXPECT_EQ(o1->version, 1);
  auto latest = store_->LatestModel("default");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->id, v2->id);
  EXPECT_EQ(latest->payload, "{\"a\":1}");
  EXPECT_EQ(store_->GetModel(v1->id)->version, 1);
  EXPECT_EQ(store_->ListModels()->size(), 3u);
  EXPECT_EQ(store_->LatestModel("none").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetModel(12345).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(StoreTest, SkippedRunsAreKept) {
  ASSERT_TRUE(store_->RecordSkipped({"n1", "model/lstm{}/b1/fp64/train/adam", "out of memory", 5}).ok());
  auto skipped = store_->ListSkipped();
  ASSERT_TRUE(skipped.ok());
  ASSERT_EQ(skipped->size(), 1u);
  EXPECT_EQ((*skipped)[0].reason, "out of memory");
}

TEST_P(StoreTest, ReadOnlyStoreRefusesWrites) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  auto ro = OpenStoreReadOnly(uri_);
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_EQ((*ro)->GetNode("n1")->name, "n1");
  EXPECT_EQ((*ro)->RegisterNode(SampleNode("n2")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*ro)->BeginImport().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(StoreTest, ConcurrentReadersSeeCommittedDataOnly) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
  int64_t seen_during = -1;
  std::thread reader([&] { seen_during = *store_->CountProfiles({}); });
  reader.join();
  EXPECT_EQ(seen_during, 0);
  ASSERT_TRUE((*import)->Commit().ok());
  EXPECT_EQ(*store_->CountProfiles({}), 10);
}

TEST_P(StoreTest, SizeIsPositiveAndGrowsWithProfiles) {
  auto empty = store_->ApproximateSizeBytes();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_GT(*empty, 0);  // the schema alone takes pages

  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  std::vector<models::Profile> profiles;
  for (int i = 0; i < 500; ++i) profiles.push_back(SampleProfile("n1", i));
  ASSERT_EQ(Import(profiles).accepted, 500);
  auto full = store_->ApproximateSizeBytes();
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_GT(*full, *empty);
  if (GetParam() != "sqlite") return;

  // SQLite: the figure is the file plus its write-ahead log.
  std::error_code no_wal;
  const auto wal = std::filesystem::file_size(uri_ + "-wal", no_wal);
  EXPECT_EQ(*full, static_cast<int64_t>(std::filesystem::file_size(uri_) + (no_wal ? 0 : wal)));
}

TEST(StoreSizeTest, InMemoryAndReadOnlyStoresCountTheirPages) {
  auto memory = OpenStore(":memory:");
  ASSERT_TRUE(memory.ok()) << memory.status();
  auto memory_size = (*memory)->ApproximateSizeBytes();
  ASSERT_TRUE(memory_size.ok()) << memory_size.status();
  EXPECT_GT(*memory_size, 0);
  EXPECT_EQ(*memory_size % 512, 0);  // whole pages

  TempDir dir;
  {
    auto file = OpenStore(dir.File("s.db"));
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->RegisterNode(SampleNode("n1")).ok());
  }
  auto read_only = OpenStoreReadOnly(dir.File("s.db"));
  ASSERT_TRUE(read_only.ok()) << read_only.status();
  auto read_only_size = (*read_only)->ApproximateSizeBytes();
  ASSERT_TRUE(read_only_size.ok()) << read_only_size.status();
  EXPECT_GT(*read_only_size, 0);
}

TEST_P(StoreTest, ListingIsPagedByIdWhateverTheInsertionOrder) {
  for (const char* name : {"zeta", "alpha", "mid"}) ASSERT_TRUE(store_->RegisterNode(SampleNode(name)).ok());
  auto first = store_->ListNodes({.page_size = 2});
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->nodes.size(), 2u);
  EXPECT_EQ(first->nodes[0].name, "zeta");
  EXPECT_EQ(first->nodes[1].name, "alpha");
  auto second = store_->ListNodes({.page_size = 2, .page_token = first->next_page_token});
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->nodes.size(), 1u);
  EXPECT_EQ(second->nodes[0].name, "mid");
  EXPECT_TRUE(second->next_page_token.empty());
  EXPECT_EQ(store_->ListNodes({.page_token = "-4"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ForEachNodeVisitsEveryPageOnce) {
  for (const char* name : {"a", "b", "c", "d", "e"}) {
    ASSERT_TRUE(store_->RegisterNode(SampleNode(name)).ok());
  }
  std::vector<std::string> seen;
  ASSERT_TRUE(ForEachNode(*store_, {.page_size = 2}, [&](models::Node& n) {
                seen.push_back(n.name);
              }).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(ForEachNode(*store_, {.page_token = "-4"}, [](models::Node&) {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreTest, ScanStopsWhenTheVisitorSaysSo) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  std::vector<models::Profile> batch;
  for (int i = 0; i < 30; ++i) batch.push_back(SampleProfile("n1", i));
  ASSERT_EQ(Import(batch).accepted, 30);
  int visited = 0;
  ASSERT_TRUE(store_->ScanProfiles({}, [&](const models::Profile&) { return ++visited < 7; }).ok());
  EXPECT_EQ(visited, 7);
  std::vector<models::Profile> all = All();
  ASSERT_EQ(all.size(), 30u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].id, all[i].id);
  // A limit caps the scan, not the count.
  EXPECT_EQ(*store_->CountProfiles({.limit = 5}), 30);
}

TEST_P(StoreTest, CommittedImportCannotBeUsedAgain) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  ASSERT_TRUE((*import)->Add(0, SampleProfile("n1", 0)).ok());
  ASSERT_TRUE((*import)->Commit().ok());
  EXPECT_EQ((*import)->Add(1, SampleProfile("n1", 1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*import)->Commit().status().code(), absl::StatusCode::kFailedPrecondition);
  // The import lock was released at Commit although the object lives on.
  EXPECT_EQ(Import({SampleProfile("n1", 2)}).accepted, 1);
  EXPECT_EQ(*store_->CountProfiles({}), 2);
}

// Large enough that a backend which batches rows (PostgreSQL sends 500
// profiles per INSERT and reads 2,000 per query) crosses its batch edges.
TEST_P(StoreTest, LargeImportsAndScansCountEveryProfileOnce) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  constexpr int kProfiles = 2500;
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  for (int i = 0; i < kProfiles; ++i) {
    ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
    if (i == 700) {
      EXPECT_EQ((*import)->summary().accepted, 701);
    }
  }
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE((*import)->Add(kProfiles + i, SampleProfile("n1", i * 7)).ok());
  }
  auto summary = (*import)->Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, kProfiles);
  EXPECT_EQ(summary->duplicates, 100);
  EXPECT_EQ(*store_->CountProfiles({}), kProfiles);
  std::vector<models::Profile> all = All();
  ASSERT_EQ(all.size(), static_cast<size_t>(kProfiles));
  std::set<std::string> hashes;
  for (size_t i = 0; i < all.size(); ++i) {
    hashes.insert(all[i].content_hash);
    if (i > 0) EXPECT_LT(all[i - 1].id, all[i].id);
  }
  EXPECT_EQ(hashes.size(), static_cast<size_t>(kProfiles));
  EXPECT_EQ(All({.limit = 2100}).size(), 2100u);
}

// A backend may insert staged profiles in groups (SQLite 32 rows per
// statement, PostgreSQL 500): imports of sizes around the group edges, with
// duplicates inside one group, across groups and of an earlier import, count
// and store every row once, and the values of each row are its own.
TEST_P(StoreTest, ImportsOfEverySizeAroundInsertGroupsStoreEachRowOnce) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  int next_seed = 0;
  int64_t stored = 0;
  for (int size : {1, 2, 31, 32, 33, 63, 64, 65, 97, 501}) {
    SCOPED_TRACE(size);
    const int first_seed = next_seed;
    std::vector<models::Profile> batch;
    int fresh = 0;
    for (int i = 0; i < size; ++i) {
      if (i % 5 == 4) {
        // The previous row again (same group), or the first of the import
        // (an earlier group), or the last of the previous import.
        const int seed = i % 3 == 0 ? next_seed - 1 : i % 3 == 1 ? first_seed : first_seed - 1;
        batch.push_back(SampleProfile("n1", seed < 0 ? 0 : seed));
      } else {
        batch.push_back(SampleProfile("n1", next_seed++));
        ++fresh;
      }
    }
    const ImportSummary summary = Import(batch);
    EXPECT_EQ(summary.accepted, fresh);
    EXPECT_EQ(summary.duplicates, size - fresh);
    stored += fresh;
    EXPECT_EQ(*store_->CountProfiles({}), stored);
  }
  std::vector<models::Profile> all = All();
  ASSERT_EQ(all.size(), static_cast<size_t>(stored));
  for (size_t i = 0; i < all.size(); ++i) {
    models::Profile expected = SampleProfile("n1", static_cast<int>(i));
    EXPECT_EQ(all[i].measured_at_us, expected.measured_at_us);
    EXPECT_EQ(all[i].iteration.mean_ms, expected.iteration.mean_ms);
    EXPECT_EQ(all[i].throughput_per_s, expected.throughput_per_s);
  }
}

// Rows of a rolled-back import that a backend had bound for its next insert
// never reach a later import.
TEST_P(StoreTest, ARolledBackImportLeavesNothingForTheNextOne) {
  ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  {
    auto import = store_->BeginImport();
    ASSERT_TRUE(import.ok());
    for (int i = 0; i < 40; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", 100 + i)).ok());
  }
  EXPECT_EQ(Import({SampleProfile("n1", 1), SampleProfile("n1", 2), SampleProfile("n1", 3)}).accepted,
            3);
  EXPECT_EQ(*store_->CountProfiles({}), 3);
  auto import = store_->BeginImport();
  ASSERT_TRUE(import.ok());
  ASSERT_TRUE((*import)->Add(0, SampleProfile("n1", 4)).ok());
  EXPECT_EQ((*import)->summary().accepted, 1);
  ASSERT_TRUE((*import)->Add(1, SampleProfile("n1", 5)).ok());
  auto summary = (*import)->Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 2);
  EXPECT_EQ(*store_->CountProfiles({}), 5);
}

std::vector<std::string> Backends() {
  std::vector<std::string> backends = {"sqlite"};
#ifdef PERFCAST_HAVE_POSTGRES
  backends.push_back("postgres");
#endif
  return backends;
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreTest, ::testing::ValuesIn(Backends()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(DatabaseUriTest, PasswordsAreRedacted) {
  EXPECT_EQ(RedactDatabaseUri("postgresql://app:s3cret@db.internal:5432/perfcast"),
            "postgresql://app:****@db.internal:5432/perfcast");
  EXPECT_EQ(RedactDatabaseUri("postgresql://db/perfcast?user=app&password=s3cret&sslmode=require"),
            "postgresql://db/perfcast?user=app&password=****&sslmode=require");
  EXPECT_EQ(RedactDatabaseUri("postgresql://app@db/perfcast"), "postgresql://app@db/perfcast");
  EXPECT_EQ(RedactDatabaseUri("sqlite:///var/lib/perfcast/perfcast.db"),
            "sqlite:///var/lib/perfcast/perfcast.db");
}

TEST(DatabaseUriTest, UnknownSchemesAreInvalid) {
  EXPECT_EQ(OpenStore("mysql://db/perfcast").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("").status().code(), absl::StatusCode::kInvalidArgument);
#ifndef PERFCAST_HAVE_POSTGRES
  EXPECT_EQ(OpenStore("postgresql://db/perfcast").status().code(),
            absl::StatusCode::kUnimplemented);
#endif
}

}  // namespace
}  // namespace perfcast::db
