#include "client/suggest.h"

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

TEST(EditDistanceTest, CountsASwapOfNeighboursAsOneEdit) {
  EXPECT_EQ(EditDistance("list", "list"), 0u);
  EXPECT_EQ(EditDistance("lst", "list"), 1u);
  EXPECT_EQ(EditDistance("lsit", "list"), 1u);
  EXPECT_EQ(EditDistance("LIST", "list"), 0u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
}

TEST(ClosestNameTest, SuggestsOnlyNamesNearEnough) {
  const std::vector<std::string> commands = {"get", "list", "register", "remove"};
  EXPECT_EQ(ClosestName("lst", commands), "list");
  EXPECT_EQ(ClosestName("regsiter", commands), "register");
  EXPECT_EQ(ClosestName("xyz", commands), std::nullopt);
  EXPECT_EQ(DidYouMean("lst", commands), " (did you mean 'list'?)");
  EXPECT_EQ(DidYouMean("frobnicate", commands), "");
}

TEST(ClosestNameTest, GpuNamesMatchByTheirLeadingParts) {
  const std::vector<std::string> gpus = {"H100-SXM5-80GB", "H200-SXM-141GB", "L40S-48GB"};
  EXPECT_EQ(ClosestName("H2000", gpus), std::nullopt);
  EXPECT_EQ(ClosestName("H2000", gpus, /*dash_prefixes=*/true), "H200-SXM-141GB");
  EXPECT_EQ(ClosestName("L40", gpus, /*dash_prefixes=*/true), "L40S-48GB");
}

}  // namespace
}  // namespace perfcast::client
