// PipelinedImport: a transaction written on its own thread keeps every rule
// of a plain import (order, counts, all or nothing, the write lock).
#include "db/pipelined_import.h"

#include <string>
#include <vector>

#include "db/store.h"
#include "gtest/gtest.h"
#include "tests/db/test_util.h"

namespace perfcast::db {
namespace {

using perfcast::testing::SampleNode;
using perfcast::testing::SampleProfile;
using perfcast::testing::TempDir;

class PipelinedImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = OpenStore(dir_.File("store.db"));
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    ASSERT_TRUE(store_->RegisterNode(SampleNode("n1")).ok());
  }

  // Profiles [first, first + count) of node `node`, indexed from `first`.
  static PipelinedImport::Batch Profiles(const std::string& node, int first, int count) {
    PipelinedImport::Batch batch;
    for (int i = first; i < first + count; ++i) {
      batch.profiles.emplace_back(i, PreparedProfile::Prepare(SampleProfile(node, i)));
    }
    return batch;
  }

  std::vector<models::Profile> All() {
    std::vector<models::Profile> out;
    EXPECT_TRUE(store_->ScanProfiles({}, [&](const models::Profile& p) {
                  out.push_back(p);
                  return true;
                }).ok());
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(PipelinedImportTest, WritesBatchesInOrderAndCountsLikeAPlainImport) {
  PipelinedImport import(*store_);
  // More batches than the queue holds, so that Submit waits for the writer.
  for (int b = 0; b < 10; ++b) {
    PipelinedImport::Batch batch = Profiles("n1", 20 * b, 20);
    if (b == 3) {
      batch.nodes.push_back(SampleNode("agent-node"));
      batch.profiles.emplace_back(200, PreparedProfile::Prepare(SampleProfile("agent-node", 7)));
      models::Profile bad = SampleProfile("n1", 1000);
      bad.iteration.mean_ms = -1;
      batch.profiles.emplace_back(201, PreparedProfile::Prepare(bad));
      batch.profiles.emplace_back(202, PreparedProfile::Prepare(SampleProfile("ghost", 1)));
      batch.profiles.emplace_back(203, PreparedProfile::Prepare(SampleProfile("n1", 5)));
    }
    ASSERT_TRUE(import.Submit(std::move(batch)).ok());
  }
  // Written, not yet committed: readers see nothing.
  ASSERT_TRUE(import.Drain().ok());
  EXPECT_EQ(*store_->CountProfiles({}), 0);
  absl::StatusOr<ImportSummary> summary = import.Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 201);
  EXPECT_EQ(summary->duplicates, 1);
  ASSERT_EQ(summary->rejected.size(), 2u);
  EXPECT_EQ(summary->rejected[0].index, 201);
  EXPECT_NE(summary->rejected[0].reason.find("mean_ms"), std::string::npos);
  EXPECT_EQ(summary->rejected[1].index, 202);
  EXPECT_NE(summary->rejected[1].reason.find("ghost"), std::string::npos);

  // Stored in the order submitted: ids follow the import.
  std::vector<models::Profile> stored = All();
  ASSERT_EQ(stored.size(), 201u);
  EXPECT_EQ(stored[0].measured_at_us, SampleProfile("n1", 0).measured_at_us);
  EXPECT_EQ(stored[79].measured_at_us, SampleProfile("n1", 79).measured_at_us);
  EXPECT_EQ(stored[80].node_name, "agent-node");
  EXPECT_EQ(stored[81].measured_at_us, SampleProfile("n1", 80).measured_at_us);

  EXPECT_EQ(import.Submit(Profiles("n1", 500, 1)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(import.Commit().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store_->CountProfiles({}), 201);
}

// NewBatch hands back written batches' storage, emptied: nothing of an
// earlier batch is written twice.
TEST_F(PipelinedImportTest, NewBatchesAreEmptyWhenTheirStorageIsReused) {
  PipelinedImport import(*store_);
  for (int b = 0; b < 5; ++b) {
    PipelinedImport::Batch batch = import.NewBatch();
    EXPECT_TRUE(batch.nodes.empty()) << b;
    EXPECT_TRUE(batch.profiles.empty()) << b;
    // After Drain, the batch written before is the one handed back.
    if (b > 0) {
      EXPECT_GE(batch.profiles.capacity(), 30u) << b;
    }
    if (b == 0) batch.nodes.push_back(SampleNode("agent-node"));
    for (int i = 30 * b; i < 30 * b + 30; ++i) {
      batch.profiles.emplace_back(i, PreparedProfile::Prepare(SampleProfile("n1", i)));
    }
    ASSERT_TRUE(import.Submit(std::move(batch)).ok());
    ASSERT_TRUE(import.Drain().ok());
  }
  absl::StatusOr<ImportSummary> summary = import.Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 150);
  EXPECT_EQ(summary->duplicates, 0);
  EXPECT_EQ(All().size(), 150u);
}

TEST_F(PipelinedImportTest, AFailedBatchEndsTheImportAndStoresNothing) {
  PipelinedImport import(*store_);
  ASSERT_TRUE(import.Submit(Profiles("n1", 0, 50)).ok());
  PipelinedImport::Batch clash = Profiles("n1", 50, 10);
  clash.nodes.push_back(SampleNode("n1", "A100-SXM4-80GB"));  // n1 is an H100
  ASSERT_TRUE(import.Submit(std::move(clash)).ok());
  // The error reaches the caller once the batch is written: at Drain, and at
  // every call after it.
  EXPECT_EQ(import.Drain().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(import.Submit(Profiles("n1", 60, 10)).code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<ImportSummary> summary = import.Commit();
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*store_->CountProfiles({}), 0);
  // The write lock was released.
  PipelinedImport next(*store_);
  ASSERT_TRUE(next.Submit(Profiles("n1", 0, 3)).ok());
  ASSERT_TRUE(next.Commit().ok());
  EXPECT_EQ(*store_->CountProfiles({}), 3);
}

TEST_F(PipelinedImportTest, AnAbandonedImportStoresNothing) {
  {
    PipelinedImport import(*store_);
    PipelinedImport::Batch batch = Profiles("agent-node", 0, 100);
    batch.nodes.push_back(SampleNode("agent-node"));
    ASSERT_TRUE(import.Submit(std::move(batch)).ok());
    ASSERT_TRUE(import.Submit(Profiles("n1", 100, 100)).ok());
    // Destroyed without Commit: an interrupted stream.
  }
  EXPECT_EQ(*store_->CountProfiles({}), 0);
  EXPECT_EQ(store_->GetNode("agent-node").status().code(), absl::StatusCode::kNotFound);
  auto plain = store_->BeginImport();
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE((*plain)->Add(0, SampleProfile("n1", 0)).ok());
  EXPECT_EQ((*plain)->Commit()->accepted, 1);
}

TEST_F(PipelinedImportTest, NothingIsLockedBeforeTheFirstBatch) {
  PipelinedImport idle(*store_);
  // A plain import runs meanwhile: the idle one has not begun.
  auto plain = store_->BeginImport();
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE((*plain)->Add(0, SampleProfile("n1", 0)).ok());
  ASSERT_TRUE((*plain)->Commit().ok());
  // Committing nothing is an empty import.
  absl::StatusOr<ImportSummary> summary = idle.Commit();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->accepted, 0);
  EXPECT_EQ(*store_->CountProfiles({}), 1);
}

TEST_F(PipelinedImportTest, AStoreThatCannotBeginReportsWhy) {
  auto read_only = OpenStoreReadOnly(dir_.File("store.db"));
  ASSERT_TRUE(read_only.ok()) << read_only.status();
  PipelinedImport import(**read_only);
  absl::Status submitted = import.Submit(Profiles("n1", 0, 3));
  EXPECT_TRUE(submitted.ok() || submitted.code() == absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(import.Commit().status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace perfcast::db
