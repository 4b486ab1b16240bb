#include "client/sweep.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

TEST(Sweep, ParsesAxesAndBuildsTheWholeGrid) {
  absl::StatusOr<std::vector<SweepAxis>> axes =
      ParseSweeps({"batch=16,32,64", "gpu=L4-24GB, H100-SXM5-80GB", "param.layers=2,4"});
  ASSERT_TRUE(axes.ok()) << axes.status();
  ASSERT_EQ(axes->size(), 3u);
  EXPECT_EQ((*axes)[1].values, (std::vector<std::string>{"L4-24GB", "H100-SXM5-80GB"}));
  const auto grid = SweepGrid(*axes);
  ASSERT_EQ(grid.size(), 12u);
  // The first axis varies slowest.
  EXPECT_EQ(grid[0][0].second, "16");
  EXPECT_EQ(grid[3][0].second, "16");
  EXPECT_EQ(grid[4][0].second, "32");
  EXPECT_EQ(grid[1][2].second, "4");

  PredictFlags base;
  base.family = "lstm";
  base.node = "n1";
  base.params = {"layers=1;hidden=64"};
  base.iterations = 100;
  base.job_given = true;
  absl::StatusOr<PredictFlags> f = ApplySweepPoint(base, grid[11]);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->batch, 64);
  EXPECT_EQ(f->gpu, "H100-SXM5-80GB");
  EXPECT_TRUE(f->node.empty());  // a swept GPU replaces the node
  v1::PredictRequest query;
  ASSERT_FALSE(BuildQuery(*f, &query).has_value());
  EXPECT_EQ(query.workload().params().at("layers"), 4);  // the swept value wins
  EXPECT_EQ(query.workload().params().at("hidden"), 64);
  EXPECT_EQ(query.catalog_gpu(), "H100-SXM5-80GB");
}

TEST(Sweep, LayoutKeysSetTheLayout) {
  absl::StatusOr<std::vector<SweepAxis>> axes =
      ParseSweeps({"data-parallel=2,4", "zero=0,3", "activation-checkpointing=true",
                   "framework=megatron"});
  ASSERT_TRUE(axes.ok()) << axes.status();
  const auto grid = SweepGrid(*axes);
  ASSERT_EQ(grid.size(), 4u);
  PredictFlags base;
  base.family = "lstm";
  base.gpu = "H100-SXM5-80GB";
  base.batch = 16;
  base.iterations = 1;
  base.batch_given = base.job_given = true;
  absl::StatusOr<PredictFlags> f = ApplySweepPoint(base, grid[3]);
  ASSERT_TRUE(f.ok()) << f.status();
  v1::PredictRequest query;
  ASSERT_FALSE(BuildQuery(*f, &query).has_value());
  EXPECT_EQ(query.parallel().data_parallel(), 4);
  EXPECT_EQ(query.parallel().zero(), 3);
  EXPECT_TRUE(query.parallel().activation_checkpointing());
  EXPECT_EQ(query.parallel().framework(), v1::FRAMEWORK_MEGATRON);
  absl::StatusOr<std::vector<SweepAxis>> bad = ParseSweeps({"activation-checkpointing=maybe"});
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(ApplySweepPoint(base, SweepGrid(*bad)[0]).ok());
  f->framework = "jax";
  EXPECT_TRUE(BuildQuery(*f, &query).has_value());
}

TEST(Sweep, BadSpecsAreUsageErrors) {
  for (const std::vector<std::string>& specs :
       std::vector<std::vector<std::string>>{{"batch"},
                                             {"=1,2"},
                                             {"speed=1,2"},
                                             {"batch=1,,2"},
                                             {"batch=1", "batch=2"},
                                             {"param.=1"},
                                             {"batch=1,2,3,4,5,6,7,8,9,10", "param.layers=1,2,3,4,5,6,7,8,9,10",
                                              "param.hidden=1,2,3,4,5,6,7,8,9,10", "epochs=1,2,3,4,5,6,7,8,9,10,11"}}) {
    EXPECT_FALSE(ParseSweeps(specs).ok()) << specs[0];
  }
  absl::StatusOr<std::vector<SweepAxis>> axes = ParseSweeps({"batch=sixteen"});
  ASSERT_TRUE(axes.ok());
  absl::StatusOr<PredictFlags> f = ApplySweepPoint(PredictFlags{}, SweepGrid(*axes)[0]);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("not an integer"), std::string::npos);
}

}  // namespace
}  // namespace perfcast::client
