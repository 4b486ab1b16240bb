#include "profiler/runner.h"

#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "db/store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/profile.h"
#include "profiler/measurer.h"

namespace perfcast::profiler {
namespace {

using ::testing::HasSubstr;

models::WorkloadSpec Gemm(int64_t m) {
  models::WorkloadSpec spec;
  spec.kind = models::WorkloadKind::kOperation;
  spec.family = "gemm";
  spec.params = {{"m", m}};
  spec.phase = models::Phase::kInference;
  return *models::NormalizeSpec(spec);
}

models::Node TestNode() {
  models::Node node;
  node.name = "test-node";
  node.gpu_count = 0;
  node.gpu.model = "cpu-1t";
  node.gpu.architecture = "cpu";
  node.source = models::NodeSource::kAgent;
  return node;
}

// Returns a fixed profile; throws for m == 13 and reports out of memory for
// m == 17, like a device would.
class FakeMeasurer : public Measurer {
 public:
  absl::StatusOr<models::Profile> Measure(const models::WorkloadSpec& spec,
                                          const TimingPolicy& timing) override {
    ++calls;
    if (spec.params.at("m") == 13) throw std::runtime_error("kernel exploded\nbacktrace...");
    if (spec.params.at("m") == 17) return absl::ResourceExhaustedError("out of memory");
    models::Profile profile;
    profile.iteration = {.count = 3, .mean_ms = 2, .median_ms = 2, .p95_ms = 3,
                         .stddev_ms = 1, .min_ms = 1, .max_ms = 3};
    profile.repeats = timing.repeats;
    return profile;
  }
  int calls = 0;
};

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = absl::StrCat(::testing::TempDir(), "/runner_test_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                         ".sqlite");
    std::remove(path_.c_str());
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    store_.reset();
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }

  std::string path_;
  std::unique_ptr<db::Store> store_;
};

TEST_F(RunnerTest, FailingConfigurationsAreSkippedAndTheRestKept) {
  const std::vector<models::WorkloadSpec> specs = {Gemm(11), Gemm(13), Gemm(17), Gemm(19)};
  FakeMeasurer measurer;
  std::ostringstream progress;
  RunOptions options;
  options.progress = &progress;
  absl::StatusOr<RunSummary> summary =
      RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->planned, 4);
  EXPECT_EQ(summary->measured, 2);
  EXPECT_EQ(summary->skipped, 2);
  EXPECT_FALSE(summary->budget_exhausted);
  EXPECT_THAT(progress.str(), HasSubstr("[4/4]"));
  store_.reset();

  // What an importer sees: the node, two valid profiles, two skipped runs.
  absl::StatusOr<std::unique_ptr<db::Store>> reader = db::OpenStoreReadOnly(path_);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE((*reader)->GetNode("test-node").ok());
  std::vector<std::string> keys;
  ASSERT_TRUE((*reader)
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    EXPECT_TRUE(models::ValidateProfile(p).ok()) << models::ValidateProfile(p);
                    EXPECT_EQ(p.agent_version, kAgentVersion);
                    keys.push_back(p.workload.Key());
                    return true;
                  })
                  .ok());
  EXPECT_EQ(keys, (std::vector<std::string>{Gemm(11).Key(), Gemm(19).Key()}));
  absl::StatusOr<std::vector<db::SkippedRun>> skipped = (*reader)->ListSkipped();
  ASSERT_TRUE(skipped.ok());
  ASSERT_EQ(skipped->size(), 2u);
  EXPECT_EQ((*skipped)[0].workload_key, Gemm(13).Key());
  EXPECT_EQ((*skipped)[0].reason, "kernel exploded");  // first line only
  EXPECT_THAT((*skipped)[1].reason, HasSubstr("out of memory"));
}

TEST_F(RunnerTest, BudgetStopsCleanlyKeepingFinishedWork) {
  std::vector<models::WorkloadSpec> specs;
  for (int m = 1; m <= 10; ++m) specs.push_back(Gemm(m));
  FakeMeasurer measurer;
  // Each reading of the clock advances it by a minute: the budget of 3.5
  // minutes admits the configurations started before it ran out.
  absl::Time now = absl::UnixEpoch();
  RunOptions options;
  options.budget = absl::Minutes(3.5);
  options.now = [&now] {
    now += absl::Minutes(1);
    return now;
  };
  absl::StatusOr<RunSummary> summary =
      RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_TRUE(summary->budget_exhausted);
  EXPECT_EQ(summary->measured, 3);
  EXPECT_EQ(summary->not_run, 7);
  EXPECT_EQ(measurer.calls, 3);
  EXPECT_EQ(*store_->CountProfiles({}), 3);
}

TEST_F(RunnerTest, RerunningTheSameMeasurementsIsIdempotentPerHash) {
  const std::vector<models::WorkloadSpec> specs = {Gemm(11)};
  FakeMeasurer measurer;
  ASSERT_TRUE(RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, {}).ok());
  absl::StatusOr<RunSummary> again =
      RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, {});
  ASSERT_TRUE(again.ok()) << again.status();
  // A new measurement has a new timestamp, so it is a new profile.
  EXPECT_EQ(*store_->CountProfiles({}), 2);
}

}  // namespace
}  // namespace perfcast::profiler
