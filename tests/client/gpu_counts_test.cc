#include "client/gpu_counts.h"

#include <vector>

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

std::vector<int> Counts(const v1::RecommendRequest& request) {
  return {request.gpu_counts().begin(), request.gpu_counts().end()};
}

// A server that predates gpu_count_spec reads gpu_counts only: one count must
// reach it there, or it searches one GPU and answers the wrong question.
TEST(GpuCounts, OneCountIsAlsoInTheFieldOldServersRead) {
  v1::RecommendRequest request;
  SetGpuCounts({"8"}, &request);
  EXPECT_EQ(request.gpu_count_spec(), "8");
  EXPECT_EQ(Counts(request), (std::vector<int>{8}));
}

TEST(GpuCounts, RangesAndListsNameEveryCount) {
  v1::RecommendRequest request;
  SetGpuCounts({"1-3", "8,16"}, &request);
  EXPECT_EQ(request.gpu_count_spec(), "1-3,8,16");
  EXPECT_EQ(Counts(request), (std::vector<int>{1, 2, 3, 8, 16}));
}

TEST(GpuCounts, MalformedTextIsLeftToTheServer) {
  v1::RecommendRequest request;
  request.add_gpu_counts(4);
  SetGpuCounts({"eight"}, &request);
  EXPECT_EQ(request.gpu_count_spec(), "eight");
  EXPECT_TRUE(Counts(request).empty());
}

TEST(GpuCounts, NoneGivenSetsNothing) {
  v1::RecommendRequest request;
  SetGpuCounts({}, &request);
  EXPECT_EQ(request.gpu_count_spec(), "");
  EXPECT_TRUE(Counts(request).empty());
}

}  // namespace
}  // namespace perfcast::client
