#include "db/schema.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

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

// A new database gets 16 KiB pages (an import writes a quarter as many); an
// existing file keeps the page size it was made with.
TEST(SchemaTest, NewFilesGetLargePagesAndOldFilesKeepTheirs) {
  TempDir dir;
  auto page_size = [](const std::string& path) {
    auto c = Connection::Open(path, Connection::Mode::kReadOnly);
    EXPECT_TRUE(c.ok());
    return *(*c)->QueryInt("PRAGMA page_size");
  };
  const std::string fresh = dir.File("fresh.db");
  ASSERT_TRUE(OpenStore(fresh).ok());
  EXPECT_EQ(page_size(fresh), 16384);

  const std::string old = dir.File("old.db");
  ASSERT_TRUE(CreateSqliteStoreAtVersion(old, 4).ok());  // SQLite's default pages
  ASSERT_EQ(page_size(old), 4096);
  auto store = OpenStore(old);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
  auto import = (*store)->BeginImport();
  ASSERT_TRUE(import.ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
  ASSERT_EQ((*import)->Commit()->accepted, 100);
  store->reset();
  EXPECT_EQ(page_size(old), 4096);
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
// A server database copied from an agent file (adopted by switching it to
// WAL, as perfcastd's refusal message says) migrates like any older database.
TEST(SchemaTest, AdoptedShippedAgentFileMigratesAsTheServersDatabase) {
  TempDir dir;
  const std::string path = dir.File("cpu-1t.sqlite");
  std::filesystem::copy_file(absl::StrCat(PERFCAST_DATA_DIR, "/cpu-1t.sqlite"), path);
  const int64_t shipped_version = UserVersion(path);
  ASSERT_LT(shipped_version, CurrentSchemaVersion());
  {
    auto ro = OpenStoreReadOnly(path);
    ASSERT_TRUE(ro.ok()) << ro.status();
    EXPECT_GT(*(*ro)->CountProfiles({.method_version = 1}), 100);
    // Nodes from before the Python probe read as not probed.
    int64_t nodes = 0;
    ASSERT_TRUE(ForEachNode(**ro, {}, [&](models::Node& node) {
                  EXPECT_FALSE(node.measured.python_op_us.has_value());
                  EXPECT_EQ(node.host.python_version, "");
                  ++nodes;
                }).ok());
    EXPECT_GT(nodes, 0);
  }
  EXPECT_EQ(UserVersion(path), shipped_version);
  EXPECT_EQ(OpenStore(path).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(UserVersion(path), shipped_version);
  {
    auto c = Connection::Open(path, Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_TRUE((*c)->Execute("PRAGMA journal_mode=WAL").ok());
  }
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
                                   EXPECT_EQ(p.loop, "");
                                   EXPECT_EQ(models::ComputeContentHash(p), p.content_hash);
                                   node_name = p.node_name;
                                   ++scanned;
                                   return true;
                                 })
                  .ok());
  ASSERT_GT(scanned, 100);
  models::Profile current = SampleProfile(node_name, 1);
  current.method_version = models::kCurrentMethodVersion;
  current.conditions = {.dispatch_ops_per_s = 150000, .cpu_single_thread_score = 1.1,
                        .python_op_us = 8.5};
  current.loop = "cpp";
  auto import = (*store)->BeginImport();
  ASSERT_TRUE(import.ok());
  ASSERT_TRUE((*import)->Add(0, current).ok());
  auto summary = (*import)->Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 1);
  EXPECT_EQ(*(*store)->CountProfiles({.method_version = models::kCurrentMethodVersion}), 1);
  ASSERT_TRUE((*store)
                  ->ScanProfiles({.method_version = models::kCurrentMethodVersion},
                                 [&](const models::Profile& p) {
                                   EXPECT_EQ(p.conditions.python_op_us, 8.5);
                                   EXPECT_EQ(p.loop, "cpp");
                                   return true;
                                 })
                  .ok());
  EXPECT_EQ(*(*store)->CountProfiles({}), scanned + 1);
}

// The profiles' indexes, by name, as the file at `path` holds them.
std::vector<std::string> ProfileIndexes(const std::string& path) {
  auto c = Connection::Open(path, Connection::Mode::kReadOnly);
  EXPECT_TRUE(c.ok());
  auto stmt = (*c)->Prepare(
      "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'profiles' "
      "ORDER BY name");
  EXPECT_TRUE(stmt.ok());
  std::vector<std::string> names;
  while (*(*stmt)->Step()) names.push_back((*stmt)->Text(0));
  return names;
}

// Every index is a B-tree insert per imported row: profiles keep the content
// hash's (duplicates) and the node's (scans by node, deregistration) alone,
// in a new file and in one migrated from before version 5, whose scans by
// time and family still find their rows.
TEST(SchemaTest, ProfilesKeepOnlyTheHashAndNodeIndexes) {
  const std::vector<std::string> kept = {"profiles_by_node", "sqlite_autoindex_profiles_1"};
  TempDir dir;
  const std::string fresh = dir.File("fresh.db");
  ASSERT_TRUE(OpenStore(fresh).ok());
  EXPECT_EQ(ProfileIndexes(fresh), kept);

  const std::string old = dir.File("v4.db");
  ASSERT_TRUE(CreateSqliteStoreAtVersion(old, 4).ok());
  EXPECT_EQ(ProfileIndexes(old).size(), 4u);
  {
    auto store = OpenStore(old);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
    auto import = (*store)->BeginImport();
    ASSERT_TRUE(import.ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
    ASSERT_EQ((*import)->Commit()->accepted, 10);
    EXPECT_EQ(*(*store)->CountProfiles({.since_us = 1'760'000'000'000'000 + 7}), 3);
    EXPECT_EQ(*(*store)->CountProfiles({.family = "gemm"}), 10);
    EXPECT_EQ(*(*store)->CountProfiles({.node_name = "n1"}), 10);
  }
  EXPECT_EQ(UserVersion(old), CurrentSchemaVersion());
  EXPECT_EQ(ProfileIndexes(old), kept);
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

// What a file looks like from outside: its bytes and modification time,
// and whether SQLite left a WAL or shared-memory file beside it.
struct FileState {
  std::string bytes;
  std::filesystem::file_time_type mtime;
  bool wal = false;
  bool shm = false;
  friend bool operator==(const FileState&, const FileState&) = default;
};

FileState StateOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FileState state{std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()),
                  std::filesystem::last_write_time(path)};
  state.wal = std::filesystem::exists(path + "-wal");
  state.shm = std::filesystem::exists(path + "-shm");
  return state;
}

// perfcastd --db=data/h100.sqlite once switched a shipped agent file to WAL.
TEST(SchemaTest, ServerRefusesAgentStoresWithoutTouchingThem) {
  TempDir dir;
  const std::string agent = dir.File("agent.sqlite");
  {
    auto store = OpenSqliteAgentStore(agent);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
  }
  const std::string shipped = dir.File("h100.sqlite");
  std::filesystem::copy_file(std::string(PERFCAST_DATA_DIR) + "/h100.sqlite", shipped);
  for (const std::string& path : {agent, shipped}) {
    const FileState before = StateOf(path);
    absl::StatusOr<std::unique_ptr<Store>> server = OpenStore(path);
    ASSERT_FALSE(server.ok()) << path;
    EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(server.status().message().find("not a server database"), std::string::npos)
        << server.status();
    EXPECT_TRUE(StateOf(path) == before) << path << " was modified";
    // Reading it (perfcast import) still works and leaves its content alone
    // (SQLite may leave the shared-memory index of a WAL file beside it).
    absl::StatusOr<std::unique_ptr<Store>> reader = OpenStoreReadOnly(path);
    ASSERT_TRUE(reader.ok()) << reader.status();
    reader->reset();
    EXPECT_TRUE(StateOf(path).bytes == before.bytes) << path << " was modified by reading";
  }
  // The agent extends its own store.
  absl::StatusOr<std::unique_ptr<Store>> again = OpenSqliteAgentStore(agent);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)->GetNode("n1").ok());
}

TEST(SchemaTest, ServerDatabasesReopenAndForeignFilesStayUntouched) {
  TempDir dir;
  const std::string path = dir.File("perfcast.db");
  {
    auto store = OpenStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
  }
  auto reopened = OpenStore(path);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE((*reopened)->GetNode("n1").ok());

  const std::string foreign = dir.File("recipes.sqlite");
  {
    auto c = Connection::Open(foreign, Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Execute("CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('x')").ok());
  }
  const FileState before = StateOf(foreign);
  EXPECT_EQ(OpenStore(foreign).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(StateOf(foreign) == before);
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

// Imports write without SQLite's foreign-key check (BeginImport says why):
// every node and workload id they store must still exist, also after an
// import that created nodes and workloads was rolled back.
TEST(SchemaTest, ImportsStoreOnlyIdsThatExist) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  auto store = OpenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
  {
    auto import = (*store)->BeginImport();
    ASSERT_TRUE(import.ok()) << import.status();
    ASSERT_TRUE((*import)->UpsertNode(SampleNode("agent-node")).ok());
    for (int i = 0; i < 8; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("agent-node", i)).ok());
    // Rolled back: the node and the workloads it created are gone.
  }
  ASSERT_TRUE((*store)->RegisterNode(SampleNode("later")).ok());  // may reuse the node's id
  auto import = (*store)->BeginImport();
  ASSERT_TRUE(import.ok()) << import.status();
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE((*import)->Add(2 * i, SampleProfile("agent-node", i)).ok());
    ASSERT_TRUE((*import)->Add(2 * i + 1, SampleProfile("n1", i)).ok());
  }
  absl::StatusOr<ImportSummary> summary = (*import)->Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 8);
  EXPECT_EQ(summary->rejected.size(), 8u);  // agent-node is unknown again

  auto check = Connection::Open(path, Connection::Mode::kReadOnly);
  ASSERT_TRUE(check.ok());
  auto violations = (*check)->Prepare("PRAGMA foreign_key_check");
  ASSERT_TRUE(violations.ok());
  absl::StatusOr<bool> row = (*violations)->Step();
  ASSERT_TRUE(row.ok()) << row.status();
  EXPECT_FALSE(*row) << "a profile names a missing " << (*violations)->Text(2);
  EXPECT_EQ(*(*check)->QueryInt("SELECT count(*) FROM profiles p JOIN nodes n ON n.id = p.node_id "
                                "JOIN workloads w ON w.id = p.workload_id WHERE n.name = 'n1'"),
            8);
}

// The SQLite store inserts an import's profiles many rows per statement: a
// row that fails inside such a statement (here a trigger, standing in for an
// I/O error) fails the import, and nothing of it is stored, neither the rows
// of earlier statements nor those the failing statement had written before it.
TEST(SchemaTest, ARowFailingInsideAMultiRowInsertRollsBackTheWholeImport) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  auto store = OpenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
  {
    auto import = (*store)->BeginImport();
    ASSERT_TRUE(import.ok()) << import.status();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
    ASSERT_TRUE((*import)->Commit().ok());
  }
  const int64_t failing_at_us = SampleProfile("n1", 1040).measured_at_us;
  {
    auto c = Connection::Open(path, Connection::Mode::kReadWriteCreate);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Execute(absl::StrCat("CREATE TRIGGER fail_one BEFORE INSERT ON profiles "
                                           "WHEN NEW.measured_at_us = ", failing_at_us,
                                           " BEGIN SELECT RAISE(FAIL, 'disk on fire'); END"))
                    .ok());
  }
  auto import = (*store)->BeginImport();
  ASSERT_TRUE(import.ok()) << import.status();
  absl::Status failed;
  for (int i = 0; i < 100 && failed.ok(); ++i) failed = (*import)->Add(i, SampleProfile("n1", 1000 + i));
  if (failed.ok()) failed = (*import)->Commit().status();
  EXPECT_NE(failed.message().find("disk on fire"), std::string::npos) << failed;
  // The error names the statement by its start, not its thousand parameters.
  EXPECT_LT(failed.message().size(), 300u) << failed;
  EXPECT_EQ((*import)->Add(100, SampleProfile("n1", 2000)).code(), absl::StatusCode::kAborted);
  EXPECT_FALSE((*import)->Commit().ok());
  import->reset();
  EXPECT_EQ(*(*store)->CountProfiles({}), 5);
  // The store takes the next import.
  auto next = (*store)->BeginImport();
  ASSERT_TRUE(next.ok()) << next.status();
  for (int i = 0; i < 40; ++i) ASSERT_TRUE((*next)->Add(i, SampleProfile("n1", 1000 + i)).ok());
  ASSERT_EQ((*next)->Commit()->accepted, 40);
  EXPECT_EQ(*(*store)->CountProfiles({}), 45);
}

// A commit that leaves 4 MB in the WAL (SQLite's 1,000 pages of 4 KiB) gets
// them checkpointed into the main file by the store's own thread, not inside
// the commit (wal_checkpointer.h): the main file grows soon after a large
// import.
TEST(SchemaTest, LargeImportsReachTheMainFileInTheBackground) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  auto store = OpenStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
  const std::uintmax_t before = std::filesystem::file_size(path);
  auto import = (*store)->BeginImport();
  ASSERT_TRUE(import.ok()) << import.status();
  for (int i = 0; i < 30'000; ++i) ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
  ASSERT_EQ((*import)->Commit()->accepted, 30'000);
  // Every page of the database, committed pages in the WAL included.
  auto reader = Connection::Open(path, Connection::Mode::kReadOnly);
  ASSERT_TRUE(reader.ok());
  const std::uintmax_t checkpointed =
      *(*reader)->QueryInt("PRAGMA page_count") * *(*reader)->QueryInt("PRAGMA page_size");
  reader->reset();
  ASSERT_GT(checkpointed, before + 1000 * 4096);
  // The wait only bounds a hang.
  for (int wait = 0; wait < 600 && std::filesystem::file_size(path) < checkpointed; ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_GE(std::filesystem::file_size(path), checkpointed);
  EXPECT_EQ(*(*store)->CountProfiles({}), 30'000);
}

TEST(SchemaTest, UnknownUriSchemeIsInvalidArgument) {
  EXPECT_EQ(OpenStore("mysql://x/y").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpenStore("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perfcast::db
