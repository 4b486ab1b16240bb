#include "db/schema.h"

#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "db/sqlite_store.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace perfcast::db {
namespace {

using perfcast::testing::SampleNode;
using perfcast::testing::SampleProfile;
using perfcast::testing::TempDir;

int64_t UserVersion(const std::string& path) {
  auto c = Connection::Open(path, Connection::Mode::kReadOnly);
  EXPECT_TRUE(c.ok());
  return *(*c)->QueryInt("PRAGMA user_version");
}

TEST(SchemaTest, FreshFileMigratesToCurrentVersion) {
  TempDir dir;
  const std::string path = dir.File("fresh.db");
  auto store = OpenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  store->reset();
  EXPECT_EQ(UserVersion(path), CurrentSchemaVersion());
  EXPECT_GE(CurrentSchemaVersion(), 2);
}

// A row written at every older version survives the migration to the current
// one and reads back through the current code.
TEST(SchemaTest, MigratesFromEveryOlderVersion) {
  for (int64_t version = 1; version < CurrentSchemaVersion(); ++version) {
    SCOPED_TRACE(version);
    TempDir dir;
    const std::string path = dir.File("old.db");
    ASSERT_TRUE(CreateSqliteStoreAtVersion(path, version).ok());
    ASSERT_EQ(UserVersion(path), version);
    {
      // Columns of the first version only: valid at every later one.
      auto c = Connection::Open(path, Connection::Mode::kReadWriteCreate);
      ASSERT_TRUE(c.ok());
      ASSERT_TRUE((*c)->Execute(
                          "INSERT INTO nodes (name, source, labels, gpu_count, gpu_model, "
                          "gpu_vendor_name, architecture, compute_capability, sm_count, "
                          "boost_clock_mhz, memory_gib, memory_bus_width_bits, "
                          "memory_bandwidth_gbs, fp32_tflops, tf32_tflops, fp16_tflops, "
                          "bf16_tflops, fp64_tflops, l2_cache_mib, interconnect, hostname, "
                          "cpu_model, cpu_cores, driver_version, cuda_version, torch_version, "
                          "registered_at_us) VALUES ('old', 'catalog', '{\"a\":\"b\"}', 2, "
                          "'A100-SXM4-80GB', 'NVIDIA A100', 'ampere', '8.0', 108, 1410, 80, "
                          "5120, 2039, 19.5, 156, 312, 312, 9.7, 40, 'NVLink', '', '', 0, '', "
                          "'', '', 7)")
                      .ok());
    }
    // A read-only open migrates a copy and leaves the file alone.
    {
      auto ro = OpenStoreReadOnly(path);
      ASSERT_TRUE(ro.ok()) << ro.status();
      auto node = (*ro)->GetNode("old");
      ASSERT_TRUE(node.ok()) << node.status();
      EXPECT_EQ(node->gpu.model, "A100-SXM4-80GB");
      EXPECT_EQ(UserVersion(path), version);
    }
    auto store = OpenStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto node = (*store)->GetNode("old");
    ASSERT_TRUE(node.ok()) << node.status();
    EXPECT_EQ(node->gpu_count, 2);
    EXPECT_EQ(node->labels.at("a"), "b");
    EXPECT_EQ(node->gpu.tdp_watts, 0);  // added later, defaulted
    // Every current feature works on the migrated file.
    ASSERT_TRUE((*store)->RegisterNode(SampleNode("new")).ok());
    auto import = (*store)->BeginImport();
    ASSERT_TRUE(import.ok());
    ASSERT_TRUE((*import)->Add(0, SampleProfile("old", 1)).ok());
    auto summary = (*import)->Commit();
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->accepted, 1) << (summary->rejected.empty() ? "" : summary->rejected[0].reason);
    StoredModel model{.name = "default", .target = "t", .payload = "{}"};
    EXPECT_TRUE((*store)->SaveModel(model).ok());
    store->reset();
    EXPECT_EQ(UserVersion(path), CurrentSchemaVersion());
  }
}

// Every profile the shipped agent files hold still hashes to the hash stored
// with it, so re-importing them (or an export of them) finds the same rows
// after fields were added to the profile.
TEST(SchemaTest, ShippedProfilesKeepTheirContentHashes) {
  for (const char* file : {"cpu-1t.sqlite", "h100.sqlite"}) {
    SCOPED_TRACE(file);
    auto store = OpenStoreReadOnly(absl::StrCat(PERFCAST_DATA_DIR, "/", file));
    ASSERT_TRUE(store.ok()) << store.status();
    int64_t checked = 0;
    ASSERT_TRUE((*store)
                    ->ScanProfiles({},
                                   [&](const models::Profile& p) {
                                     EXPECT_EQ(models::ComputeContentHash(p), p.content_hash)
                                         << p.workload.Key();
                                     ++checked;
                                     return true;
                                   })
                    .ok());
    EXPECT_GT(checked, 100);
  }
}

// A shipped agent file (schema version 2, before method versions) opened as
// a server's own database migrates in place; its profiles keep their hashes
// and read as method 1, and profiles with run conditions go in beside them.
// Opened read-only (an import), the same file is left as it was.
TEST(SchemaTest, ShippedAgentFileMigratesWhenItIsTheServersDatabase) {
  TempDir dir;
  const std::string path = dir.File("cpu-1t.sqlite");
  std::filesystem::copy_file(absl::StrCat(PERFCAST_DATA_DIR, "/cpu-1t.sqlite"), path);
  const int64_t shipped_version = UserVersion(path);
  ASSERT_LT(shipped_version, CurrentSchemaVersion());
  {
    auto ro = OpenStoreReadOnly(path);
    ASSERT_TRUE(ro.ok()) << ro.status();
    EXPECT_GT(*(*ro)->CountProfiles({.method_version = 1}), 100);
  }
  EXPECT_EQ(UserVersion(path), shipped_version);
  auto store = OpenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(UserVersion(path), CurrentSchemaVersion());
  std::string node_name;
  int64_t scanned = 0;
  ASSERT_TRUE((*store)
                  ->ScanProfiles({},
                                 [&](const models::Profile& p) {
                                   EXPECT_EQ(p.method_version, 1);
                                   EXPECT_EQ(p.conditions, models::RunConditions{});
                                   EXPECT_EQ(models::ComputeContentHash(p), p.content_hash);
                                   node_name = p.node_name;
                                   ++scanned;
                                   return true;
                                 })
                  .ok());
  ASSERT_GT(scanned, 100);
  models::Profile current = SampleProfile(node_name, 1);
  current.method_version = models::kCurrentMethodVersion;
  current.conditions = {.dispatch_ops_per_s = 150000, .cpu_single_thread_score = 1.1};
  auto import = (*store)->BeginImport();
  ASSERT_TRUE(import.ok());
  ASSERT_TRUE((*import)->Add(0, current).ok());
  auto summary = (*import)->Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 1);
  EXPECT_EQ(*(*store)->CountProfiles({.method_version = models::kCurrentMethodVersion}), 1);
  EXPECT_EQ(*(*store)->CountProfiles({}), scanned + 1);
}

TEST(SchemaTest, RejectsNonSqliteFile) {
  TempDir dir;
  const std::string path = dir.File("garbage.sqlite");
  std::ofstream(path) << "this is not a database, just text that is long enough to matter. "
                         "SQLite checks the 100-byte header of the first page.................";
  auto store = OpenStoreReadOnly(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  auto writable = OpenStore(path);
  ASSERT_FALSE(writable.ok());
  EXPECT_EQ(writable.status().code(), absl::StatusCode::kDataLoss) << writable.status();
}

TEST(SchemaTest, RejectsForeignSchemaWithoutTouchingIt) {
  TempDir dir;
  const std::string path = dir.File("foreign.sqlite");
  {
    auto c = Connection::Open(path, Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Execute("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('x')").ok());
  }
  auto store = OpenStoreReadOnly(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  auto writable = OpenStore(path);
  ASSERT_FALSE(writable.ok());
  EXPECT_EQ(writable.status().code(), absl::StatusCode::kFailedPrecondition);
  auto c = Connection::Open(path, Connection::Mode::kReadOnly);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*(*c)->QueryInt("SELECT count(*) FROM sqlite_schema"), 1);
  EXPECT_EQ(*(*c)->QueryInt("PRAGMA user_version"), 0);
}

TEST(SchemaTest, RejectsNewerSchemaVersion) {
  TempDir dir;
  const std::string path = dir.File("future.db");
  ASSERT_TRUE(OpenStore(path).ok());
  {
    auto c = Connection::Open(path, Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Execute("PRAGMA user_version = 999").ok());
  }
  auto store = OpenStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("999"), std::string::npos);
}

TEST(SchemaTest, ReadOnlyOpenOfMissingFileIsNotFound) {
  TempDir dir;
  auto store = OpenStoreReadOnly(dir.File("absent.sqlite"));
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
}

TEST(SchemaTest, UnknownUriSchemeIsInvalidArgument) {
  EXPECT_EQ(OpenStore("mysql://x/y").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perfcast::db
