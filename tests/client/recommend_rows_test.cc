#include "client/recommend_rows.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace perfcast::client {
namespace {

v1::Candidate* Add(v1::RecommendResponse& r, const std::string& target, const std::string& gpu,
                   int count, bool node, double seconds, bool recommended = true) {
  v1::Candidate* c = r.add_candidates();
  c->set_rank(r.candidates_size());
  c->set_target(target);
  c->set_gpu_model(gpu);
  c->set_gpu_count(count);
  c->set_registered_node(node);
  c->set_predicted(seconds > 0);
  c->set_job_seconds(seconds);
  c->set_recommended(recommended);
  return c;
}

TEST(SummariseCandidatesTest, NodesOfOneModelAreOneRowWithTheirSpread) {
  v1::RecommendResponse r;
  Add(r, "catalog:L4-24GB", "L4-24GB", 1, false, 900);
  for (int i = 0; i < 12; ++i) {
    Add(r, absl::StrCat("h200-", i), "H200-SXM-141GB", 1, true, 100 + i, /*recommended=*/i < 9);
  }
  Add(r, "catalog:H200-SXM-141GB", "H200-SXM-141GB", 1, false, 130);
  Add(r, "catalog:H200-SXM-141GB", "H200-SXM-141GB", 2, false, 70);
  const std::vector<RecommendRow> rows = SummariseCandidates(r);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].shown->target(), "catalog:L4-24GB");
  EXPECT_EQ(rows[0].nodes, 0);
  // The measured nodes stand for the model; the catalog's answer is a member.
  EXPECT_EQ(rows[1].members.size(), 13u);
  EXPECT_EQ(rows[1].nodes, 12);
  EXPECT_EQ(rows[1].recommended, 9);
  EXPECT_EQ(rows[1].shown->target(), "h200-5");  // the lower median of 100..111
  EXPECT_EQ(rows[1].node_seconds_min, 100);
  EXPECT_EQ(rows[1].node_seconds_max, 111);
  // Another GPU count is another row.
  EXPECT_EQ(rows[2].shown->gpu_count(), 2);
}

TEST(SummariseCandidatesTest, NodesWithoutAPredictionShowTheFirst) {
  v1::RecommendResponse r;
  Add(r, "a", "L4-24GB", 1, true, 0, false);
  Add(r, "b", "L4-24GB", 1, true, 0, false);
  const std::vector<RecommendRow> rows = SummariseCandidates(r);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].shown->target(), "a");
  EXPECT_EQ(rows[0].nodes, 2);
}

TEST(DistanceCellTest, NamesTheNewComponentsOrSaysSeen) {
  v1::Distance d;
  EXPECT_EQ(DistanceCell(d), "-");  // not predicted: the answer says nothing
  d.set_architecture("hopper");
  d.set_architecture_seen("seen");
  d.set_vendor("NVIDIA");
  d.set_vendor_seen("seen");
  d.set_power_class(">450W");
  d.set_power_class_seen("unknown");
  d.set_precision_path("bf16");
  d.set_precision_path_seen("seen");
  EXPECT_EQ(DistanceCell(d), "seen");
  d.set_architecture("ada");
  d.set_architecture_seen("new");
  d.set_power_class("<=100W");
  d.set_power_class_seen("new");
  d.set_precision_path("fp8 as bf16");
  d.set_precision_path_seen("new");
  EXPECT_EQ(DistanceCell(d), "new: architecture ada, power <=100W, precision fp8 as bf16");
}

}  // namespace
}  // namespace perfcast::client
