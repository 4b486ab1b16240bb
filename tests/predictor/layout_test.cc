#include "predictor/layout.h"

#include <string>

#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/layout_memory.h"
#include "predictor/memory.h"
#include "predictor/parallel_terms.h"

namespace perfcast::predictor {
namespace {

// Llama-3-8B's shape: 32 heads, 8 key/value heads, 32 layers.
models::WorkloadSpec Llama8b(int64_t batch) {
  models::WorkloadSpec spec;
  spec.family = "decoder";
  spec.params = {{"hidden", 4096}, {"layers", 32},     {"heads", 32},    {"kv_heads", 8},
                 {"ffn", 14336},   {"vocab", 128256},  {"seq_len", 2048}, {"mlp", 1},
                 {"norm", 1},      {"bias", 0},        {"positions", 0}, {"tied", 0}};
  spec.batch_size = batch;
  spec.precision = models::Precision::kBf16Amp;
  spec.optimizer = "adamw";
  return spec;
}

void ExpectInvalid(const models::WorkloadSpec& spec, const ParallelLayout& layout,
                   const std::string& says, int max_gpus = 0) {
  const absl::Status s = ValidateLayout(spec, layout, max_gpus);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << DescribeLayout(layout);
  EXPECT_NE(s.message().find(says), std::string::npos) << s.message();
}

TEST(Layout, BadInputNamesTheConstraint) {
  const models::WorkloadSpec llama = Llama8b(16);
  ExpectInvalid(llama, {.tensor = 3}, "attention heads (32)");
  ExpectInvalid(llama, {.tensor = 16}, "key/value heads (8)");
  ExpectInvalid(llama, {.pipeline = 33, .micro_batches = 1, .framework = Framework::kMegatron},
                "exceeds the 32 layers");
  ExpectInvalid(llama, {.zero = 3}, "--zero 3 shards across data-parallel replicas");
  ExpectInvalid(llama, {.data = 2, .zero = 4}, "--zero must be 0, 1, 2 or 3");
  ExpectInvalid(llama, {.pipeline = 4, .micro_batches = 2}, "PyTorch's 1F1B");
  ExpectInvalid(llama, {.data = 4, .tensor = 4}, "but the node has 8", 8);
  ExpectInvalid(llama, {.data = 2, .zero = 3, .framework = Framework::kMegatron},
                "--framework megatron shards optimizer states only");
  ExpectInvalid(llama, {.tensor = 2, .framework = Framework::kDeepspeed},
                "--framework deepspeed has no tensor parallelism");
  ExpectInvalid(llama,
                {.data = 2, .pipeline = 2, .micro_batches = 2, .zero = 2,
                 .framework = Framework::kDeepspeed},
                "--framework deepspeed runs --pipeline-parallel with --zero 0 or 1");
  models::WorkloadSpec inference = llama;
  inference.phase = models::Phase::kInference;
  ExpectInvalid(inference, {.activation_checkpointing = true}, "apply to training");

  // Megatron's non-interleaved 1F1B runs with fewer micro-batches than stages.
  EXPECT_TRUE(ValidateLayout(llama, {.pipeline = 4, .framework = Framework::kMegatron}, 0).ok());
  EXPECT_TRUE(ValidateLayout(llama, {.data = 2, .tensor = 8, .zero = 3}, 16).ok());
  EXPECT_TRUE(ValidateLayout(llama, {.activation_checkpointing = true}, 1).ok());
}

TEST(Layout, NamesAndFrameworks) {
  EXPECT_EQ(DescribeLayout({}), "1 GPU");
  EXPECT_EQ(DescribeLayout({.data = 4, .tensor = 2, .zero = 3, .activation_checkpointing = true}),
            "DP4 TP2 ZeRO-3 ckpt");
  EXPECT_EQ(DescribeLayout({.pipeline = 2, .micro_batches = 8,
                            .framework = Framework::kMegatron}),
            "PP2 M8 megatron");
  for (Framework f : {Framework::kPytorch, Framework::kMegatron, Framework::kDeepspeed}) {
    EXPECT_EQ(*ParseFramework(FrameworkName(f)), f);
  }
  EXPECT_EQ(*ParseFramework("Megatron"), Framework::kMegatron);
  EXPECT_EQ(ParseFramework("jax").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParallelLayout{}.single_gpu());
  EXPECT_FALSE(ParallelLayout{.activation_checkpointing = true}.single_gpu());
}

TEST(LayoutMemory, OneGpuIsTheSingleGpuEstimate) {
  const MemoryModel analytic;
  const models::WorkloadDescriptor d = *models::Describe(Llama8b(2));
  const MemoryEstimate single = EstimateMemory(analytic, d);
  const LayoutMemory one = EstimateLayoutMemory(analytic, d, {});
  EXPECT_DOUBLE_EQ(one.allocated(), single.peak_bytes);
  EXPECT_DOUBLE_EQ(one.required(), single.required_bytes);
  EXPECT_EQ(one.method, "analytic");
}

TEST(LayoutMemory, ZeroStagesShardStateAcrossReplicas) {
  const MemoryModel analytic;
  const models::WorkloadSpec spec = Llama8b(8);
  auto memory = [&](const ParallelLayout& layout) {
    absl::StatusOr<LayoutMemory> m = EstimateLayoutMemory(analytic, spec, layout);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.value_or(LayoutMemory{});
  };
  const LayoutMemory ddp = memory({.data = 8});
  const LayoutMemory z1 = memory({.data = 8, .zero = 1});
  const LayoutMemory z2 = memory({.data = 8, .zero = 2});
  const LayoutMemory z3 = memory({.data = 8, .zero = 3});
  EXPECT_DOUBLE_EQ(z1.optimizer, ddp.optimizer / 8);
  EXPECT_DOUBLE_EQ(z1.gradients, ddp.gradients);
  EXPECT_DOUBLE_EQ(z2.gradients, ddp.gradients / 8);
  EXPECT_DOUBLE_EQ(z3.parameters, ddp.parameters / 8);
  EXPECT_GT(z3.gathered, 0);
  EXPECT_EQ(z2.gathered, 0);
  // DDP copies every gradient into its buckets.
  EXPECT_DOUBLE_EQ(ddp.buckets, ddp.gradients);
  EXPECT_LT(z3.required(), z2.required());
  EXPECT_LT(z2.required(), z1.required());
  EXPECT_LT(z1.required(), ddp.required());

  const LayoutMemory checkpointed = memory({.data = 8, .activation_checkpointing = true});
  EXPECT_LT(checkpointed.activations, ddp.activations / 2);
  // 1F1B keeps up to P micro-batches in flight on the first stage.
  const LayoutMemory pp = memory({.pipeline = 4, .micro_batches = 8});
  const LayoutMemory accumulated = memory({.micro_batches = 8});
  EXPECT_GT(pp.activations, accumulated.activations / 4);
}

// PyTorch's FSDP2 keeps the weights sharded at ZeRO-2 too and computes on
// the 16-bit copies it gathers: ZeRO-2 keeps every unit's from forward to
// backward, ZeRO-3 only the units it holds (`gathered`). DeepSpeed's ZeRO-2
// keeps the weights whole.
TEST(LayoutMemory, Fsdp2ShardsTheWeightsAndGathersItsOwnCopies) {
  const MemoryModel analytic;
  const models::WorkloadSpec spec = Llama8b(8);
  auto memory = [&](const ParallelLayout& layout) {
    return EstimateLayoutMemory(analytic, spec, layout).value_or(LayoutMemory{});
  };
  const LayoutMemory ddp = memory({.data = 8});
  const LayoutMemory z2 = memory({.data = 8, .zero = 2});
  const LayoutMemory z3 = memory({.data = 8, .zero = 3});
  ASSERT_GT(ddp.amp_copies, 0);
  EXPECT_DOUBLE_EQ(z2.parameters, ddp.parameters / 8);
  EXPECT_DOUBLE_EQ(z2.amp_copies, ddp.amp_copies);
  EXPECT_EQ(z3.amp_copies, 0);
  EXPECT_GT(z3.gathered, 0);
  const LayoutMemory deepspeed =
      memory({.data = 8, .zero = 2, .framework = Framework::kDeepspeed});
  EXPECT_DOUBLE_EQ(deepspeed.parameters, ddp.parameters);
}

// DTensor's tensor parallelism splits the layers' projections and leaves the
// embedding, norms and head whole; Megatron splits those by vocabulary.
TEST(LayoutMemory, DtensorKeepsTheEmbeddingAndHeadWhole) {
  const MemoryModel analytic;
  const models::WorkloadSpec spec = Llama8b(8);
  const models::WorkloadDescriptor d = *models::Describe(spec);
  models::WorkloadSpec fewer = spec;
  fewer.params["layers"] -= 1;
  const double layer = d.parameters - models::Describe(fewer)->parameters;
  const double outside = (d.parameters - 32 * layer) / d.parameters;
  ASSERT_GT(outside, 0.05);
  const LayoutMemory one = *EstimateLayoutMemory(analytic, spec, {});
  const LayoutMemory megatron =
      *EstimateLayoutMemory(analytic, spec, {.tensor = 2, .framework = Framework::kMegatron});
  const LayoutMemory dtensor = *EstimateLayoutMemory(analytic, spec, {.tensor = 2});
  EXPECT_DOUBLE_EQ(megatron.parameters, one.parameters / 2);
  EXPECT_NEAR(dtensor.parameters, one.parameters * ((1 - outside) / 2 + outside),
              1e-9 * one.parameters);
  EXPECT_NEAR(dtensor.optimizer, one.optimizer * ((1 - outside) / 2 + outside),
              1e-9 * one.optimizer);
  // The head's logits and the loss stay whole too.
  EXPECT_GT(dtensor.activations, megatron.activations);
  EXPECT_LT(dtensor.activations, one.activations);
}

// PyTorch's pipeline schedules return the last stage's outputs merged: the
// last stage keeps every micro-batch's logits until the step ends.
TEST(LayoutMemory, PytorchPipeliningKeepsEveryMicroBatchsLogits) {
  const MemoryModel analytic;
  // A small decoder with Llama's vocabulary: the head's stage binds.
  models::WorkloadSpec spec = Llama8b(8);
  spec.params["hidden"] = 512;
  spec.params["ffn"] = 1024;
  spec.params["heads"] = spec.params["kv_heads"] = 8;
  spec.params["layers"] = 4;
  const ParallelLayout pytorch{.pipeline = 2, .micro_batches = 4};
  ParallelLayout megatron = pytorch;
  megatron.framework = Framework::kMegatron;
  const double kept = 8.0 * 2048 * 128256 * 2;  // the global batch's bf16 logits
  EXPECT_NEAR(EstimateLayoutMemory(analytic, spec, pytorch)->activations -
                  EstimateLayoutMemory(analytic, spec, megatron)->activations,
              kept, 1e-9 * kept);
}

// Memory per GPU has a 10-90% band: the spread learned on the measured
// layouts where there is one (PyTorch's), else the calibration's.
TEST(LayoutMemory, MemoryPerGpuHasABand) {
  const MemoryModel analytic;
  const models::WorkloadSpec spec = Llama8b(8);
  for (const ParallelLayout& layout :
       {ParallelLayout{.data = 8}, ParallelLayout{.data = 8, .zero = 3},
        ParallelLayout{.tensor = 2}, ParallelLayout{.pipeline = 2, .micro_batches = 4}}) {
    const ImplementationTerm term = ParallelTerms::BuiltIn().Find(layout);
    ASSERT_GT(term.memory_low_ratio, 0) << DescribeLayout(layout);
    const LayoutMemory m = *EstimateLayoutMemory(analytic, spec, layout);
    EXPECT_LE(m.allocated_low, m.allocated()) << DescribeLayout(layout);
    EXPECT_GE(m.allocated_high, m.allocated()) << DescribeLayout(layout);
    EXPECT_LT(m.allocated_low, m.allocated_high) << DescribeLayout(layout);
    EXPECT_NEAR(m.allocated_low, m.allocated() * term.memory_low_ratio, 1e-9 * m.allocated());
    // Learned per strategy, as wide over as under the peak: a model missed
    // one way where the others were missed the other is as likely.
    EXPECT_NEAR(term.memory_low_ratio * term.memory_high_ratio, 1, 1e-5) << DescribeLayout(layout);
    const MemoryEstimate as_one = AsMemoryEstimate(m);
    EXPECT_EQ(as_one.low_bytes, m.allocated_low);
    EXPECT_EQ(as_one.high_bytes, m.allocated_high);
  }
  // Without a learned spread (DeepSpeed's here) and with an analytic model,
  // which has no calibration band: the band is the peak.
  const LayoutMemory deepspeed =
      *EstimateLayoutMemory(analytic, spec, {.data = 8, .framework = Framework::kDeepspeed});
  EXPECT_DOUBLE_EQ(deepspeed.allocated_low, deepspeed.allocated());
  EXPECT_DOUBLE_EQ(deepspeed.allocated_high, deepspeed.allocated());

  for (const char* bad : {R"({"terms": [{"framework": "pytorch", "strategy": "ddp",
                                         "memory_low_ratio": 1.2, "memory_high_ratio": 1.3}]})",
                          R"({"terms": [{"framework": "pytorch", "strategy": "ddp",
                                         "memory_low_ratio": 0.9}]})"}) {
    EXPECT_EQ(ParallelTerms::FromJson(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(LayoutMemory, RefusesWhatDoesNotFitWithTheNearestChange) {
  const MemoryModel analytic;
  const models::GpuSpec h100 = *models::GpuCatalog::BuiltIn().Find("H100-SXM5-80GB");
  const models::WorkloadSpec spec = Llama8b(8);
  const ParallelLayout ddp{.data = 8};
  const LayoutMemory memory = *EstimateLayoutMemory(analytic, spec, ddp);
  const absl::Status s = CheckLayoutFits(analytic, spec, h100, ddp, memory, 8);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("DP8 does not fit: needs"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("optimizer"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("fits with --zero"), std::string::npos) << s.message();

  const std::optional<ParallelLayout> nearest =
      NearestFittingLayout(analytic, spec, h100, ddp, 8);
  ASSERT_TRUE(nearest.has_value());
  EXPECT_LE(EstimateLayoutMemory(analytic, spec, *nearest)->required(), 80.0 * (1 << 30));

  // One GPU: more GPUs are the way out.
  const std::optional<ParallelLayout> more = NearestFittingLayout(analytic, spec, h100, {}, 0);
  ASSERT_TRUE(more.has_value());
  EXPECT_GT(more->gpus(), 1);
  EXPECT_NE(DescribeChange({}, *more).find("more GPUs"), std::string::npos);
  EXPECT_FALSE(NearestFittingLayout(analytic, spec, h100, {}, 1).has_value());
  EXPECT_TRUE(CheckLayoutFits(analytic, spec, h100, *nearest,
                              *EstimateLayoutMemory(analytic, spec, *nearest), 8)
                  .ok());
}

}  // namespace
}  // namespace perfcast::predictor
