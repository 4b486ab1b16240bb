#include "base/quantile.h"

#include <vector>

#include <gtest/gtest.h>

namespace perfcast {
namespace {

TEST(QuantileTest, InterpolatesBetweenOrderStatistics) {
  std::vector<double> samples;
  for (int i = 1; i <= 20; ++i) samples.push_back(i);
  EXPECT_NEAR(Quantile(samples, 0.95), 19.05, 1e-12);
  EXPECT_DOUBLE_EQ(Quantile(samples, 0.5), 10.5);
  EXPECT_DOUBLE_EQ(Quantile(samples, 0), 1);
  EXPECT_DOUBLE_EQ(Quantile(samples, 1), 20);
}

TEST(QuantileTest, SortsACopy) {
  const std::vector<double> values = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Quantile(values, 0.5), 2.5);
  // Position 0.1 * 3 = 0.3 between 1 and 2.
  EXPECT_NEAR(Quantile(values, 0.1), 1.3, 1e-12);
  EXPECT_EQ(values, (std::vector<double>{4, 1, 3, 2}));
}

TEST(QuantileTest, EmptyOneAndClamped) {
  EXPECT_EQ(Quantile({}, 0.5), 0);
  EXPECT_EQ(SortedQuantile({}, 0.5), 0);
  EXPECT_EQ(Quantile(std::vector<double>{7}, 0.9), 7);
  const std::vector<double> values = {-2, 5};
  EXPECT_EQ(Quantile(values, -1), -2);
  EXPECT_EQ(Quantile(values, 2), 5);
}

TEST(QuantileTest, SortedInputNeedsNoCopy) {
  const std::vector<double> sorted = {-0.5, -0.1, 0, 0.2, 0.9};
  for (double q : {0.0, 0.1, 0.25, 0.5, 0.9, 1.0}) {
    EXPECT_EQ(SortedQuantile(sorted, q), Quantile(sorted, q)) << q;
  }
  EXPECT_NEAR(SortedQuantile(sorted, 0.9), 0.9 * 0.6 + 0.2 * 0.4 + 0.0, 1e-12);
}

}  // namespace
}  // namespace perfcast
