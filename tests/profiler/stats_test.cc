#include "profiler/stats.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::profiler {
namespace {

TEST(SummarizeTest, KnownSamples) {
  const std::vector<double> samples = {4, 1, 3, 2};
  const models::TimingStats s = Summarize(samples);
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 4);
  // Sample standard deviation (n - 1): sqrt(5 / 3).
  EXPECT_NEAR(s.stddev_ms, 1.2909944487, 1e-9);
  // Linear interpolation: position 0.95 * 3 = 2.85 between 3 and 4.
  EXPECT_NEAR(s.p95_ms, 3.85, 1e-12);
}

TEST(SummarizeTest, PercentileOfOneToTwenty) {
  std::vector<double> samples;
  for (int i = 1; i <= 20; ++i) samples.push_back(i);
  EXPECT_NEAR(Quantile(samples, 0.95), 19.05, 1e-12);
  EXPECT_DOUBLE_EQ(Quantile(samples, 0.5), 10.5);
  EXPECT_DOUBLE_EQ(Quantile(samples, 0), 1);
  EXPECT_DOUBLE_EQ(Quantile(samples, 1), 20);
}

TEST(SummarizeTest, OneSampleAndEmpty) {
  const models::TimingStats one = Summarize(std::vector<double>{7});
  EXPECT_EQ(one.count, 1);
  EXPECT_DOUBLE_EQ(one.mean_ms, 7);
  EXPECT_DOUBLE_EQ(one.median_ms, 7);
  EXPECT_DOUBLE_EQ(one.p95_ms, 7);
  EXPECT_DOUBLE_EQ(one.stddev_ms, 0);
  const models::TimingStats none = Summarize(std::vector<double>{});
  EXPECT_EQ(none.count, 0);
  EXPECT_DOUBLE_EQ(none.mean_ms, 0);
}

TEST(SummarizeTest, IdenticalSamplesStayConsistent) {
  const std::vector<double> samples(1000, 0.1);
  const models::TimingStats s = Summarize(samples);
  EXPECT_GE(s.mean_ms, s.min_ms);
  EXPECT_LE(s.mean_ms, s.max_ms);
  EXPECT_NEAR(s.stddev_ms, 0, 1e-12);
}

TEST(CoefficientOfVariationTest, KnownValues) {
  EXPECT_NEAR(CoefficientOfVariation(std::vector<double>{9, 10, 11}), 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation(std::vector<double>{5}), 0);
  EXPECT_DOUBLE_EQ(CoefficientOfVariation(std::vector<double>{0, 0}), 0);
}

TEST(MedianRelativeStandardErrorTest, ShrinksWithTheSquareRootOfTheSamples) {
  // {9, 11}: cv sqrt(2)/10; the median's error sqrt(pi/2) * cv / sqrt(2).
  EXPECT_NEAR(MedianRelativeStandardError(std::vector<double>{9, 11}), 0.1253314137, 1e-9);
  // Four times the samples of the same values: sd sqrt(8/7), over sqrt(8).
  const std::vector<double> eight = {9, 11, 9, 11, 9, 11, 9, 11};
  EXPECT_NEAR(MedianRelativeStandardError(eight),
              1.2533141373155 * std::sqrt(8.0 / 7.0) / 10 / std::sqrt(8.0), 1e-9);
  EXPECT_DOUBLE_EQ(MedianRelativeStandardError(std::vector<double>{5}), 0);
  EXPECT_DOUBLE_EQ(MedianRelativeStandardError(std::vector<double>{4, 4, 4}), 0);
}

}  // namespace
}  // namespace perfcast::profiler
