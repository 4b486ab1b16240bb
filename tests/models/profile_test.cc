#include "models/profile.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace perfcast::models {
namespace {

Profile ValidProfile() {
  Profile p;
  p.node_name = "n1";
  p.workload.family = "cnn";
  p.workload.params = {{"layers", 3}};
  p.workload.batch_size = 32;
  p.iteration = {.count = 10, .mean_ms = 2.0, .median_ms = 1.9, .p95_ms = 2.5,
                 .stddev_ms = 0.2, .min_ms = 1.7, .max_ms = 2.6};
  p.measured_at_us = 1'700'000'000'000'000;
  p.agent_version = "test";
  return p;
}

TEST(ValidateProfileTest, AcceptsValidProfile) {
  EXPECT_TRUE(ValidateProfile(ValidProfile()).ok());
}

TEST(ValidateProfileTest, RejectsBadTimes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double bad : {-1.0, nan, std::numeric_limits<double>::infinity()}) {
    Profile p = ValidProfile();
    p.iteration.mean_ms = bad;
    EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument) << bad;
    p = ValidProfile();
    p.phases.forward_ms = bad;
    EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  Profile p = ValidProfile();
  p.iteration.count = 0;
  EXPECT_FALSE(ValidateProfile(p).ok());
  p = ValidProfile();
  p.iteration.max_ms = 1.0;  // below the minimum
  EXPECT_FALSE(ValidateProfile(p).ok());
  p = ValidProfile();
  p.node_name.clear();
  EXPECT_FALSE(ValidateProfile(p).ok());
  p = ValidProfile();
  p.workload.batch_size = 0;
  EXPECT_FALSE(ValidateProfile(p).ok());
}

// Numeric hostility: absurd but finite times and huge texts are refused
// too, so they never reach a fit.
TEST(ValidateProfileTest, RejectsAbsurdTimesAndHugeTexts) {
  for (double bad : {1e13, 1e300, -std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::quiet_NaN()}) {
    Profile p = ValidProfile();
    p.iteration.max_ms = bad;
    EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  Profile p = ValidProfile();
  p.epoch_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument);
  p = ValidProfile();
  p.node_name = std::string(1 << 20, 'n');
  EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument);
  p = ValidProfile();
  p.agent_version = std::string(1 << 20, 'v');
  EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument);
  p = ValidProfile();
  p.workload.family = std::string(1 << 20, 'f');
  EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument);
  p = ValidProfile();
  p.repeats = 0;
  EXPECT_EQ(ValidateProfile(p).code(), absl::StatusCode::kInvalidArgument);
  // The limits leave real runs alone: an hour-long iteration is fine.
  p = ValidProfile();
  p.iteration.max_ms = 3.6e6;
  EXPECT_TRUE(ValidateProfile(p).ok()) << ValidateProfile(p);
}

TEST(ContentHashTest, SameRunSameHashDifferentRunDifferentHash) {
  Profile a = ValidProfile();
  Profile b = ValidProfile();
  b.id = 42;  // storage identity is not part of the run
  EXPECT_EQ(ComputeContentHash(a), ComputeContentHash(b));
  EXPECT_EQ(ComputeContentHash(a).size(), 32u);
  b.iteration.mean_ms = 2.0000001;
  EXPECT_NE(ComputeContentHash(a), ComputeContentHash(b));
  b = ValidProfile();
  b.phases.h2d_ms = 0.0;  // present-but-zero differs from absent
  EXPECT_NE(ComputeContentHash(a), ComputeContentHash(b));
  b = ValidProfile();
  b.node_name = "n2";
  EXPECT_NE(ComputeContentHash(a), ComputeContentHash(b));
}

}  // namespace
}  // namespace perfcast::models
