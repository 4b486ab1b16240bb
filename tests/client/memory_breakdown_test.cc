// perfcast memory's answer: the layout memory model's parts, unchanged, and
// each GPU's verdict worked out from them.
#include "client/memory_breakdown.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "predictor/layout_memory.h"

namespace perfcast::client {
namespace {

constexpr double kGiBytes = 1024.0 * 1024 * 1024;

v1::PredictRequest Decoder(int64_t batch, v1::Precision precision) {
  v1::PredictRequest request;
  v1::Workload* w = request.mutable_workload();
  w->set_kind(v1::WORKLOAD_KIND_MODEL);
  w->set_family("decoder");
  w->set_batch_size(batch);
  w->set_precision(precision);
  w->set_phase(v1::PHASE_TRAIN);
  return request;
}

v1::PredictRequest Llama7b(int64_t batch) {
  v1::PredictRequest request = Decoder(batch, v1::PRECISION_BF16_AMP);
  std::ifstream in(std::string(PERFCAST_SOURCE_DIR) + "/tests/models/hf_configs/llama-2-7b.json");
  std::stringstream text;
  text << in.rdbuf();
  request.mutable_workload()->set_family("");
  request.mutable_workload()->set_hf_config_json(text.str());
  (*request.mutable_workload()->mutable_params())["seq_len"] = 4096;
  return request;
}

std::vector<models::GpuSpec> Gpus(std::initializer_list<const char*> names) {
  std::vector<models::GpuSpec> gpus;
  for (const char* name : names) gpus.push_back(*models::GpuCatalog::BuiltIn().Find(name));
  return gpus;
}

TEST(MemoryBreakdownTest, PartsAreTheLayoutMemoryModelsWithoutAFittedModel) {
  v1::PredictRequest request = Llama7b(8);
  v1::ParallelLayout* layout = request.mutable_parallel();
  layout->set_data_parallel(8);
  layout->set_zero(3);
  layout->set_activation_checkpointing(true);
  absl::StatusOr<MemoryBreakdown> b = BreakDownMemory(request, Gpus({"H100-SXM5-80GB"}));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->layout.data, 8);
  EXPECT_EQ(b->layout.zero, 3);
  EXPECT_EQ(b->workload.family, "decoder");
  const predictor::ParallelLayout expected_layout{
      .data = 8, .zero = 3, .activation_checkpointing = true};
  absl::StatusOr<predictor::LayoutMemory> expected =
      predictor::EstimateLayoutMemory(predictor::MemoryModel{}, b->workload, expected_layout);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(b->memory.method, "analytic");
  EXPECT_DOUBLE_EQ(b->memory.parameters, expected->parameters);
  EXPECT_DOUBLE_EQ(b->memory.gradients, expected->gradients);
  EXPECT_DOUBLE_EQ(b->memory.optimizer, expected->optimizer);
  EXPECT_DOUBLE_EQ(b->memory.gathered, expected->gathered);
  EXPECT_DOUBLE_EQ(b->memory.activations, expected->activations);
  EXPECT_DOUBLE_EQ(b->memory.required(), expected->required());
  // About 6.7e9 parameters of fp32 master weights, sharded over 8.
  EXPECT_NEAR(b->memory.parameters / 1e9, 6.74e9 * 4 / 8 / 1e9, 0.2);
  EXPECT_GT(b->memory.gathered, 0);
}

TEST(MemoryBreakdownTest, ZeroStagesShardTheirStatesOverTheReplicas) {
  auto with_zero = [](int zero, v1::Framework framework) {
    v1::PredictRequest request = Decoder(16, v1::PRECISION_BF16_AMP);
    request.mutable_parallel()->set_data_parallel(4);
    request.mutable_parallel()->set_zero(zero);
    request.mutable_parallel()->set_framework(framework);
    absl::StatusOr<MemoryBreakdown> b = BreakDownMemory(request, {});
    EXPECT_TRUE(b.ok()) << b.status();
    return b->memory;
  };
  // DeepSpeed's stages: 1 shards the optimizer states, 2 the gradients too,
  // 3 the weights too.
  const predictor::LayoutMemory z0 = with_zero(0, v1::FRAMEWORK_DEEPSPEED),
                                z1 = with_zero(1, v1::FRAMEWORK_DEEPSPEED),
                                z2 = with_zero(2, v1::FRAMEWORK_DEEPSPEED),
                                z3 = with_zero(3, v1::FRAMEWORK_DEEPSPEED);
  EXPECT_DOUBLE_EQ(z1.optimizer, z0.optimizer / 4);
  EXPECT_DOUBLE_EQ(z1.gradients, z0.gradients);
  EXPECT_DOUBLE_EQ(z2.gradients, z0.gradients / 4);
  EXPECT_DOUBLE_EQ(z2.parameters, z0.parameters);
  EXPECT_DOUBLE_EQ(z3.parameters, z0.parameters / 4);
  EXPECT_LT(z3.required(), z2.required());
  EXPECT_LT(z2.required(), z0.required());

  // PyTorch: DDP copies the gradients into its buckets; FSDP2 keeps the
  // weights sharded at stage 2 as well and computes on the 16-bit copies it
  // gathers, which stage 3 frees layer by layer.
  const predictor::LayoutMemory ddp = with_zero(0, v1::FRAMEWORK_PYTORCH),
                                fsdp2 = with_zero(2, v1::FRAMEWORK_PYTORCH),
                                fsdp3 = with_zero(3, v1::FRAMEWORK_PYTORCH);
  EXPECT_DOUBLE_EQ(ddp.buckets, ddp.gradients);
  EXPECT_DOUBLE_EQ(fsdp2.parameters, ddp.parameters / 4);
  EXPECT_DOUBLE_EQ(fsdp2.amp_copies, ddp.amp_copies);
  EXPECT_EQ(fsdp3.amp_copies, 0);
  EXPECT_GT(fsdp3.gathered, 0);
  EXPECT_LT(fsdp2.required(), ddp.required());
}

TEST(MemoryBreakdownTest, EachGpuFitsWhenItsMemoryHoldsTheRequiredBytes) {
  // Llama-2-7B with Adam on one GPU: about 110 GB of states alone.
  absl::StatusOr<MemoryBreakdown> big =
      BreakDownMemory(Llama7b(8), Gpus({"L4", "H100-SXM5-80GB", "B200"}));
  ASSERT_TRUE(big.ok()) << big.status();
  ASSERT_EQ(big->gpus.size(), 3u);
  for (const GpuMemoryFit& g : big->gpus) {
    const models::GpuSpec spec = *models::GpuCatalog::BuiltIn().Find(g.gpu);
    EXPECT_DOUBLE_EQ(g.device_bytes, spec.memory_gib * kGiBytes) << g.gpu;
    EXPECT_EQ(g.fits, big->memory.required() <= g.device_bytes) << g.gpu;
    EXPECT_DOUBLE_EQ(g.free_bytes, g.device_bytes - big->memory.required()) << g.gpu;
  }
  EXPECT_FALSE(big->gpus[0].fits);  // L4, 24 GB
  EXPECT_FALSE(big->gpus[1].fits);  // H100, 80 GB
  // Not fitting comes with the nearest change that does.
  EXPECT_NE(big->gpus[1].nearest_change, "");
  EXPECT_LT(big->gpus[1].free_bytes, 0);

  // GPT-2 small, batch 1: fits everywhere with room to spare.
  absl::StatusOr<MemoryBreakdown> small =
      BreakDownMemory(Decoder(1, v1::PRECISION_FP32), Gpus({"L4", "H100-SXM5-80GB"}));
  ASSERT_TRUE(small.ok()) << small.status();
  for (const GpuMemoryFit& g : small->gpus) {
    EXPECT_TRUE(g.fits) << g.gpu;
    EXPECT_GT(g.free_bytes, 0) << g.gpu;
    EXPECT_EQ(g.nearest_change, "") << g.gpu;
  }
}

TEST(MemoryBreakdownTest, DocumentListsEveryPartAndTheRequiredBytes) {
  absl::StatusOr<MemoryBreakdown> b =
      BreakDownMemory(Decoder(8, v1::PRECISION_BF16_AMP), Gpus({"L4"}));
  ASSERT_TRUE(b.ok()) << b.status();
  const nlohmann::json doc = MemoryBreakdownJson(*b);
  EXPECT_EQ(doc["layout"], "1 GPU");
  EXPECT_EQ(doc["method"], "analytic");
  const nlohmann::json& parts = doc["per_gpu_bytes"];
  for (const char* part : {"weights", "gradients", "optimizer_states", "amp_copies",
                           "gathered_layers", "communication_buckets", "activations",
                           "optimizer_temporaries", "allocated_peak", "allocator_slack",
                           "cuda_context"}) {
    EXPECT_TRUE(parts.contains(part)) << part;
  }
  EXPECT_DOUBLE_EQ(parts["allocated_peak"].get<double>() + parts["allocator_slack"].get<double>() +
                       parts["cuda_context"].get<double>(),
                   doc["required_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(parts["weights"].get<double>(), b->memory.parameters);
  ASSERT_EQ(doc["gpus"].size(), 1u);
  EXPECT_EQ(doc["gpus"][0]["gpu"], b->gpus[0].gpu);
  EXPECT_EQ(doc["gpus"][0]["fits"], b->gpus[0].fits);

  std::ostringstream table;
  PrintMemoryBreakdown(*b, 0, table);
  EXPECT_NE(table.str().find("required per GPU"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("fits on 1 of 1 GPUs"), std::string::npos) << table.str();
}

TEST(MemoryBreakdownTest, RefusesLayoutsAndWorkloadsItCannotPrice) {
  v1::PredictRequest zero_alone = Decoder(8, v1::PRECISION_FP32);
  zero_alone.mutable_parallel()->set_zero(3);  // ZeRO needs more than one replica
  EXPECT_EQ(BreakDownMemory(zero_alone, {}).status().code(), absl::StatusCode::kInvalidArgument);

  v1::PredictRequest uneven = Decoder(6, v1::PRECISION_FP32);
  uneven.mutable_parallel()->set_data_parallel(4);  // 6 samples over 4 replicas
  EXPECT_EQ(BreakDownMemory(uneven, {}).status().code(), absl::StatusCode::kInvalidArgument);

  v1::PredictRequest no_batch = Decoder(0, v1::PRECISION_FP32);
  EXPECT_EQ(BreakDownMemory(no_batch, {}).status().code(), absl::StatusCode::kInvalidArgument);

  v1::PredictRequest unknown = Decoder(8, v1::PRECISION_FP32);
  unknown.mutable_workload()->set_family("gpt9");
  EXPECT_FALSE(BreakDownMemory(unknown, {}).ok());
}

}  // namespace
}  // namespace perfcast::client
