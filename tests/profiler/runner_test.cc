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

using ::testing::DoubleEq;
using ::testing::HasSubstr;
using ::testing::Optional;

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
  node.measured.dispatch_ops_per_s = 1000;
  return node;
}

// Returns blocks of 2 ms (pass 0) or `second_pass_ms` (later passes); throws
// for m == 13, reports out of memory for m == 17 and, from the second
// pass, for m == 23, like a device would.
class FakeMeasurer : public Measurer {
 public:
  absl::StatusOr<Measurement> Measure(const models::WorkloadSpec& spec, const TimingPolicy& timing,
                                      int pass) override {
    ++calls;
    order.push_back(spec.params.at("m"));
    if (spec.params.at("m") == 13) throw std::runtime_error("kernel exploded\nbacktrace...");
    if (spec.params.at("m") == 17) return absl::ResourceExhaustedError("out of memory");
    if (spec.params.at("m") == 23 && pass > 0) return absl::ResourceExhaustedError("out of memory");
    const double ms = pass == 0 ? 2 : second_pass_ms;
    Measurement m;
    const int blocks = RepeatsInPass(timing.repeats, timing.passes, pass);
    m.block_ms.assign(blocks, ms);
    m.steps = 10 * blocks;
    m.profile.iteration = {.count = m.steps, .mean_ms = ms, .median_ms = ms, .p95_ms = ms,
                           .stddev_ms = 0, .min_ms = ms, .max_ms = ms};
    m.profile.throughput_per_s = 1000 / ms;
    m.profile.repeats = blocks;
    if (pass == 0) m.profile.phases.forward_ms = ms / 2;
    m.gpu.board_power_w = pass == 0 ? 300 : 500;
    m.gpu.temperature_c = 40 + pass;
    m.gpu.timed_s = pass == 0 ? 3 : 1;
    if (probe_dispatch) {
      // The host as the harness probed it right before each block: m's own.
      m.dispatch_ops_per_s.assign(blocks, static_cast<double>(spec.params.at("m")) * 10);
    }
    return m;
  }
  absl::StatusOr<models::MeasuredRates> MeasureHost() override {
    models::MeasuredRates rates;
    rates.dispatch_ops_per_s = host_dispatch;
    return rates;
  }
  int calls = 0;
  std::vector<int64_t> order;
  double second_pass_ms = 2;
  double host_dispatch = 1000;
  bool probe_dispatch = false;  // report per-block host probes
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
  EXPECT_EQ(summary->partial, 0);
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
  // Written as their second pass (in reverse order) finished.
  EXPECT_EQ(keys, (std::vector<std::string>{Gemm(19).Key(), Gemm(11).Key()}));
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
  EXPECT_EQ(summary->partial, 3);  // the first pass only
  EXPECT_EQ(summary->not_run, 7);
  EXPECT_EQ(measurer.calls, 3);
  EXPECT_EQ(*store_->CountProfiles({}), 3);
  ASSERT_TRUE(store_
                  ->ScanProfiles({}, [](const models::Profile& p) {
                    EXPECT_EQ(p.repeats, 3);  // pass 1's share of 5
                    return true;
                  })
                  .ok());
}

TEST_F(RunnerTest, PassesRunInAlternatingOrderAndPoolIntoOneProfile) {
  const std::vector<models::WorkloadSpec> specs = {Gemm(11), Gemm(19), Gemm(29)};
  FakeMeasurer measurer;
  measurer.second_pass_ms = 2.02;  // within the drift tolerance
  TimingPolicy timing;
  timing.repeats = 5;
  timing.passes = 2;
  std::ostringstream progress;
  RunOptions options;
  options.progress = &progress;
  absl::StatusOr<RunSummary> summary =
      RunWorkloads(specs, timing, TestNode(), measurer, *store_, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(measurer.order, (std::vector<int64_t>{11, 19, 29, 29, 19, 11}));
  // The first pass is reported apart; "[i/N]" lines only once stored, in
  // the order the second pass stored them.
  EXPECT_THAT(progress.str(), HasSubstr("  pass 1/2 " + Gemm(11).Key() + ": 2.000 ms"));
  EXPECT_THAT(progress.str(), HasSubstr("[1/3] " + Gemm(29).Key() + ": 2.000 ms"));
  EXPECT_THAT(progress.str(), HasSubstr("[3/3] " + Gemm(11).Key()));
  EXPECT_EQ(summary->measured, 3);
  EXPECT_EQ(summary->partial, 0);
  EXPECT_TRUE(summary->notes.empty()) << summary->notes[0];
  int seen = 0;
  ASSERT_TRUE(store_
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    ++seen;
                    EXPECT_EQ(p.method_version, models::kCurrentMethodVersion);
                    EXPECT_EQ(p.repeats, 5);
                    EXPECT_EQ(p.iteration.count, 50);
                    EXPECT_DOUBLE_EQ(p.iteration.median_ms, 2);  // 3 blocks of 2, 2 of 2.02
                    EXPECT_DOUBLE_EQ(p.iteration.max_ms, 2.02);
                    EXPECT_GT(p.repeat_cv.value_or(0), 0);
                    EXPECT_THAT(p.phases.forward_ms, Optional(DoubleEq(1)));
                    // Weighted by the passes' timed seconds: (3 * 300 + 1 * 500) / 4.
                    EXPECT_THAT(p.conditions.board_power_w, Optional(DoubleEq(350)));
                    EXPECT_THAT(p.conditions.gpu_temperature_c, Optional(DoubleEq(41)));
                    EXPECT_THAT(p.conditions.dispatch_ops_per_s, Optional(DoubleEq(1000)));
                    return true;
                  })
                  .ok());
  EXPECT_EQ(seen, 3);
}

TEST_F(RunnerTest, OutOfMemoryInTheSecondPassKeepsTheFirst) {
  const std::vector<models::WorkloadSpec> specs = {Gemm(11), Gemm(23)};
  FakeMeasurer measurer;
  absl::StatusOr<RunSummary> summary =
      RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, {});
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->measured, 2);
  EXPECT_EQ(summary->partial, 1);
  EXPECT_EQ(summary->skipped, 0);
  ASSERT_EQ(summary->notes.size(), 1u);
  EXPECT_THAT(summary->notes[0], HasSubstr("out of memory"));
  EXPECT_THAT(summary->notes[0], HasSubstr(Gemm(23).Key()));
}

TEST_F(RunnerTest, AMachineThatSlowsDownIsNoted) {
  const std::vector<models::WorkloadSpec> specs = {Gemm(11), Gemm(19)};
  FakeMeasurer measurer;
  measurer.second_pass_ms = 2.5;  // 25% slower in the second pass
  measurer.host_dispatch = 700;   // and the host 30% slower than at the start
  absl::StatusOr<RunSummary> summary =
      RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, {});
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_EQ(summary->notes.size(), 2u);
  EXPECT_THAT(summary->notes[0], HasSubstr("25.0% slower in pass 2"));
  EXPECT_THAT(summary->notes[1], HasSubstr("dispatch rate changed from 1000"));
  EXPECT_THAT(summary->end_host.dispatch_ops_per_s, Optional(DoubleEq(700)));
  // The node keeps the means of the run's start and end.
  absl::StatusOr<models::Node> node = store_->GetNode("test-node");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_THAT(node->measured.dispatch_ops_per_s, Optional(DoubleEq(850)));
  // Profiles carry the host as known when they were written: the start and
  // the re-measurement between the passes.
  ASSERT_TRUE(store_
                  ->ScanProfiles({}, [](const models::Profile& p) {
                    EXPECT_THAT(p.conditions.dispatch_ops_per_s, Optional(DoubleEq(850)));
                    EXPECT_EQ(p.repeats, 5);
                    return true;
                  })
                  .ok());
}

TEST(PoolPassesTest, RescalesRatesToThePooledMedian) {
  Measurement first, second;
  first.block_ms = {1, 1, 1};
  first.steps = 30;
  first.profile.iteration.median_ms = 1;
  first.profile.throughput_per_s = 64000;
  first.profile.epoch_s = 2;
  first.profile.peak_memory_bytes = 10;
  second.block_ms = {3, 3, 3, 3};
  second.steps = 12;
  second.profile.iteration.median_ms = 3;
  second.profile.peak_memory_bytes = 20;
  const Measurement passes[] = {first, second};
  const models::Profile pooled = PoolPasses(passes);
  EXPECT_EQ(pooled.repeats, 7);
  EXPECT_EQ(pooled.iteration.count, 42);
  EXPECT_DOUBLE_EQ(pooled.iteration.median_ms, 3);
  EXPECT_DOUBLE_EQ(*pooled.throughput_per_s, 64000.0 / 3);
  EXPECT_DOUBLE_EQ(*pooled.epoch_s, 6);
  EXPECT_DOUBLE_EQ(*pooled.peak_memory_bytes, 20);
  EXPECT_FALSE(pooled.conditions.board_power_w.has_value());
}

TEST(PoolPassesTest, WeighsTheGpuStateByTimedSeconds) {
  Measurement first, second;
  first.block_ms = {1};
  first.gpu = {.board_power_w = 300, .sm_clock_mhz = 1900, .temperature_c = 40, .timed_s = 3};
  second.block_ms = {1};
  second.gpu = {.board_power_w = 500, .sm_clock_mhz = 1500, .temperature_c = 50, .timed_s = 1};
  const Measurement passes[] = {first, second};
  const models::Profile pooled = PoolPasses(passes);
  EXPECT_THAT(pooled.conditions.board_power_w, Optional(DoubleEq(350)));
  EXPECT_THAT(pooled.conditions.sm_clock_mhz, Optional(DoubleEq(1800)));
  EXPECT_THAT(pooled.conditions.gpu_temperature_c, Optional(DoubleEq(50)));  // the last
}

TEST_F(RunnerTest, EachProfileKeepsTheHostItsOwnBlocksRanUnder) {
  const std::vector<models::WorkloadSpec> specs = {Gemm(11), Gemm(19)};
  FakeMeasurer measurer;
  measurer.host_dispatch = 700;
  measurer.probe_dispatch = true;
  ASSERT_TRUE(RunWorkloads(specs, TimingPolicy{}, TestNode(), measurer, *store_, {}).ok());
  int seen = 0;
  ASSERT_TRUE(store_
                  ->ScanProfiles({}, [&](const models::Profile& p) {
                    ++seen;
                    // Not the run's 850: the probes before this configuration's blocks.
                    EXPECT_THAT(p.conditions.dispatch_ops_per_s,
                                Optional(DoubleEq(10.0 * p.workload.params.at("m"))));
                    return true;
                  })
                  .ok());
  EXPECT_EQ(seen, 2);
}

TEST(PoolPassesTest, TheDispatchRateIsTheMedianOfTheConfigurationsProbes) {
  Measurement first, second, third;
  first.block_ms = {1, 1};
  first.dispatch_ops_per_s = {100, 900};
  second.block_ms = {1};
  second.dispatch_ops_per_s = {300};
  third.block_ms = {1};  // a pass without probes adds none
  const Measurement passes[] = {first, second, third};
  EXPECT_THAT(PoolPasses(passes).conditions.dispatch_ops_per_s, Optional(DoubleEq(300)));
  const Measurement unprobed[] = {third};
  EXPECT_FALSE(PoolPasses(unprobed).conditions.dispatch_ops_per_s.has_value());
}

TEST(SetHostConditionsTest, KeepsADispatchRateTheProfileAlreadyHas) {
  models::MeasuredRates start;
  start.dispatch_ops_per_s = 1000;
  start.launch_latency_us = 2;
  const models::MeasuredRates samples[] = {start};
  models::RunConditions conditions;
  conditions.dispatch_ops_per_s = 640;
  SetHostConditions(samples, conditions);
  EXPECT_THAT(conditions.dispatch_ops_per_s, Optional(DoubleEq(640)));
  EXPECT_THAT(conditions.launch_latency_us, Optional(DoubleEq(2)));
}

TEST(SetHostConditionsTest, MeansOfTheSamplesThatHaveEachFeature) {
  models::MeasuredRates start, middle;
  start.dispatch_ops_per_s = 1000;
  start.h2d_pinned_gbs = 50;
  middle.dispatch_ops_per_s = 700;
  const models::MeasuredRates samples[] = {start, middle};
  models::RunConditions conditions;
  SetHostConditions(samples, conditions);
  EXPECT_THAT(conditions.dispatch_ops_per_s, Optional(DoubleEq(850)));
  EXPECT_THAT(conditions.h2d_pinned_gbs, Optional(DoubleEq(50)));
  EXPECT_FALSE(conditions.cpu_single_thread_score.has_value());
}

// The Python probe runs once, at the start: every profile of the run
// carries it; a run without it carries none.
TEST(SetHostConditionsTest, ThePythonProbeOfTheStartGoesWithEveryProfile) {
  models::MeasuredRates start, middle;
  start.python_op_us = 8.5;
  start.torchscript_op_us = 5.25;
  middle.dispatch_ops_per_s = 700;
  const models::MeasuredRates samples[] = {start, middle};
  models::RunConditions conditions;
  SetHostConditions(samples, conditions);
  EXPECT_THAT(conditions.python_op_us, Optional(DoubleEq(8.5)));
  EXPECT_THAT(conditions.torchscript_op_us, Optional(DoubleEq(5.25)));
  models::RunConditions unprobed;
  SetHostConditions(absl::MakeConstSpan(samples).subspan(1), unprobed);
  EXPECT_FALSE(unprobed.python_op_us.has_value());
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
