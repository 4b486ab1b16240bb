// What the SQLite store adds to the conformance suite (store_test.cc) beyond
// its file format (schema_test.cc): how an import uses the writer's memory.
#include "db/sqlite_store.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace perfcast::db {
namespace {

using perfcast::testing::SampleNode;
using perfcast::testing::SampleProfile;
using perfcast::testing::TempDir;

constexpr int64_t kMiB = 1024 * 1024;

// The cache holds the content-hash index (27 bytes a profile, measured) with
// room to spare, and no more than that asks for, between 8 and 64 MiB.
TEST(ImportCacheTest, HoldsTheHashIndexWithinBounds) {
  EXPECT_EQ(ImportCacheKiB(0), 8 * 1024);
  EXPECT_EQ(ImportCacheKiB(50'000), 8 * 1024);
  EXPECT_EQ(ImportCacheKiB(100'000'000), 64 * 1024);
  int64_t previous = 0;
  for (int64_t profiles = 0; profiles <= 3'000'000; profiles += 50'000) {
    SCOPED_TRACE(profiles);
    const int64_t kib = ImportCacheKiB(profiles);
    EXPECT_EQ(kib % 1024, 0);  // whole MiB: the import resizes it seldom
    EXPECT_GE(kib, previous);
    const int64_t index_bytes = profiles * 27;
    if (index_bytes * 3 / 2 <= 64 * kMiB) {
      EXPECT_GE(kib * 1024, index_bytes * 3 / 2);
      EXPECT_LE(kib * 1024, std::max(index_bytes * 3 / 2 + kMiB, 8 * kMiB));
    }
    previous = kib;
  }
}

// An import larger than its cache writes pages to the WAL while it runs
// instead of holding them all until the commit, and is still all or
// nothing: readers see none of it before the commit, a dropped import leaves
// nothing (after a reopen too), and a committed one reads back whole.
TEST(SqliteImportTest, AnImportLargerThanItsCacheIsAllOrNothing) {
  TempDir dir;
  const std::string path = dir.File("store.db");
  constexpr int kProfiles = 100'000;  // about 20 MiB of pages
  auto wal_bytes = [&] {
    std::error_code error;
    const auto size = std::filesystem::file_size(path + "-wal", error);
    return error ? int64_t{0} : static_cast<int64_t>(size);
  };
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->RegisterNode(SampleNode("n1")).ok());
    auto import = (*store)->BeginImport();
    ASSERT_TRUE(import.ok()) << import.status();
    for (int i = 0; i < kProfiles; ++i) {
      ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
    }
    EXPECT_EQ((*import)->summary().accepted, kProfiles);
    EXPECT_GT(wal_bytes(), 8 * kMiB);
    int64_t seen_during = -1;
    std::thread reader([&] { seen_during = *(*store)->CountProfiles({}); });
    reader.join();
    EXPECT_EQ(seen_during, 0);
    // Dropped without Commit: an interrupted stream.
  }
  {
    auto store = OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ(*(*store)->CountProfiles({}), 0);
    auto import = (*store)->BeginImport();
    ASSERT_TRUE(import.ok()) << import.status();
    for (int i = 0; i < kProfiles; ++i) {
      ASSERT_TRUE((*import)->Add(i, SampleProfile("n1", i)).ok());
    }
    auto summary = (*import)->Commit();
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_EQ(summary->accepted, kProfiles);
  }
  auto store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  int64_t scanned = 0;
  ASSERT_TRUE((*store)
                  ->ScanProfiles({},
                                 [&](const models::Profile& p) {
                                   const models::Profile expected =
                                       SampleProfile("n1", static_cast<int>(scanned));
                                   EXPECT_EQ(p.measured_at_us, expected.measured_at_us);
                                   EXPECT_EQ(p.iteration.mean_ms, expected.iteration.mean_ms);
                                   ++scanned;
                                   return true;
                                 })
                  .ok());
  EXPECT_EQ(scanned, kProfiles);
  // Another import of the same profiles finds every one a duplicate.
  auto again = (*store)->BeginImport();
  ASSERT_TRUE(again.ok()) << again.status();
  for (int i = 0; i < kProfiles; i += 997) {
    ASSERT_TRUE((*again)->Add(i, SampleProfile("n1", i)).ok());
  }
  auto summary = (*again)->Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 0);
  EXPECT_EQ(summary->duplicates, (kProfiles + 996) / 997);
}

}  // namespace
}  // namespace perfcast::db
