#include "models/profile.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>

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

TEST(ValidateProfileTest, ChecksMethodVersionAndRunConditions) {
  Profile p = ValidProfile();
  p.method_version = kCurrentMethodVersion;
  p.conditions = {.dispatch_ops_per_s = 1.5e5, .launch_latency_us = 2.5,
                  .cpu_single_thread_score = 1.2, .h2d_pinned_gbs = 25, .h2d_pageable_gbs = 12,
                  .board_power_w = 450, .sm_clock_mhz = 1980, .gpu_temperature_c = 61};
  EXPECT_TRUE(ValidateProfile(p).ok()) << ValidateProfile(p);
  for (int bad : {0, -1, kCurrentMethodVersion + 1}) {
    Profile q = p;
    q.method_version = bad;
    EXPECT_EQ(ValidateProfile(q).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (std::optional<double> RunConditions::*field :
       {&RunConditions::dispatch_ops_per_s, &RunConditions::launch_latency_us,
        &RunConditions::cpu_single_thread_score, &RunConditions::h2d_pinned_gbs,
        &RunConditions::h2d_pageable_gbs, &RunConditions::board_power_w,
        &RunConditions::sm_clock_mhz, &RunConditions::python_op_us,
        &RunConditions::torchscript_op_us}) {
    for (double bad : {0.0, -1.0, nan, inf, 1e19}) {
      Profile q = p;
      q.conditions.*field = bad;
      absl::Status s = ValidateProfile(q);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    }
  }
  for (double bad : {-300.0, 1001.0, nan, -inf}) {
    Profile q = p;
    q.conditions.gpu_temperature_c = bad;
    EXPECT_EQ(ValidateProfile(q).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  p.conditions.gpu_temperature_c = -5;  // a chip in the cold is still a reading
  EXPECT_TRUE(ValidateProfile(p).ok());
}

// Profiles stored before the method version and run conditions existed keep
// their hash: the value below is what every earlier build computed for
// ValidProfile(), so re-importing old data finds the same rows.
TEST(ContentHashTest, DefaultsOfLaterFieldsKeepTheOldHash) {
  EXPECT_EQ(ComputeContentHash(ValidProfile()), "81c8be8882dd955972efe9c1dcd1935b");
}

TEST(ContentHashTest, MethodVersionAndEachConditionChangeTheHash) {
  const Profile base = ValidProfile();
  const std::string base_hash = ComputeContentHash(base);
  Profile p = base;
  p.method_version = 2;
  EXPECT_NE(ComputeContentHash(p), base_hash);
  std::set<std::string> hashes = {base_hash};
  for (std::optional<double> RunConditions::*field :
       {&RunConditions::dispatch_ops_per_s, &RunConditions::launch_latency_us,
        &RunConditions::cpu_single_thread_score, &RunConditions::h2d_pinned_gbs,
        &RunConditions::h2d_pageable_gbs, &RunConditions::board_power_w,
        &RunConditions::sm_clock_mhz, &RunConditions::gpu_temperature_c,
        &RunConditions::python_op_us, &RunConditions::torchscript_op_us}) {
    Profile q = base;
    q.conditions.*field = 7.0;  // the same value in each field hashes apart
    EXPECT_TRUE(hashes.insert(ComputeContentHash(q)).second);
  }
}

}  // namespace
}  // namespace perfcast::models

namespace perfcast::models {
namespace {

// Up to method 4 the agent's fp32 used TF32 nowhere: those profiles are
// strict-fp32 under today's names; imported runs and newer ones are as stored.
TEST(MeasuredWorkloadTest, OldAgentFp32IsStrictFp32) {
  Profile p = ValidProfile();
  p.agent_version = "perfcast-agent 0.1.0";
  p.workload.precision = Precision::kFp32;
  for (int version = 1; version <= 4; ++version) {
    p.method_version = version;
    EXPECT_EQ(MeasuredWorkload(p).precision, Precision::kStrictFp32) << version;
  }
  p.method_version = 5;
  EXPECT_EQ(MeasuredWorkload(p).precision, Precision::kFp32);
  p.method_version = 4;
  p.workload.precision = Precision::kTf32;
  EXPECT_EQ(MeasuredWorkload(p).precision, Precision::kTf32);
  p.workload.precision = Precision::kFp32;
  p.agent_version = "csv-import";
  EXPECT_EQ(MeasuredWorkload(p).precision, Precision::kFp32);
}

// A profile that names its loop is that loop's; one that does not is the
// agent's C++ loop when an agent measured it, else a Python loop's. The name
// joins the hash only when set, and nothing but the two names is valid.
TEST(MeasuredLoopTest, TheNamedLoopElseTheAgentsElsePython) {
  Profile p = ValidProfile();
  const std::string unnamed_hash = ComputeContentHash(p);
  EXPECT_EQ(MeasuredLoop(p), Loop::kPython);
  p.loop = "cpp";
  EXPECT_EQ(MeasuredLoop(p), Loop::kCpp);
  EXPECT_TRUE(ValidateProfile(p).ok());
  EXPECT_NE(ComputeContentHash(p), unnamed_hash);
  p.agent_version = "perfcast-agent 0.1.0";
  p.loop.clear();
  EXPECT_EQ(MeasuredLoop(p), Loop::kCpp);
  p.loop = "python";
  EXPECT_EQ(MeasuredLoop(p), Loop::kPython);
  EXPECT_TRUE(ValidateProfile(p).ok());
  for (const char* bad : {"java", "Python", "c++", " cpp"}) {
    p.loop = bad;
    const absl::Status s = ValidateProfile(p);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("loop"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace perfcast::models
