#include "predictor/job.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace perfcast::predictor {
namespace {

Prediction TwentyMs() {
  Prediction p;
  p.iteration_ms = 20;
  p.lo_ms = 18;
  p.hi_ms = 25;
  return p;
}

TEST(Job, SamplesAndEpochsRoundUpPerEpochAndAddOverhead) {
  absl::StatusOr<JobEstimate> job =
      EstimateJob(TwentyMs(), {.samples = 1001, .epochs = 3, .per_epoch_overhead_s = 2.0}, 100);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->iterations, 33);
  EXPECT_DOUBLE_EQ(job->seconds, 33 * 0.020 + 6.0);
  EXPECT_DOUBLE_EQ(job->lo_seconds, 33 * 0.018 + 6.0);
  EXPECT_DOUBLE_EQ(job->hi_seconds, 33 * 0.025 + 6.0);
}

TEST(Job, IterationsAreTakenAsGiven) {
  absl::StatusOr<JobEstimate> job = EstimateJob(TwentyMs(), {.iterations = 1000}, 64);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->iterations, 1000);
  EXPECT_DOUBLE_EQ(job->seconds, 20.0);
}

TEST(Job, BadSizesAreInvalidArguments) {
  const Prediction p = TwentyMs();
  for (const JobSize& bad : {JobSize{}, JobSize{.samples = 0, .epochs = 3},
                             JobSize{.samples = 10, .epochs = 0},
                             JobSize{.samples = 10, .epochs = 1, .iterations = 5},
                             JobSize{.iterations = -1},
                             JobSize{.iterations = 5, .per_epoch_overhead_s = -1}}) {
    EXPECT_EQ(EstimateJob(p, bad, 100).status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(EstimateJob(p, {.samples = 10, .epochs = 1}, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A job of int64-max iterations once answered 45.6 trillion hours.
TEST(Job, AbsurdIterationCountsAreOutOfRange) {
  const Prediction p = TwentyMs();
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(EstimateJob(p, {.iterations = max}, 64).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(EstimateJob(p, {.iterations = kMaxIterations + 1}, 64).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(EstimateJob(p, {.iterations = kMaxIterations}, 64).ok());
  EXPECT_EQ(EstimateJob(p, {.samples = max, .epochs = 2}, 1).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(EstimateJob(p, {.samples = kMaxIterations, .epochs = 2}, 1).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(Job, NonFiniteTimesAreFailedPreconditions) {
  Prediction p = TwentyMs();
  p.hi_ms = std::numeric_limits<double>::infinity();
  EXPECT_EQ(EstimateJob(p, {.iterations = 10}, 1).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace perfcast::predictor
