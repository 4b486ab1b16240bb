// The reproducibility benchmark on synthetic runs whose differences are
// known by construction.
#include "client/profile_compare.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace perfcast::client {
namespace {

models::Profile Config(const std::string& node, const std::string& family, int64_t batch,
                    double median_ms) {
  models::Profile p;
  p.node_name = node;
  p.workload.family = family;
  p.workload.batch_size = batch;
  p.iteration = {.count = 10, .mean_ms = median_ms, .median_ms = median_ms,
                 .p95_ms = median_ms, .stddev_ms = 0, .min_ms = median_ms, .max_ms = median_ms};
  return p;
}

TEST(CompareRunsTest, ReportsMedianAndP90OfRelativeDifferencesPerFamily) {
  std::vector<models::Profile> a, b;
  // cnn: ten configurations b slower by 1%, 2%, ..., 10%.
  for (int i = 1; i <= 10; ++i) {
    a.push_back(Config("h200", "cnn", i, 10.0));
    b.push_back(Config("h200-b", "cnn", i, 10.0 * (1 + 0.01 * i)));
  }
  // lstm: two configurations, 4% faster and 4% slower.
  a.push_back(Config("h200", "lstm", 1, 5.0));
  b.push_back(Config("h200-b", "lstm", 1, 4.8));
  a.push_back(Config("h200", "lstm", 2, 5.0));
  b.push_back(Config("h200-b", "lstm", 2, 5.2));
  auto report = CompareRuns(a, b, {.min_ms = 1});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->families.size(), 2u);
  const DifferenceStats& cnn = report->families[0];
  EXPECT_EQ(cnn.group, "cnn");
  EXPECT_EQ(cnn.n, 10);
  EXPECT_NEAR(cnn.median_abs, 0.055, 1e-9);  // between 5% and 6%
  EXPECT_NEAR(cnn.p90_abs, 0.091, 1e-9);     // 9% + 0.1 * (10% - 9%)
  EXPECT_NEAR(cnn.median_signed, 0.055, 1e-9);
  const DifferenceStats& lstm = report->families[1];
  EXPECT_EQ(lstm.n, 2);
  EXPECT_NEAR(lstm.median_abs, 0.04, 1e-9);
  EXPECT_NEAR(lstm.median_signed, 0.0, 1e-9);  // the signs cancel
  EXPECT_EQ(report->overall.n, 12);
  EXPECT_EQ(report->overall.group, "all");
}

TEST(CompareRunsTest, LeavesOutShortStepsAndCountsUnmatchedKeys) {
  std::vector<models::Profile> a = {Config("x", "cnn", 1, 0.5), Config("x", "cnn", 2, 2.0),
                                    Config("x", "cnn", 3, 2.0)};
  std::vector<models::Profile> b = {Config("y", "cnn", 1, 0.9), Config("y", "cnn", 2, 2.2),
                                    Config("y", "cnn", 4, 2.0), Config("y", "cnn", 5, 2.0)};
  auto report = CompareRuns(a, b, {.min_ms = 1});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->overall.n, 1);
  EXPECT_NEAR(report->overall.median_abs, 0.1, 1e-9);
  EXPECT_EQ(report->below_min, 1);
  EXPECT_EQ(report->only_in_a, 1);
  EXPECT_EQ(report->only_in_b, 2);
  // With no threshold the short configuration counts too: 0.5 -> 0.9 is +80%.
  report = CompareRuns(a, b, {.min_ms = 0});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->overall.n, 2);
  EXPECT_NEAR(report->overall.p90_abs, 0.1 + 0.9 * 0.7, 1e-9);
}

TEST(CompareRunsTest, RepeatedKeysCountWithTheirMedian) {
  std::vector<models::Profile> a = {Config("x", "cnn", 1, 10), Config("x", "cnn", 1, 11),
                                    Config("x", "cnn", 1, 30)};
  std::vector<models::Profile> b = {Config("y", "cnn", 1, 12.1)};
  auto report = CompareRuns(a, b, {});
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->overall.n, 1);
  EXPECT_NEAR(report->overall.median_signed, 0.1, 1e-9);  // against 11 ms
}

TEST(CompareRunsTest, RefusesNothingToCompareAndBadThresholds) {
  std::vector<models::Profile> a = {Config("x", "cnn", 1, 10)};
  std::vector<models::Profile> b = {Config("y", "lstm", 1, 10)};
  EXPECT_EQ(CompareRuns(a, b, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompareRuns(a, a, {.min_ms = -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompareRuns(a, a, {.min_ms = NAN}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompareRuns(a, a, {.min_ms = 20}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompareRuns(a, a, {.host_tolerance = -0.1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CompareRuns(a, a, {.host_tolerance = INFINITY}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

models::Profile OnHost(models::Profile p, double dispatch_ops_per_s) {
  p.conditions.dispatch_ops_per_s = dispatch_ops_per_s;
  return p;
}

TEST(CompareRunsTest, HostMatchedGroupHoldsTheConfigurationsWhoseHostAgreed) {
  std::vector<models::Profile> a, b;
  // Three configurations measured on the same host state: 1%, 2%, 3% apart.
  for (int i = 1; i <= 3; ++i) {
    a.push_back(OnHost(Config("x", "lstm", i, 10), 2e5));
    b.push_back(OnHost(Config("y", "lstm", i, 10 * (1 + 0.01 * i)), 2e5 * (1 + 0.01 * i)));
  }
  // Two whose host was 30% slower in the second run: 30% slower steps.
  for (int i = 4; i <= 5; ++i) {
    a.push_back(OnHost(Config("x", "lstm", i, 10), 2e5));
    b.push_back(OnHost(Config("y", "lstm", i, 13), 1.4e5));
  }
  // One without a host probe on one side: in "all" only.
  a.push_back(Config("x", "lstm", 6, 10));
  b.push_back(OnHost(Config("y", "lstm", 6, 10.5), 2e5));
  auto report = CompareRuns(a, b, {.min_ms = 1, .host_tolerance = 0.05});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->overall.n, 6);
  EXPECT_NEAR(report->overall.median_abs, 0.04, 1e-9);  // between 3% and 5%
  EXPECT_EQ(report->host_matched.group, "host-matched");
  EXPECT_EQ(report->host_matched.n, 3);
  EXPECT_NEAR(report->host_matched.median_abs, 0.02, 1e-9);
  // A tighter tolerance keeps the 1% and 2% hosts only.
  auto tight = CompareRuns(a, b, {.min_ms = 1, .host_tolerance = 0.025});
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight->host_matched.n, 2);
  // Without probes there is no host-matched group.
  auto none = CompareRuns({Config("x", "cnn", 1, 10)}, {Config("y", "cnn", 1, 11)}, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->host_matched.n, 0);
}

TEST(CompareRunsTest, JsonCarriesEveryFigureInPercent) {
  std::vector<models::Profile> a = {Config("x", "cnn", 1, 10), Config("x", "cnn", 2, 10)};
  std::vector<models::Profile> b = {Config("y", "cnn", 1, 10.2), Config("y", "cnn", 2, 9.9)};
  CompareOptions options{.min_ms = 1};
  auto report = CompareRuns(a, b, options);
  ASSERT_TRUE(report.ok());
  nlohmann::json json = nlohmann::json::parse(CompareReportJson(*report, options));
  EXPECT_EQ(json["overall"]["n"], 2);
  EXPECT_NEAR(json["overall"]["median_abs_pct"].get<double>(), 1.5, 1e-9);
  EXPECT_NEAR(json["overall"]["median_signed_pct"].get<double>(), 0.5, 1e-9);
  ASSERT_EQ(json["families"].size(), 1u);
  EXPECT_EQ(json["families"][0]["group"], "cnn");
  EXPECT_EQ(json["min_ms"], 1.0);
  EXPECT_EQ(json["host_tolerance"], 0.05);
  EXPECT_EQ(json["host_matched"]["n"], 0);
}

}  // namespace
}  // namespace perfcast::client
