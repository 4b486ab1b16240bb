#include "client/job_cost.h"

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

absl::Time Day(int year, int month, int day) {
  return absl::FromCivil(absl::CivilDay(year, month, day), absl::UTCTimeZone());
}

TEST(CostOfJobTest, GpuHoursAtTheTablesRate) {
  const models::PriceTable& table = models::PriceTable::BuiltIn();
  const models::GpuPrice* h200 = table.Find("H200-SXM-141GB");
  ASSERT_NE(h200, nullptr);
  std::optional<JobCost> cost = CostOfJob(table, "H200-SXM-141GB", 8, 1800, 1500, 2400);
  ASSERT_TRUE(cost.has_value());
  EXPECT_DOUBLE_EQ(cost->usd, 8 * 0.5 * h200->usd_per_gpu_hour);
  EXPECT_LT(cost->usd_low, cost->usd);
  EXPECT_GT(cost->usd_high, cost->usd);
  EXPECT_EQ(cost->gpus, 8);
  EXPECT_FALSE(CostOfJob(table, "no-such-gpu", 1, 1800, 1500, 2400).has_value());
  EXPECT_FALSE(CostOfJob(table, "H200-SXM-141GB", 1, 0, 0, 0).has_value());
}

TEST(CostOfPredictionTest, TheLayoutsGpusArePaidFor) {
  v1::PredictResponse p;
  p.set_gpu_model("L4-24GB");
  p.set_job_seconds(3600);
  EXPECT_FALSE(CostOfPrediction(p).has_value()) << "no job size";
  p.set_iterations(100);
  ASSERT_TRUE(CostOfPrediction(p).has_value());
  EXPECT_EQ(CostOfPrediction(p)->gpus, 1);
  p.mutable_parallel()->set_gpus(4);
  EXPECT_EQ(CostOfPrediction(p)->gpus, 4);
  EXPECT_NE(CostText(*CostOfPrediction(p)).find("x 4 GPUs"), std::string::npos);
}

TEST(PriceIsStaleTest, SixMonthsFromTheDateOrTheMonthsFirstDay) {
  EXPECT_FALSE(PriceIsStale("2026-01", Day(2026, 6, 30)));
  EXPECT_TRUE(PriceIsStale("2026-01", Day(2026, 7, 15)));
  EXPECT_FALSE(PriceIsStale("2026-01-20", Day(2026, 7, 15)));
  EXPECT_FALSE(PriceIsStale("not a date", Day(2026, 7, 15)));
}

TEST(StalePriceWarningTest, NamesOneGpuOrCountsAndSpansTheDates) {
  const absl::Time now = Day(2026, 11, 1);
  models::GpuPrice fresh{.gpu = "L4-24GB", .as_of = "2026-10"};
  models::GpuPrice old{.gpu = "H200-SXM-141GB", .as_of = "2024-12"};
  models::GpuPrice older{.gpu = "T4-16GB", .as_of = "2024-06"};
  EXPECT_EQ(StalePriceWarning({fresh}, now), "");
  EXPECT_EQ(StalePriceWarning({fresh, old}, now),
            "prices older than six months (H200-SXM-141GB, as of 2024-12)");
  EXPECT_EQ(StalePriceWarning({old, older, old}, now),
            "prices older than six months (2 GPUs, as of 2024-06 to 2024-12)");
}

}  // namespace
}  // namespace perfcast::client
