#include "predictor/parallel.h"

#include <cstdio>
#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/collectives.h"
#include "predictor/python_loop.h"

namespace perfcast::predictor {
namespace {

// A model that prices every operation at its roofline time (one level-1
// model whose only feature is roofline time, coefficient 1; other classes
// are uncalibrated, i.e. roofline too), optionally with a level-2 model that
// multiplies the level-1 sum by `level2_factor`.
PredictorModel RooflineModel(double level2_factor = 0) {
  auto unit = [](int level, const char* feature, double coefficient) {
    FittedModel m;
    m.level = level;
    m.features = {feature};
    m.fit.mean = {0};
    m.fit.scale = {1};
    m.fit.coefficients = {coefficient};
    for (int q = 0; q <= 100; ++q) m.cv_error_quantiles.push_back((q - 50) / 500.0);
    m.feature_min = {0};
    m.feature_max = {1e12};
    return m;
  };
  PredictorModel model;
  model.level1[models::OpClass::kGemm] = unit(1, "roofline_ms", 1);
  if (level2_factor > 0) model.level2[models::Phase::kTrain] = unit(2, "level1_ms", level2_factor);
  return model;
}

models::Node H100Node(int gpus) {
  models::Node node;
  node.name = "h100x8";
  node.gpu_count = gpus;
  node.gpu = *models::GpuCatalog::BuiltIn().Find("H100-SXM5-80GB");
  return node;
}

models::WorkloadSpec Transformer(int64_t batch, int64_t layers = 8) {
  models::WorkloadSpec spec;
  spec.family = "transformer";
  spec.params = {{"layers", layers}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096},
                 {"seq_len", 512},   {"vocab", 8192}};
  spec.batch_size = batch;
  spec.precision = models::Precision::kBf16Amp;
  return spec;
}

// No implementation terms: the composition alone.
const ParallelTerms& NoTerms() {
  static const ParallelTerms* const kNone = new ParallelTerms(*ParallelTerms::FromJson(R"({"terms": []})"));
  return *kNone;
}

ParallelPrediction Parallel(const models::WorkloadSpec& spec, ParallelLayout layout,
                            const PredictorModel& model = RooflineModel(),
                            ParallelOptions options = {}) {
  if (options.terms == nullptr) options.terms = &NoTerms();
  absl::StatusOr<ParallelPrediction> p = PredictParallel(model, spec, H100Node(8), layout, options);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.value_or(ParallelPrediction{});
}

double Single(const models::WorkloadSpec& spec, const PredictorModel& model = RooflineModel()) {
  absl::StatusOr<Prediction> p = Predict(model, spec, H100Node(8));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? p->iteration_ms : -1;
}

double BreakdownSum(const ParallelPrediction& p) {
  double sum = 0;
  for (const auto& [part, ms] : p.breakdown_ms) sum += ms;
  return sum;
}

double PartsSum(const ParallelPrediction& p) {
  return p.compute_ms + p.bubble_ms + p.tp_comm_ms + p.pp_comm_ms + p.dp_exposed_ms +
         p.optimizer_ms + p.implementation_ms;
}

TEST(Parallel, OneGpuIsTheSingleGpuPrediction) {
  for (double factor : {0.0, 1.7}) {
    const PredictorModel model = RooflineModel(factor);
    const ParallelPrediction p = Parallel(Transformer(8), {}, model);
    const double single = Single(Transformer(8), model);
    EXPECT_NEAR(p.step_ms, single, 1e-9 * single) << factor;
    EXPECT_NEAR(BreakdownSum(p), p.step_ms, 1e-9 * single);
    EXPECT_EQ(p.tp_comm_ms + p.pp_comm_ms + p.dp_comm_ms + p.bubble_ms, 0);
    EXPECT_LT(p.lo_ms, p.step_ms);
    EXPECT_GT(p.hi_ms, p.step_ms);
  }
}

TEST(Parallel, DataParallelRunsTheReplicaBatchAndAddsTheExposedGradientAllReduce) {
  const ParallelPrediction p = Parallel(Transformer(32), {.data = 4});
  // Each GPU runs a quarter of the global batch; compute + optimizer is that
  // single-GPU step exactly.
  const double replica = Single(Transformer(8));
  EXPECT_NEAR(p.compute_ms + p.optimizer_ms, replica, 1e-9 * replica);
  // fp32 gradients of every parameter over a 4-GPU NVLink ring.
  const models::WorkloadDescriptor d = *models::Describe(Transformer(8));
  const OverlapResult overlap = *OverlappedAllReduce(
      4 * d.parameters, 4, *SpecLink(H100Node(8).gpu, 4, false), 1);
  EXPECT_NEAR(p.dp_comm_ms, 1e3 * overlap.comm_seconds, 1e-9);
  EXPECT_EQ(p.dp_buckets, overlap.buckets);
  EXPECT_GT(p.dp_exposed_ms, 0);
  EXPECT_LT(p.dp_exposed_ms, p.dp_comm_ms);
  EXPECT_NEAR(p.step_ms, replica + p.dp_exposed_ms, 1e-9 * replica);
  EXPECT_EQ(p.dp_link.source, "nvlink");
  EXPECT_NEAR(BreakdownSum(p), p.step_ms, 1e-9 * p.step_ms);
}

TEST(Parallel, TensorParallelSplitsLayersAndPaysFourAllReducesPerLayer) {
  const int64_t layers = 8;
  const ParallelPrediction p = Parallel(Transformer(8, layers), {.tensor = 4});
  // The single GPU's compute, without its optimizer step (which the layout
  // prices apart): one GPU's step minus that step.
  const ParallelPrediction one_gpu = Parallel(Transformer(8, layers), {});
  ASSERT_NEAR(one_gpu.compute_ms + one_gpu.optimizer_ms, Single(Transformer(8, layers)),
              1e-9 * one_gpu.compute_ms);
  const double single = one_gpu.compute_ms;
  // The layers' GEMMs run a quarter of their work on each GPU (their launch
  // costs are not split, hence the tolerance); the rest of the step is not
  // all split, so compute falls by less than the degree.
  EXPECT_NEAR(p.breakdown_ms.at("gemm"), one_gpu.breakdown_ms.at("gemm") / 4,
              0.02 * one_gpu.breakdown_ms.at("gemm"));
  EXPECT_LT(p.compute_ms, 0.75 * single);
  EXPECT_GT(p.compute_ms, single / 4);  // norms, residuals and the host are not split
  // Activation all-reduces: 2 forward + 2 backward per layer; DTensor keeps
  // the embedding whole, so it reduces nothing.
  const double bytes = 8.0 * 512 * 1024 * 2;
  const double one = *CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, bytes,
                                        4, *SpecLink(H100Node(8).gpu, 4, false));
  EXPECT_NEAR(p.tp_comm_ms, 1e3 * one * 4 * layers, 1e-9);
  EXPECT_NEAR(BreakdownSum(p), p.step_ms, 1e-9 * p.step_ms);
  EXPECT_NEAR(PartsSum(p), p.step_ms, 1e-9 * p.step_ms);
  EXPECT_GT(p.breakdown_ms.at("comm.tp_allreduce"), 0);
}

TEST(Parallel, TensorParallelSplitsTheHeadsOfAttentionPricedFromItsShape) {
  // RooflineModel has no attention class: an attention record is priced as
  // the batched GEMMs, softmax and scale its shape (batch x heads) gives, so
  // the split must reach the shape's heads, not only the record's work.
  const ParallelPrediction one_gpu = Parallel(Transformer(8), {});
  const ParallelPrediction p = Parallel(Transformer(8), {.tensor = 4});
  const double whole = one_gpu.breakdown_ms.at("attention");
  ASSERT_GT(whole, 0);
  // A quarter of the work; the parts' launches are not split.
  EXPECT_GT(p.breakdown_ms.at("attention"), whole / 4);
  EXPECT_LT(p.breakdown_ms.at("attention"), 0.35 * whole);
}

TEST(Parallel, PipelineBubbleShrinksWithMicroBatchesAs1F1B) {
  const int stages = 4;
  for (int micro : {1, 4, 16}) {
    const ParallelPrediction p =
        Parallel(Transformer(64, 32), {.pipeline = stages, .micro_batches = micro,
                                       .framework = Framework::kMegatron});
    const double pipelined = p.compute_ms + p.bubble_ms + p.pp_comm_ms;
    // (P-1)/(M+P-1) for equal stages; the embedding and classifier make the
    // end stages a little longer.
    const double ideal = (stages - 1.0) / (micro + stages - 1.0);
    EXPECT_NEAR(p.bubble_ms / pipelined, ideal, 0.1 * ideal) << micro;
    EXPECT_GT(p.pp_comm_ms, 0);
    EXPECT_NEAR(BreakdownSum(p), p.step_ms, 1e-9 * p.step_ms);
  }
  // One micro-batch through four stages takes the single-GPU forward and
  // backward plus six sends of the boundary activation (three forward,
  // three backward); each stage updates only its quarter of the parameters.
  const ParallelPrediction one =
      Parallel(Transformer(8, 32), {.pipeline = stages, .framework = Framework::kMegatron});
  const double send = 1e3 * *CollectiveSeconds(Collective::kPointToPoint,
                                               CollectiveAlgorithm::kAuto, 8.0 * 512 * 1024 * 2,
                                               2, *SpecLink(H100Node(8).gpu, 2, false));
  const double single = Single(Transformer(8, 32)) - stages * one.optimizer_ms;
  EXPECT_NEAR(one.step_ms - one.optimizer_ms, single + 6 * send, 1e-9 * single);
}

TEST(Parallel, LevelTwoCorrectionScalesEveryComputePart) {
  const ParallelLayout layout{.data = 2, .tensor = 2, .pipeline = 2, .micro_batches = 4};
  const ParallelPrediction base = Parallel(Transformer(64), layout, RooflineModel(1));
  const ParallelPrediction scaled = Parallel(Transformer(64), layout, RooflineModel(2));
  EXPECT_NEAR(scaled.compute_ms, 2 * base.compute_ms, 1e-9 * base.compute_ms);
  EXPECT_NEAR(scaled.optimizer_ms, 2 * base.optimizer_ms, 1e-9 * base.optimizer_ms);
  EXPECT_NEAR(scaled.tp_comm_ms, base.tp_comm_ms, 1e-12);
  EXPECT_NEAR(BreakdownSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  EXPECT_NEAR(PartsSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
}

TEST(Parallel, MemoryPerGpuIsTheLayoutMemoryModels) {
  const models::WorkloadDescriptor d = *models::Describe(Transformer(4));
  const PredictorModel model = RooflineModel();
  const ParallelPrediction one = Parallel(Transformer(4), {});
  const MemoryEstimate single = EstimateMemory(model.memory, d);
  EXPECT_DOUBLE_EQ(one.memory.allocated(), single.peak_bytes);
  EXPECT_DOUBLE_EQ(one.memory.required(), single.required_bytes);

  // Megatron's split: the embedding and head divided too.
  const ParallelLayout layout{
      .tensor = 2, .pipeline = 2, .micro_batches = 4, .framework = Framework::kMegatron};
  const ParallelPrediction sharded = Parallel(Transformer(16), layout);
  const LayoutMemory expected =
      EstimateLayoutMemory(model.memory, *models::Describe(Transformer(4)), layout);
  EXPECT_DOUBLE_EQ(sharded.memory.required(), expected.required());
  EXPECT_DOUBLE_EQ(sharded.memory.parameters, 4 * d.parameters / 4);

  models::WorkloadSpec inference = Transformer(4);
  inference.phase = models::Phase::kInference;
  absl::StatusOr<ParallelPrediction> serving =
      PredictParallel(RooflineModel(), inference, H100Node(8), {.tensor = 2});
  ASSERT_TRUE(serving.ok()) << serving.status();
  EXPECT_EQ(serving->memory.gradients, 0);
  EXPECT_EQ(serving->dp_comm_ms, 0);
}

TEST(Parallel, CheckpointingRunsTheLayersForwardAgain) {
  const ParallelPrediction plain = Parallel(Transformer(8), {});
  const ParallelPrediction checkpointed =
      Parallel(Transformer(8), {.activation_checkpointing = true});
  EXPECT_GT(checkpointed.recompute_ms, 0);
  EXPECT_NEAR(checkpointed.compute_ms, plain.compute_ms + checkpointed.recompute_ms,
              1e-9 * plain.compute_ms);
  // The forward is about a third of forward + backward.
  EXPECT_LT(checkpointed.recompute_ms, 0.5 * plain.compute_ms);
  EXPECT_NEAR(BreakdownSum(checkpointed), checkpointed.step_ms, 1e-9 * checkpointed.step_ms);
  EXPECT_LT(checkpointed.memory.activations, plain.memory.activations);
}

TEST(Parallel, CheckpointingRunsTheTensorParallelAllReducesAgain) {
  const int64_t layers = 8;
  const ParallelPrediction p =
      Parallel(Transformer(8, layers), {.tensor = 4, .activation_checkpointing = true});
  const double bytes = 8.0 * 512 * 1024 * 2;
  const double one = *CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, bytes,
                                        4, *SpecLink(H100Node(8).gpu, 4, false));
  // The re-run forward's two all-reduces per layer join the four.
  EXPECT_NEAR(p.tp_comm_ms, 1e3 * one * 6 * layers, 1e-9);
}

TEST(Parallel, MegatronPaysEachTensorParallelAllReduceOnTheCriticalPath) {
  const int64_t layers = 8;
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "tp", "tp_collective_ms": 0.1,
                     "tp_collective_ms_per_peer": 0.05}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ParallelOptions options;
  options.terms = &*terms;
  const ParallelLayout layout{.tensor = 4, .micro_batches = 3, .framework = Framework::kMegatron,
                              .activation_checkpointing = true};
  const ParallelPrediction composed = Parallel(Transformer(24, layers), layout);
  const ParallelPrediction p = Parallel(Transformer(24, layers), layout, RooflineModel(), options);
  // Three micro-batches of six all-reduces per layer and the embedding's
  // one, each 0.1 ms + 0.05 ms for each of the three other ranks.
  EXPECT_NEAR(p.implementation_ms, 3 * (6 * layers + 1) * (0.1 + 3 * 0.05), 1e-9);
  EXPECT_NEAR(p.step_ms, composed.step_ms + p.implementation_ms, 1e-9 * p.step_ms);
  EXPECT_NEAR(p.breakdown_ms.at("framework.tp"), p.implementation_ms, 1e-9);
  EXPECT_NEAR(BreakdownSum(p), p.step_ms, 1e-9 * p.step_ms);
  // Without tensor parallelism there is no such all-reduce.
  EXPECT_EQ(Parallel(Transformer(24, layers),
                     {.data = 2, .micro_batches = 3, .framework = Framework::kMegatron},
                     RooflineModel(), options)
                .implementation_ms,
            0);
}

TEST(Parallel, HostBoundStagesPaceThePipelineFillAndDrain) {
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "pp", "host_ms_per_launch": 1}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ParallelOptions options;
  options.terms = &*terms;
  const ParallelLayout layout{.pipeline = 4, .micro_batches = 2,
                              .framework = Framework::kMegatron};
  const ParallelPrediction p = Parallel(Transformer(8), layout, RooflineModel(), options);
  // One millisecond per launch dwarfs the GPU's work: the slowest stage's
  // host, per micro-batch (launches / M), paces all M + P - 1 slots.
  EXPECT_NEAR(p.step_ms, p.launches / 2 * (2 + 4 - 1), 1e-9 * p.step_ms);
}

TEST(Parallel, HostPaysPerMicroBatchSlotHoweverFewLayersAStageHolds) {
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "pp",
                     "host_ms_per_micro_batch": 1000}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ParallelOptions options;
  options.terms = &*terms;
  // The schedule's work per micro-batch on a stage does not shrink with the
  // stage's layers: four stages of two layers pay it as two of four do, once
  // per slot of 1F1B.
  for (const int p : {2, 4}) {
    const ParallelLayout layout{.pipeline = p, .micro_batches = 4,
                                .framework = Framework::kMegatron};
    const ParallelPrediction pred = Parallel(Transformer(8), layout, RooflineModel(), options);
    EXPECT_NEAR(pred.step_ms, 1000.0 * (4 + p - 1), 1e-9 * pred.step_ms) << p;
    EXPECT_NEAR(BreakdownSum(pred), pred.step_ms, 1e-9 * pred.step_ms);
  }
}

TEST(Parallel, HostPaysPerTensorParallelAllReduceGrowingWithTheRanks) {
  const int64_t layers = 8;
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "tp",
                     "host_ms_per_tp_collective": 10,
                     "host_ms_per_tp_collective_per_peer": 5}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ParallelOptions options;
  options.terms = &*terms;
  for (const int t : {2, 4}) {
    const ParallelLayout layout{.tensor = t, .micro_batches = 3,
                                .framework = Framework::kMegatron,
                                .activation_checkpointing = true};
    const ParallelPrediction p =
        Parallel(Transformer(24, layers), layout, RooflineModel(), options);
    // The host's call per all-reduce dwarfs the GPU's work: three
    // micro-batches of six all-reduces per layer and the embedding's one,
    // each 10 ms + 5 ms per rank beyond the first.
    EXPECT_NEAR(p.step_ms, 3 * (6 * layers + 1) * (10 + 5 * (t - 1)), 1e-9 * p.step_ms) << t;
  }
  // The host's share is a bound, not an addition: a step the GPU paces
  // keeps the GPU's time.
  absl::StatusOr<ParallelTerms> small = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "tp",
                     "host_ms_per_tp_collective": 1e-9}]})");
  ASSERT_TRUE(small.ok()) << small.status();
  options.terms = &*small;
  const ParallelLayout layout{.tensor = 2, .micro_batches = 3, .framework = Framework::kMegatron};
  EXPECT_EQ(Parallel(Transformer(24, layers), layout, RooflineModel(), options).implementation_ms,
            0);
}

TEST(Parallel, ImplementationTermsBoundTheComposedStep) {
  const ParallelLayout ddp{.data = 2};
  const ParallelPrediction composed = Parallel(Transformer(8), ddp);
  EXPECT_EQ(composed.implementation_ms, 0);
  EXPECT_GT(composed.launches, 0);
  EXPECT_EQ(composed.units, 8);

  // The GPU's work slowed by the implementation.
  absl::StatusOr<ParallelTerms> slower = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "gpu_scale": 0.5}]})");
  ASSERT_TRUE(slower.ok()) << slower.status();
  ParallelOptions options;
  options.terms = &*slower;
  const ParallelPrediction scaled = Parallel(Transformer(8), ddp, RooflineModel(), options);
  EXPECT_NEAR(scaled.step_ms, 1.5 * composed.step_ms, 1e-9 * composed.step_ms);
  EXPECT_NEAR(scaled.breakdown_ms.at("framework.ddp"), 0.5 * composed.step_ms,
              1e-9 * composed.step_ms);
  EXPECT_NEAR(BreakdownSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  EXPECT_NEAR(PartsSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  // Terms are per framework and strategy: Megatron's DDP and one GPU have none here.
  EXPECT_EQ(Parallel(Transformer(8), {.data = 2, .framework = Framework::kMegatron},
                     RooflineModel(), options)
                .implementation_ms,
            0);
  EXPECT_EQ(Parallel(Transformer(8), {.micro_batches = 2}, RooflineModel(), options)
                .implementation_ms,
            0);

  // Or the host's dispatch, when that takes longer.
  absl::StatusOr<ParallelTerms> host = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "host_ms_per_launch": 1,
                     "host_ms_per_unit": 10}]})");
  ASSERT_TRUE(host.ok()) << host.status();
  options.terms = &*host;
  const ParallelPrediction bound = Parallel(Transformer(8), ddp, RooflineModel(), options);
  EXPECT_NEAR(bound.step_ms, composed.launches + 80, 1e-9 * bound.step_ms);

  for (const char* bad : {"[]", R"({"terms": [{"framework": "jax", "strategy": "ddp"}]})",
                          R"({"terms": [{"framework": "pytorch", "strategy": "ddp",
                                         "gpu_scale": -1}]})",
                          R"({"terms": [{"framework": "megatron", "strategy": "tp",
                                         "tp_collective_ms": -0.1}]})",
                          R"({"terms": [{"framework": "megatron", "strategy": "pp",
                                         "host_ms_per_micro_batch": -1}]})",
                          R"({"terms": [{"framework": "megatron", "strategy": "tp",
                                         "host_ms_per_tp_collective_per_peer": -1}]})"}) {
    EXPECT_EQ(ParallelTerms::FromJson(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

// A learned interval_scale moves the band's ends toward (or away from) the
// step in proportion; without one the band is the single-GPU model's.
TEST(Parallel, IntervalScaleScalesTheBandAboutTheStep) {
  const ParallelLayout ddp{.data = 2};
  absl::StatusOr<ParallelTerms> plain = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "gpu_scale": 0.2}]})");
  absl::StatusOr<ParallelTerms> narrowed = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "gpu_scale": 0.2,
                     "interval_scale": 0.5}]})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(narrowed.ok()) << narrowed.status();
  ParallelOptions options;
  options.terms = &*plain;
  const ParallelPrediction wide = Parallel(Transformer(8), ddp, RooflineModel(), options);
  options.terms = &*narrowed;
  const ParallelPrediction narrow = Parallel(Transformer(8), ddp, RooflineModel(), options);
  ASSERT_LT(wide.lo_ms, wide.step_ms);
  ASSERT_GT(wide.hi_ms, wide.step_ms);
  EXPECT_DOUBLE_EQ(narrow.step_ms, wide.step_ms);
  EXPECT_NEAR(narrow.step_ms - narrow.lo_ms, 0.5 * (wide.step_ms - wide.lo_ms),
              1e-9 * wide.step_ms);
  EXPECT_NEAR(narrow.hi_ms - narrow.step_ms, 0.5 * (wide.hi_ms - wide.step_ms),
              1e-9 * wide.step_ms);
  EXPECT_EQ(ParallelTerms::FromJson(R"({"terms": [{"framework": "pytorch", "strategy": "ddp",
                                                   "interval_scale": -0.5}]})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A framework's own kernels re-price each GPU's work per operation class, in
// the precisions the scales were learned on only.
TEST(Parallel, FrameworkClassScalesRepriceTheirClassesInTheirPrecisions) {
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "ddp",
                     "class_scale": {"gemm": 2, "optimizer": 0.5},
                     "class_scale_precisions": ["bf16-amp"]}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ParallelOptions options;
  options.terms = &*terms;
  const ParallelLayout layout{.data = 2, .framework = Framework::kMegatron};
  const ParallelPrediction composed = Parallel(Transformer(8), layout);
  const ParallelPrediction scaled = Parallel(Transformer(8), layout, RooflineModel(), options);
  ASSERT_GT(composed.optimizer_ms, 0);
  EXPECT_NEAR(scaled.optimizer_ms, 0.5 * composed.optimizer_ms, 1e-9 * composed.optimizer_ms);
  EXPECT_NEAR(scaled.breakdown_ms.at("gemm"), 2 * composed.breakdown_ms.at("gemm"),
              1e-9 * composed.step_ms);
  EXPECT_NEAR(scaled.breakdown_ms.at("elementwise"), composed.breakdown_ms.at("elementwise"),
              1e-9 * composed.step_ms);
  EXPECT_NEAR(BreakdownSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  EXPECT_NEAR(PartsSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  // fp32 work and another framework are priced as composed.
  models::WorkloadSpec fp32 = Transformer(8);
  fp32.precision = models::Precision::kFp32;
  EXPECT_NEAR(Parallel(fp32, layout, RooflineModel(), options).step_ms,
              Parallel(fp32, layout).step_ms, 1e-9 * composed.step_ms);
  EXPECT_NEAR(Parallel(Transformer(8), {.data = 2}, RooflineModel(), options).step_ms,
              Parallel(Transformer(8), {.data = 2}).step_ms, 1e-9 * composed.step_ms);

  for (const char* bad : {
           R"({"terms": [{"framework": "megatron", "strategy": "ddp",
                          "class_scale": {"gemm": 0.8}}]})",
           R"({"terms": [{"framework": "megatron", "strategy": "ddp",
                          "class_scale": {"gemm": 0}, "class_scale_precisions": ["fp16-amp"]}]})",
           R"({"terms": [{"framework": "megatron", "strategy": "ddp",
                          "class_scale": {"matmul": 0.8},
                          "class_scale_precisions": ["fp16-amp"]}]})",
           R"({"terms": [{"framework": "megatron", "strategy": "ddp",
                          "class_scale": {"gemm": 0.8}, "class_scale_precisions": ["fp17"]}]})"}) {
    EXPECT_EQ(ParallelTerms::FromJson(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

// A GPT-style decoder: 8 layers, a tied LM head over a 16,384-token vocabulary.
models::WorkloadSpec Gpt(int64_t batch, models::Precision precision = models::Precision::kFp16Amp) {
  models::WorkloadSpec spec;
  spec.family = "decoder";
  spec.params = {{"layers", 8}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096},
                 {"seq_len", 512}, {"positions", 512}, {"vocab", 16384}};
  spec.batch_size = batch;
  spec.precision = precision;
  return spec;
}

// Megatron's vocabulary-parallel cross-entropy runs as separate fp32 kernels
// over the logits (a copy to fp32, max, subtract, exp, sum, divide; backward
// in place and a cast back), where PyTorch fuses it: more bytes and launches,
// the rest of the step alike.
TEST(Parallel, MegatronRunsItsVocabularyParallelCrossEntropyAsSeparateKernels) {
  for (models::Precision precision : {models::Precision::kFp16Amp, models::Precision::kFp32}) {
    const bool half = precision == models::Precision::kFp16Amp;
    for (int tensor : {1, 2}) {
      const ParallelPrediction pytorch =
          Parallel(Gpt(8, precision), {.data = 2, .tensor = tensor, .micro_batches = 2});
      const ParallelPrediction megatron =
          Parallel(Gpt(8, precision), {.data = 2, .tensor = tensor, .micro_batches = 2,
                                       .framework = Framework::kMegatron});
      // Each micro-batch: 17 forward kernels and 6 backward (one more each to
      // cast 16-bit logits), where PyTorch launches 2 and 2.
      EXPECT_EQ(megatron.launches - pytorch.launches, 2 * (15 + 4 + (half ? 2 : 0)))
          << tensor;
      // Split over two GPUs, Megatron's head and loss are halved where
      // DTensor's stay whole (PytorchTensorParallelKeepsTheEmbeddingAndHeadWhole).
      if (tensor > 1) continue;
      EXPECT_GT(megatron.outside_layers_ms.at("elementwise"),
                pytorch.outside_layers_ms.at("elementwise") * (half ? 1.5 : 1.2));
      EXPECT_NEAR(megatron.breakdown_ms.at("gemm"), pytorch.breakdown_ms.at("gemm"),
                  1e-9 * pytorch.step_ms);
    }
  }
}

// PyTorch's tensor parallelism as users plan it over the blocks
// (parallelize_module on each layer's projections) leaves the embedding, the
// LM head and the loss whole on every GPU; Megatron splits them by vocabulary
// and reduces the embedding's and the head's outputs across the group.
TEST(Parallel, PytorchTensorParallelKeepsTheEmbeddingAndHeadWhole) {
  const ParallelPrediction one_gpu = Parallel(Gpt(8), {});
  const ParallelPrediction pytorch = Parallel(Gpt(8), {.tensor = 2});
  const ParallelPrediction megatron =
      Parallel(Gpt(8), {.tensor = 2, .framework = Framework::kMegatron});
  EXPECT_NEAR(pytorch.outside_layers_ms.at("gemm"), one_gpu.outside_layers_ms.at("gemm"),
              1e-9 * one_gpu.step_ms);
  EXPECT_LT(megatron.outside_layers_ms.at("gemm"), 0.6 * one_gpu.outside_layers_ms.at("gemm"));
  const double bytes = 8.0 * 512 * 1024 * 2;
  const double one = *CollectiveSeconds(Collective::kAllReduce, CollectiveAlgorithm::kAuto, bytes,
                                        2, *SpecLink(H100Node(8).gpu, 2, false));
  EXPECT_NEAR(pytorch.tp_comm_ms, 1e3 * one * 4 * 8, 1e-9);
  EXPECT_NEAR(megatron.tp_comm_ms, 1e3 * one * (4 * 8 + 2), 1e-9);
}

// The work outside the layers is one of the answer's parts, and a framework
// term scales it (in the term's precisions) on the stage that runs it and in
// the bubble the other stages' share makes.
TEST(Parallel, OutsideLayersScaleRepricesTheHeadLossAndEmbedding) {
  const ParallelLayout pipelined{.pipeline = 2, .micro_batches = 4,
                                 .framework = Framework::kMegatron};
  const ParallelPrediction composed = Parallel(Gpt(16), pipelined);
  // The head and its loss bind the last stage; the embedding is the first's.
  ASSERT_TRUE(composed.outside_layers_ms.contains("gemm"));
  ASSERT_TRUE(composed.outside_layers_ms.contains("elementwise"));
  EXPECT_FALSE(composed.outside_layers_ms.contains("embedding"));
  EXPECT_GT(composed.outside_layers_bubble_ms, 0);
  double outside = 0;
  for (const auto& [op_class, ms] : composed.outside_layers_ms) {
    EXPECT_LE(ms, composed.breakdown_ms.at(op_class)) << op_class;
    outside += ms;
  }
  EXPECT_LT(outside, composed.compute_ms);
  // One GPU holds the embedding too, and makes no bubble.
  const ParallelPrediction one = Parallel(Gpt(16), {.framework = Framework::kMegatron});
  EXPECT_TRUE(one.outside_layers_ms.contains("embedding"));
  EXPECT_EQ(one.outside_layers_bubble_ms, 0);

  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "megatron", "strategy": "pp", "outside_layers_scale": 3,
                     "class_scale_precisions": ["fp16-amp"]}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_EQ(terms->Find(pipelined).OutsideLayersScale(models::Precision::kFp16Amp), 3);
  EXPECT_EQ(terms->Find(pipelined).OutsideLayersScale(models::Precision::kFp32), 1);
  ParallelOptions options;
  options.terms = &*terms;
  const ParallelPrediction scaled = Parallel(Gpt(16), pipelined, RooflineModel(), options);
  EXPECT_NEAR(scaled.compute_ms, composed.compute_ms + 2 * outside, 1e-9 * composed.step_ms);
  EXPECT_NEAR(scaled.bubble_ms, composed.bubble_ms + 2 * composed.outside_layers_bubble_ms,
              1e-9 * composed.step_ms);
  for (const auto& [op_class, ms] : composed.outside_layers_ms) {
    EXPECT_NEAR(scaled.outside_layers_ms.at(op_class), 3 * ms, 1e-9 * composed.step_ms);
  }
  EXPECT_NEAR(BreakdownSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  EXPECT_NEAR(PartsSum(scaled), scaled.step_ms, 1e-9 * scaled.step_ms);
  // Other precisions are priced as composed.
  const models::WorkloadSpec fp32 = Gpt(16, models::Precision::kFp32);
  EXPECT_NEAR(Parallel(fp32, pipelined, RooflineModel(), options).step_ms,
              Parallel(fp32, pipelined).step_ms, 1e-9 * composed.step_ms);

  for (const char* bad : {
           R"({"terms": [{"framework": "megatron", "strategy": "pp",
                          "outside_layers_scale": 2}]})",
           R"({"terms": [{"framework": "megatron", "strategy": "pp",
                          "outside_layers_scale": 0, "class_scale_precisions": ["fp16-amp"]}]})",
           R"({"terms": [{"framework": "megatron", "strategy": "pp",
                          "outside_layers_scale": "2", "class_scale_precisions": ["fp16-amp"]}]})"}) {
    EXPECT_EQ(ParallelTerms::FromJson(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(Parallel, ZeroShardsTheOptimizerStepOverTheReplicas) {
  const ParallelPrediction ddp = Parallel(Transformer(32), {.data = 4});
  ASSERT_GT(ddp.optimizer_ms, 0);
  for (int zero : {1, 2, 3}) {
    const ParallelPrediction sharded = Parallel(Transformer(32), {.data = 4, .zero = zero});
    EXPECT_NEAR(sharded.optimizer_ms, ddp.optimizer_ms / 4, 1e-9 * ddp.optimizer_ms) << zero;
    EXPECT_NEAR(sharded.compute_ms, ddp.compute_ms, 1e-9 * ddp.compute_ms) << zero;
  }
}

// FSDP calls an all-gather and a reduce-scatter per unit, and under ZeRO-3
// gathers each unit again before its backward: the host pays per call.
TEST(Parallel, ShardedDataParallelPaysTheHostPerCollectiveCall) {
  EXPECT_EQ(CollectiveCallsPerUnit({.data = 2}), 0);
  EXPECT_EQ(CollectiveCallsPerUnit({.data = 2, .zero = 1}), 2);
  EXPECT_EQ(CollectiveCallsPerUnit({.data = 2, .zero = 2}), 2);
  EXPECT_EQ(CollectiveCallsPerUnit({.data = 2, .zero = 3}), 3);
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "fsdp",
                     "host_ms_per_collective": 1000}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_EQ(terms->Find({.data = 2, .zero = 3}).host_ms_per_collective, 1000);
  ParallelOptions options;
  options.terms = &*terms;
  for (int zero : {2, 3}) {
    const ParallelPrediction p =
        Parallel(Transformer(8), {.data = 2, .zero = zero}, RooflineModel(), options);
    EXPECT_EQ(p.units, 8);
    EXPECT_NEAR(p.step_ms, 8 * CollectiveCallsPerUnit(p.layout) * 1000, 1e-9 * p.step_ms)
        << zero;
    EXPECT_NEAR(BreakdownSum(p), p.step_ms, 1e-9 * p.step_ms);
  }
}

// The host terms in the node's Python units: a node whose Python dispatches
// twice as fast halves a host-bound step.
TEST(Parallel, HostTermsFollowTheNodesPythonCostPerOperation) {
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "host_loop_scale": 1,
                     "host_hook_scale": 1000}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_EQ(terms->Find({.data = 2}).host_hook_scale, 1000);
  ParallelOptions options;
  options.terms = &*terms;
  auto on = [&](double python_op_us) {
    models::Node node = H100Node(8);
    node.measured.python_op_us = python_op_us;
    absl::StatusOr<ParallelPrediction> p =
        PredictParallel(RooflineModel(), Transformer(8), node, {.data = 2}, options);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.value_or(ParallelPrediction{});
  };
  const ParallelPrediction slow = on(10), fast = on(5);
  // The probe in the loop's state, as the single-GPU loop prices it.
  const double per_op_us = 10 * FittedPythonLoopTerms().probe_state_factor;
  EXPECT_NEAR(slow.python_op_us, per_op_us, 1e-12);
  EXPECT_NEAR(slow.python_ms_per_launch,
              FittedPythonLoopTerms().ops_per_launch_train * per_op_us / 1e3, 1e-12);
  EXPECT_EQ(slow.dispatch_scale, 1);
  EXPECT_NEAR(slow.step_ms, slow.launches * slow.python_ms_per_launch * (1 + 1000),
              1e-9 * slow.step_ms);
  EXPECT_NEAR(fast.step_ms, slow.step_ms / 2, 1e-9 * slow.step_ms);
}

// DDP's host is the model's own Python loop plus its hooks: the model's heavy
// dispatch weighs the loop's share only, and a model without it pays less
// host per launch.
TEST(Parallel, HeavyDispatchWeighsTheLoopsShareOfTheHostOnly) {
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "host_loop_scale": 1000,
                     "host_hook_scale": 3000}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  ParallelOptions options;
  options.terms = &*terms;
  const ParallelPrediction plain = Parallel(Transformer(8), {.data = 2}, RooflineModel(), options);
  options.implementation.heavy_python_dispatch = true;
  const ParallelPrediction heavy = Parallel(Transformer(8), {.data = 2}, RooflineModel(), options);
  const double scale = FittedPythonLoopTerms().heavy_dispatch_host_scale;
  EXPECT_EQ(plain.dispatch_scale, 1);
  EXPECT_EQ(heavy.dispatch_scale, scale);
  EXPECT_LT(plain.step_ms, heavy.step_ms);
  EXPECT_NEAR(heavy.step_ms / plain.step_ms, (1000 * scale + 3000) / (1000 + 3000), 1e-9);
}

// DDP's all-reduce overlaps backward on the same GPU: the compute slows by a
// share of the all-reduce's own time, whatever the compute it hides behind.
TEST(Parallel, DataParallelContentionIsAShareOfTheGradientAllReduce) {
  absl::StatusOr<ParallelTerms> terms = ParallelTerms::FromJson(
      R"({"terms": [{"framework": "pytorch", "strategy": "ddp", "dp_comm_contention": 0.5}]})");
  ASSERT_TRUE(terms.ok()) << terms.status();
  EXPECT_EQ(terms->Find({.data = 2}).dp_comm_contention, 0.5);
  ParallelOptions options;
  options.terms = &*terms;
  for (int64_t batch : {8, 32}) {
    const ParallelPrediction composed = Parallel(Transformer(batch), {.data = 2});
    const ParallelPrediction slowed =
        Parallel(Transformer(batch), {.data = 2}, RooflineModel(), options);
    ASSERT_GT(composed.dp_comm_ms, 0);
    EXPECT_NEAR(slowed.implementation_ms, 0.5 * composed.dp_comm_ms, 1e-9 * slowed.step_ms)
        << batch;
    EXPECT_NEAR(slowed.step_ms, composed.step_ms + 0.5 * composed.dp_comm_ms,
                1e-9 * slowed.step_ms)
        << batch;
    EXPECT_NEAR(BreakdownSum(slowed), slowed.step_ms, 1e-9 * slowed.step_ms);
  }
  EXPECT_EQ(ParallelTerms::FromJson(R"({"terms": [{"framework": "pytorch", "strategy": "ddp",
                                                    "dp_comm_contention": -1}]})")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The shipped DDP term slows a GPU-bound step by its gradients' all-reduce,
// not by a share of its compute: four times the batch on the same weights
// adds the same time.
TEST(Parallel, ShippedDataParallelSlowdownFollowsTheGradientsNotTheCompute) {
  auto ddp = [](int64_t batch) {
    models::Node node = H100Node(8);
    node.measured.python_op_us = 0.01;  // a host that never binds
    absl::StatusOr<ParallelPrediction> p =
        PredictParallel(RooflineModel(), Transformer(batch), node, {.data = 2});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.value_or(ParallelPrediction{});
  };
  const ParallelPrediction small = ddp(64), large = ddp(256);
  ASSERT_GT(small.implementation_ms, 0);
  EXPECT_GT(large.compute_ms, 3 * small.compute_ms);
  EXPECT_NEAR(large.dp_comm_ms, small.dp_comm_ms, 1e-9 * small.dp_comm_ms);
  EXPECT_NEAR(large.implementation_ms, small.implementation_ms, 1e-6 * small.implementation_ms);
  EXPECT_NEAR(small.implementation_ms,
              ParallelTerms::BuiltIn().Find({.data = 2}).dp_comm_contention * small.dp_comm_ms,
              1e-6 * small.implementation_ms);
}

// The shipped DDP terms are in the node's Python units: a host-bound step
// (a small batch the roofline prices at next to nothing) is faster on a node
// that dispatches faster.
TEST(Parallel, ShippedDataParallelHostFollowsTheNode) {
  auto step_on = [](double python_op_us) {
    models::Node node = H100Node(8);
    node.measured.python_op_us = python_op_us;
    absl::StatusOr<ParallelPrediction> p =
        PredictParallel(RooflineModel(), Transformer(2), node, {.data = 2});
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->step_ms : 0;
  };
  EXPECT_LT(step_on(5), 0.9 * step_on(10));
}

TEST(Parallel, ShippedTermsCoverPytorchsStrategies) {
  for (const ParallelLayout& layout :
       {ParallelLayout{.data = 2}, ParallelLayout{.data = 2, .zero = 3},
        ParallelLayout{.tensor = 2}, ParallelLayout{.pipeline = 2, .micro_batches = 2}}) {
    const ImplementationTerm term = ParallelTerms::BuiltIn().Find(layout);
    EXPECT_GT(term.rows, 0) << DescribeLayout(layout);
    EXPECT_GT(term.gpu_scale + term.dp_comm_contention + term.host_ms_per_launch +
                  term.host_ms_per_unit + term.host_ms_per_collective + term.host_loop_scale +
                  term.host_hook_scale,
              0)
        << DescribeLayout(layout);
  }
  // Megatron's, learned from vTrain's measured steps, for what it runs.
  for (const ParallelLayout& layout :
       {ParallelLayout{.data = 2, .framework = Framework::kMegatron},
        ParallelLayout{.tensor = 2, .framework = Framework::kMegatron},
        ParallelLayout{.pipeline = 2, .micro_batches = 2, .framework = Framework::kMegatron}}) {
    const ImplementationTerm term = ParallelTerms::BuiltIn().Find(layout);
    EXPECT_GT(term.rows, 0) << DescribeLayout(layout);
    EXPECT_GT(term.host_ms_per_launch, 0) << DescribeLayout(layout);
    // Its kernels per operation class in the precision vTrain ran, and a
    // band learned from rows its terms were not learned on.
    EXPECT_NE(term.ClassScale(models::OpClass::kOptimizer, models::Precision::kFp16Amp), 1)
        << DescribeLayout(layout);
    EXPECT_EQ(term.ClassScale(models::OpClass::kOptimizer, models::Precision::kFp32), 1)
        << DescribeLayout(layout);
    EXPECT_GT(term.interval_scale, 0) << DescribeLayout(layout);
  }
  EXPECT_EQ(ImplementationStrategy({}), "");
  EXPECT_EQ(ImplementationStrategy({.data = 2, .tensor = 2, .zero = 1}), "tp");
}

void ExpectInvalid(const models::WorkloadSpec& spec, ParallelLayout layout, int max_gpus,
                   const std::string& flag) {
  absl::Status s = ValidateLayout(spec, layout, max_gpus);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << flag;
  EXPECT_NE(s.message().find(flag), std::string::npos) << s.message();
  ParallelOptions options;
  options.max_gpus = max_gpus;
  EXPECT_EQ(PredictParallel(RooflineModel(), spec, H100Node(8), layout, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(Parallel, InvalidLayoutsNameTheFlag) {
  ExpectInvalid(Transformer(8), {.tensor = 3}, 0, "--tensor-parallel");  // 16 heads
  ExpectInvalid(Transformer(8, 4), {.pipeline = 5}, 0, "--pipeline-parallel");
  ExpectInvalid(Transformer(8), {.micro_batches = 0}, 0, "--micro-batches");
  ExpectInvalid(Transformer(8), {.data = -2}, 0, "--data-parallel");
  ExpectInvalid(Transformer(8), {.data = 3}, 0, "--data-parallel");  // 8 % 3
  ExpectInvalid(Transformer(8), {.data = 4, .micro_batches = 4}, 0, "--micro-batches");
  ExpectInvalid(Transformer(8), {.data = 2, .tensor = 2, .pipeline = 4}, 8, "16 GPUs");
  models::WorkloadSpec lstm;
  lstm.family = "lstm";
  lstm.batch_size = 8;
  ExpectInvalid(lstm, {.tensor = 2}, 0, "--tensor-parallel");
  ExpectInvalid(lstm, {.pipeline = 2}, 0, "--pipeline-parallel");
  EXPECT_TRUE(ValidateLayout(lstm, {.data = 8}, 8).ok());
  EXPECT_TRUE(ValidateLayout(Transformer(8),
                             {.data = 2, .tensor = 2, .pipeline = 2, .micro_batches = 2}, 8)
                  .ok());
}

TEST(Parallel, LinksFollowPlacementAndMeasurements) {
  // 16 replicas do not fit one 8-GPU node: the gradient ring crosses the network.
  const ParallelPrediction wide = Parallel(Transformer(32), {.data = 16});
  EXPECT_EQ(wide.dp_link.source, "network");
  const ParallelPrediction narrow = Parallel(Transformer(32), {.data = 8});
  EXPECT_EQ(narrow.dp_link.source, "nvlink");
  EXPECT_GT(wide.dp_comm_ms, narrow.dp_comm_ms);
  ParallelOptions measured;
  measured.measured_link = Link{40, 10, "measured"};
  const ParallelPrediction slow = Parallel(Transformer(8), {.tensor = 4}, RooflineModel(), measured);
  EXPECT_EQ(slow.tp_link.source, "measured");
  EXPECT_GT(slow.tp_comm_ms, Parallel(Transformer(8), {.tensor = 4}).tp_comm_ms);
}

}  // namespace
}  // namespace perfcast::predictor

namespace perfcast::predictor {
namespace {

TEST(Parallel, AsPredictionCarriesTheStep) {
  const ParallelPrediction p = Parallel(Transformer(16), {.data = 2, .tensor = 2});
  const Prediction q = AsPrediction(p);
  EXPECT_EQ(q.iteration_ms, p.step_ms);
  EXPECT_EQ(q.breakdown_ms, p.breakdown_ms);
  EXPECT_EQ(q.method, p.micro_batch.method);
  EXPECT_EQ(DescribeLink(p.tp_link), "nvlink 360 GB/s, 3 us");
  EXPECT_EQ(DescribeLink(p.pp_link), "");
}

}  // namespace
}  // namespace perfcast::predictor
