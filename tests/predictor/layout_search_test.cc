#include "predictor/layout_search.h"

#include <set>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace perfcast::predictor {
namespace {

// Two layers of four heads, a batch of four.
models::WorkloadSpec Tiny() {
  models::WorkloadSpec spec;
  spec.family = "transformer";
  spec.params = {{"layers", 2}, {"hidden", 64}, {"heads", 4}, {"seq_len", 16}};
  spec.batch_size = 4;
  return spec;
}

auto Key(const ParallelLayout& l) {
  return std::make_tuple(l.data, l.tensor, l.pipeline, l.micro_batches, l.zero,
                         l.activation_checkpointing, static_cast<int>(l.framework));
}

TEST(EnumerateLayouts, CountsEveryValidLayoutOnceByHand) {
  // PyTorch on 2 GPUs: DP2 × ZeRO 0-3 × ckpt (8); PP2 with M in {2, 4}, 1F1B
  // needing M >= P (4); TP2 (2).
  EXPECT_EQ(EnumerateLayouts(Tiny(), Framework::kPytorch, 2, 0).size(), 14u);
  // Megatron: ZeRO <= 1 (4); its 1F1B runs M in {1, 2, 4} (6); TP2 (2).
  EXPECT_EQ(EnumerateLayouts(Tiny(), Framework::kMegatron, 2, 0).size(), 12u);
  // One GPU: the plain step, and with checkpointing.
  EXPECT_EQ(EnumerateLayouts(Tiny(), Framework::kPytorch, 1, 0).size(), 2u);
  for (int gpus : {1, 2, 3, 4, 6, 8, 16}) {
    for (Framework framework : {Framework::kPytorch, Framework::kMegatron, Framework::kDeepspeed}) {
      const std::vector<ParallelLayout> layouts = EnumerateLayouts(Tiny(), framework, gpus, 0);
      std::set<decltype(Key(ParallelLayout{}))> seen;
      for (const ParallelLayout& l : layouts) {
        EXPECT_EQ(l.gpus(), gpus) << DescribeLayout(l);
        EXPECT_EQ(l.framework, framework);
        EXPECT_TRUE(ValidateLayout(Tiny(), l, 0).ok()) << DescribeLayout(l);
        EXPECT_TRUE(seen.insert(Key(l)).second) << "twice: " << DescribeLayout(l);
      }
    }
  }
}

TEST(EnumerateLayouts, RespectsHeadsLayersBatchAndTheNode) {
  models::WorkloadSpec spec = Tiny();
  spec.params["heads"] = 3;
  spec.params["hidden"] = 48;
  for (const ParallelLayout& l : EnumerateLayouts(spec, Framework::kPytorch, 2, 0)) {
    EXPECT_EQ(l.tensor, 1) << "TP2 does not divide 3 heads";
  }
  spec = Tiny();
  spec.params["kv_heads"] = 1;
  for (const ParallelLayout& l : EnumerateLayouts(spec, Framework::kPytorch, 4, 0)) {
    EXPECT_EQ(l.tensor, 1) << "TP does not divide one key/value head";
  }
  // Four stages for two layers: none; a batch of 4 over 8 replicas: none.
  for (const ParallelLayout& l : EnumerateLayouts(Tiny(), Framework::kPytorch, 8, 0)) {
    EXPECT_LE(l.pipeline, 2);
    EXPECT_LE(l.data, 4);
  }
  EXPECT_TRUE(EnumerateLayouts(Tiny(), Framework::kPytorch, 3, 0).empty());
  // A node of 4 GPUs runs no layout of 8.
  EXPECT_FALSE(EnumerateLayouts(Tiny(), Framework::kPytorch, 4, 4).empty());
  EXPECT_TRUE(EnumerateLayouts(Tiny(), Framework::kPytorch, 8, 4).empty());
  // ZeRO needs replicas: none on one GPU.
  for (const ParallelLayout& l : EnumerateLayouts(Tiny(), Framework::kPytorch, 1, 0)) {
    EXPECT_EQ(l.zero, 0);
  }
  // Inference: neither ZeRO nor checkpointing.
  spec = Tiny();
  spec.phase = models::Phase::kInference;
  for (const ParallelLayout& l : EnumerateLayouts(spec, Framework::kPytorch, 2, 0)) {
    EXPECT_EQ(l.zero, 0);
    EXPECT_FALSE(l.activation_checkpointing);
  }
}

TEST(ParseGpuCounts, TakesRangesAndListsAndRefusesTheRest) {
  EXPECT_EQ(*ParseGpuCounts("8"), (std::vector<int>{8}));
  EXPECT_EQ(*ParseGpuCounts("1-4,8, 16"), (std::vector<int>{1, 2, 3, 4, 8, 16}));
  EXPECT_EQ(*ParseGpuCounts("2,2,1"), (std::vector<int>{1, 2}));
  EXPECT_EQ(ParseGpuCounts("1-64")->size(), 64u);
  for (const char* bad : {"", "0", "1-0", "abc", "-4", "4-", "1,,2", "+2", "1.5", "2-1025",
                          "1-65"}) {
    const absl::Status status = ParseGpuCounts(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("--gpu-count"), std::string::npos) << status;
    EXPECT_EQ(status.message().find('\n'), std::string::npos) << status;
  }
}

TEST(LayoutName, NamesTheDegreesThatAreUsed) {
  EXPECT_EQ(LayoutName({}), "dp1");
  EXPECT_EQ(LayoutName({.data = 4, .tensor = 2, .zero = 3, .activation_checkpointing = true}),
            "dp4·tp2·zero3·ckpt");
  EXPECT_EQ(LayoutName({.data = 2, .pipeline = 4, .micro_batches = 8}), "dp2·pp4·m8");
}

}  // namespace
}  // namespace perfcast::predictor
