// The one road from a question to an answer (Pricer::Ask), and fitting,
// over a store of synthetic profiles that follow a known roofline law.
#include "serving/pricer.h"

#include <cmath>
#include <memory>

#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/layout_search.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"
#include "serving/training.h"
#include "tests/db/test_util.h"
#include "tests/server/synthetic_store.h"

namespace perfcast::serving {
namespace {

class PricerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<db::Store>> store = db::OpenStore(dir_.File("perfcast.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    nodes_ = testing::SyntheticNodes();
    ASSERT_TRUE(testing::FillSyntheticStore(*store_, nodes_, {"beta2"}).ok());
  }

  static models::WorkloadDescriptor Lstm() {
    models::WorkloadSpec spec;
    spec.family = "lstm";
    spec.params = {{"layers", 2}, {"hidden", 256}};
    spec.batch_size = 64;
    spec.precision = models::Precision::kBf16Amp;
    absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(spec);
    EXPECT_TRUE(d.ok()) << d.status();
    return *d;
  }

  // A question about `workload` on `target`, for `job`.
  static Query QueryFor(const models::WorkloadDescriptor& workload, Target target,
                        predictor::JobSize job = {.iterations = 1}) {
    Query query;
    query.target = std::move(target);
    query.workload = WorkloadOf(workload);
    query.job = job;
    // The synthetic profiles are the agent's loop; the Python loop has a test of its own.
    query.loop = models::Loop::kCpp;
    return query;
  }

  absl::StatusOr<SavedFit> FitWithoutBeta2() {
    predictor::ProfileSelection selection;
    selection.exclude_gpu_models = {"beta2-gpu"};
    return FitAndSave(*store_, "", selection, predictor::FitOptions{},
                      [] { return absl::OkStatus(); });
  }

  testing::TempDir dir_;
  std::unique_ptr<db::Store> store_;
  std::vector<models::Node> nodes_;
};

TEST_F(PricerTest, PythonLoopIsPlannedAndKeptApartFromCpp) {
  absl::StatusOr<SavedFit> fitted = FitWithoutBeta2();
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  const models::WorkloadDescriptor lstm = Lstm();
  Query query = QueryFor(lstm, Target::Node("beta2"));
  absl::StatusOr<Answer> cpp = pricer.Ask(query);
  ASSERT_TRUE(cpp.ok()) << cpp.status();
  query.loop = models::Loop::kPython;
  absl::StatusOr<Answer> python = pricer.Ask(query);
  ASSERT_TRUE(python.ok()) << python.status();
  // Not the C++ answer kept under the same question.
  EXPECT_GE(python->price->prediction.iteration_ms, cpp->price->prediction.iteration_ms);
  EXPECT_EQ(cpp->price->prediction.loop, models::Loop::kCpp);
  EXPECT_GT(python->price->prediction.python.step.host_ms, 0);
  EXPECT_EQ(python->price->prediction.python.cpp_ms, cpp->price->prediction.iteration_ms);
  EXPECT_EQ(python->price->prediction.loop, models::Loop::kPython);
  EXPECT_EQ(python->price->loop, models::Loop::kPython);
  EXPECT_EQ(python->price->host_work.launches, lstm.kernel_launches);
  EXPECT_EQ(python->price->host_work.python_calls, lstm.python_calls);
  absl::StatusOr<models::Node> node = store_->GetNode("beta2");
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<predictor::Prediction> reference =
      predictor::PricingPlan(fitted->loaded->model, *node).Predict(lstm, models::Loop::kPython);
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(python->price->prediction.iteration_ms, reference->iteration_ms);
  ASSERT_FALSE(python->price->notes.empty());
  EXPECT_NE(python->price->notes.back().find("loop python"), std::string::npos);
}

TEST_F(PricerTest, PricesAHeldOutNodeNearTheTruthAndJobsFromIt) {
  absl::StatusOr<SavedFit> fitted = FitWithoutBeta2();
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  EXPECT_EQ(fitted->loaded->meta.name, "default");
  EXPECT_EQ(fitted->loaded->meta.version, 1);
  EXPECT_GT(fitted->profiles, 0);

  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  const models::WorkloadDescriptor lstm = Lstm();
  absl::StatusOr<Answer> answer =
      pricer.Ask(QueryFor(lstm, Target::Node("beta2"), {.samples = 6400, .epochs = 2}));
  ASSERT_TRUE(answer.ok()) << answer.status();
  const Price& price = *answer->price;
  const double truth = testing::TrueIterationMs(lstm, nodes_[3]);
  EXPECT_NEAR(price.prediction.iteration_ms, truth, 0.05 * truth);
  EXPECT_EQ(price.node->name, "beta2");
  EXPECT_EQ(price.batch_size, 64);
  EXPECT_GT(price.cv_mape, 0);
  EXPECT_EQ(price.workload, lstm.spec);

  EXPECT_EQ(answer->job.iterations, 200);
  EXPECT_DOUBLE_EQ(answer->job.seconds, 200 * price.prediction.iteration_ms / 1e3);
  EXPECT_EQ(pricer.Ask(QueryFor(lstm, Target::Node("beta2"), {.iterations = INT64_MAX}))
                .status()
                .code(),
            absl::StatusCode::kOutOfRange);

  absl::StatusOr<Answer> catalog = pricer.Ask(QueryFor(lstm, Target::CatalogGpu("H100-SXM5-80GB")));
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  EXPECT_EQ(catalog->price->node->gpu.model, "H100-SXM5-80GB");
  EXPECT_NE(catalog->price->prediction.rate_source, predictor::RateSource::kMeasured);
}

// A step too large for the GPU gets no time: the one pricing path refuses
// it (Predict, PredictBatch, sweeps and recommend alike), saying what it
// needs and what the GPU holds; where it fits, the price carries its memory.
TEST_F(PricerTest, AStepThatDoesNotFitIsRefusedAndOneThatFitsCarriesItsMemory) {
  absl::StatusOr<SavedFit> fitted = FitWithoutBeta2();
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});

  models::WorkloadSpec spec = Lstm().spec;
  spec.params = {{"layers", 16}, {"hidden", 4096}};  // 2.1e9 parameters, Adam: > 36 GiB
  spec.batch_size = 8;
  absl::StatusOr<models::WorkloadDescriptor> big = models::Describe(spec);
  ASSERT_TRUE(big.ok()) << big.status();
  ASSERT_GT(big->parameters, 2e9);
  const absl::Status l4 = pricer.Ask(QueryFor(*big, Target::CatalogGpu("L4-24GB"))).status();
  EXPECT_EQ(l4.code(), absl::StatusCode::kFailedPrecondition) << l4;
  EXPECT_NE(l4.message().find("does not fit"), std::string::npos) << l4;
  EXPECT_NE(l4.message().find("L4-24GB"), std::string::npos) << l4;

  absl::StatusOr<Answer> asked = pricer.Ask(QueryFor(*big, Target::CatalogGpu("H200-SXM-141GB")));
  ASSERT_TRUE(asked.ok()) << asked.status();
  const Price* h200 = asked->price.get();
  EXPECT_TRUE(h200->memory_verdict.fits);
  EXPECT_GT(h200->memory.peak_bytes, 16 * big->parameters);  // weights, gradients, Adam
  EXPECT_GT(h200->memory_verdict.device_bytes, h200->memory_verdict.required_bytes);
  EXPECT_GT(h200->prediction.iteration_ms, 0);

  // Inference of the same model needs its weights alone: the L4 answers.
  spec.phase = models::Phase::kInference;
  absl::StatusOr<models::WorkloadDescriptor> inference = models::Describe(spec);
  ASSERT_TRUE(inference.ok()) << inference.status();
  absl::StatusOr<Answer> answered = pricer.Ask(QueryFor(*inference, Target::CatalogGpu("L4-24GB")));
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_LT(answered->price->memory.required_bytes, answered->price->memory_verdict.device_bytes);
}

// Pricing goes through a plan kept per model and node: its answers are the
// predictor's own, and a node changed in the store is priced anew.
TEST_F(PricerTest, PricesAsThePredictorAndFollowsANodeChangedInTheStore) {
  absl::StatusOr<SavedFit> fitted = FitWithoutBeta2();
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {.node_recheck = absl::ZeroDuration()});
  absl::StatusOr<std::shared_ptr<const LoadedModel>> model = pricer.Model("");
  ASSERT_TRUE(model.ok()) << model.status();
  const models::WorkloadDescriptor lstm = Lstm();
  absl::StatusOr<models::Node> node = store_->GetNode("beta2");
  ASSERT_TRUE(node.ok()) << node.status();
  const Query query = QueryFor(lstm, Target::Node("beta2"));
  for (int repeat = 0; repeat < 2; ++repeat) {  // a plan built, then a plan kept
    absl::StatusOr<Answer> answer = pricer.Ask(query);
    ASSERT_TRUE(answer.ok()) << answer.status();
    const predictor::Prediction& price = answer->price->prediction;
    absl::StatusOr<predictor::Prediction> reference =
        predictor::PricingPlan((*model)->model, *node).Predict(lstm);
    ASSERT_TRUE(reference.ok()) << reference.status();
    EXPECT_EQ(price.iteration_ms, reference->iteration_ms);
    EXPECT_EQ(price.lo_ms, reference->lo_ms);
    EXPECT_EQ(price.hi_ms, reference->hi_ms);
    EXPECT_EQ(price.features_used, reference->features_used);
  }

  // Re-registered with half the memory bandwidth by someone else.
  const double before = pricer.Ask(query)->price->prediction.iteration_ms;
  ASSERT_TRUE(store_->DeregisterNode("beta2", /*purge_profiles=*/false).ok());
  node->measured.memory_bandwidth_gbs = *node->measured.memory_bandwidth_gbs / 2;
  ASSERT_TRUE(store_->RegisterNode(*node).ok());
  node = store_->GetNode("beta2");
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<Answer> after = pricer.Ask(query);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->price->prediction.iteration_ms,
            predictor::PricingPlan((*model)->model, *node).Predict(lstm)->iteration_ms);
  EXPECT_NE(after->price->prediction.iteration_ms, before);

  // Every spelling of a catalog GPU is one node.
  absl::StatusOr<std::shared_ptr<const models::Node>> exact =
      pricer.ResolveTarget(Target::CatalogGpu("H100-SXM5-80GB"));
  absl::StatusOr<std::shared_ptr<const models::Node>> lower =
      pricer.ResolveTarget(Target::CatalogGpu("h100-sxm5-80gb"));
  ASSERT_TRUE(exact.ok() && lower.ok());
  EXPECT_EQ(exact->get(), lower->get());
}

TEST_F(PricerTest, UnknownTargetsAndModelsAreNotFound) {
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  EXPECT_EQ(pricer.Model("").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(pricer.ResolveTarget(Target::Node("nope")).status().code(),
            absl::StatusCode::kNotFound);
  absl::Status gpu = pricer.ResolveTarget(Target::CatalogGpu("Z9000")).status();
  EXPECT_EQ(gpu.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gpu.message().find("Z9000"), std::string::npos);
  EXPECT_EQ(pricer.ResolveTarget(Target::Node("")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A GPU registered from a spec file is a --gpu like a catalog one, and an
// unknown name hears of the registered models near it.
TEST_F(PricerTest, AGpuTargetMayNameARegisteredNodesGpuModel) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  absl::StatusOr<std::shared_ptr<const models::Node>> gpu =
      pricer.ResolveTarget(Target::CatalogGpu("BETA2-GPU"));
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ((*gpu)->gpu.model, "beta2-gpu");
  EXPECT_EQ((*gpu)->measured, models::MeasuredRates{});  // priced from the spec, as the catalog's
  absl::StatusOr<Answer> answer = pricer.Ask(QueryFor(Lstm(), Target::CatalogGpu("beta2-gpu")));
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_GT(answer->price->prediction.iteration_ms, 0);
  absl::Status near = pricer.ResolveTarget(Target::CatalogGpu("beta9-gpu")).status();
  EXPECT_EQ(near.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(near.message().find("registered GPU models near it: beta"), std::string::npos) << near;
}

// Issue 29: a precision a GPU has no path for is refused on every road, and
// one PyTorch runs as something else is priced so, with a note.
TEST_F(PricerTest, PrecisionsAGpuLacksAreRefusedOrNoted) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  models::WorkloadDescriptor lstm = Lstm();  // bf16-amp
  absl::Status v100 = pricer.Ask(QueryFor(lstm, Target::CatalogGpu("V100-SXM2-32GB"))).status();
  EXPECT_EQ(v100.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(v100.message().find("V100-SXM2-32GB"), std::string::npos) << v100;
  EXPECT_TRUE(pricer.Ask(QueryFor(lstm, Target::CatalogGpu("A100-SXM4-80GB"))).ok());
  models::WorkloadSpec tf32 = lstm.spec;
  tf32.precision = models::Precision::kTf32;
  absl::StatusOr<models::WorkloadDescriptor> described = models::Describe(tf32);
  ASSERT_TRUE(described.ok());
  absl::StatusOr<Answer> noted = pricer.Ask(QueryFor(*described, Target::CatalogGpu("T4-16GB")));
  ASSERT_TRUE(noted.ok()) << noted.status();
  bool said = false;
  for (const std::string& note : noted->price->notes) said |= note.find("runs as fp32") != std::string::npos;
  EXPECT_TRUE(said);
  models::WorkloadSpec fp8 = lstm.spec;
  fp8.precision = models::Precision::kFp8;
  described = models::Describe(fp8);
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(pricer.Ask(QueryFor(*described, Target::CatalogGpu("A100-SXM4-80GB"))).status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<Answer> h100 = pricer.Ask(QueryFor(*described, Target::CatalogGpu("H100-SXM5-80GB")));
  ASSERT_TRUE(h100.ok()) << h100.status();
  absl::StatusOr<Answer> h100_bf16 = pricer.Ask(QueryFor(lstm, Target::CatalogGpu("H100-SXM5-80GB")));
  ASSERT_TRUE(h100_bf16.ok());
  EXPECT_LE(h100->price->prediction.iteration_ms, h100_bf16->price->prediction.iteration_ms);
}

TEST_F(PricerTest, AFitIsVisibleAtOnceThroughModelSaved) {
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {.model_recheck = absl::Hours(1)});
  absl::StatusOr<SavedFit> first = FitWithoutBeta2();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ((*pricer.Model(""))->meta.version, 1);
  absl::StatusOr<SavedFit> second = FitWithoutBeta2();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*pricer.Model(""))->meta.version, 1);  // cached for an hour
  pricer.ModelSaved(second->loaded);
  EXPECT_EQ((*pricer.Model(""))->meta.version, 2);
}

TEST_F(PricerTest, FitRefusesEmptySelectionsAndStopsWhenTold) {
  predictor::ProfileSelection none;
  none.gpu_models = {"no-such-gpu"};
  absl::StatusOr<SavedFit> empty =
      FitAndSave(*store_, "", none, {}, [] { return absl::OkStatus(); });
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(empty.status().message().find("gpu_models=no-such-gpu"), std::string::npos);
  absl::StatusOr<SavedFit> stopped = FitAndSave(*store_, "", {}, {}, [] {
    return absl::DeadlineExceededError("too late");
  });
  EXPECT_EQ(stopped.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->LatestModel("default").status().code(), absl::StatusCode::kNotFound);
}

// A question's problems come in one order, whatever else is wrong with it:
// its target, its workload, the server's model, the pricing, its job.
TEST_F(PricerTest, AsksReportTheQuestionsErrorsInOrder) {
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  Query bad = QueryFor(Lstm(), Target::Node("nope"));
  bad.workload.key = "bad";
  bad.workload.describe = [] {
    return WorkloadDescription{absl::InvalidArgumentError("workload.family is required"), {}};
  };
  bad.job = absl::InvalidArgumentError("job is required");
  EXPECT_EQ(pricer.Ask(bad).status().code(), absl::StatusCode::kNotFound);  // the node
  bad.target = Target::Node("");
  EXPECT_EQ(pricer.Ask(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad.target = Target::Node("beta2");
  EXPECT_EQ(pricer.Ask(bad).status().message(), "workload.family is required");
  bad.workload = WorkloadOf(Lstm());
  EXPECT_EQ(pricer.Ask(bad).status().code(), absl::StatusCode::kNotFound);  // no model yet
  ASSERT_TRUE(FitWithoutBeta2().ok());
  EXPECT_EQ(pricer.Ask(bad).status().message(), "job is required");
  bad.job = predictor::JobSize{.iterations = 3};
  absl::StatusOr<Answer> answered = pricer.Ask(bad);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->job.iterations, 3);
}

// A description is a function of the workload: each key is described once,
// and a workload without a key every time.
TEST_F(PricerTest, AWorkloadIsDescribedOncePerKey) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {.keep_answers = false});
  int described = 0;
  Query query = QueryFor(Lstm(), Target::Node("beta2"));
  query.workload.key = "lstm";
  query.workload.describe = [&] {
    ++described;
    return WorkloadDescription{Lstm(), {"a note"}};
  };
  for (const char* gpu : {"H100-SXM5-80GB", "L4-24GB", "H100-SXM5-80GB"}) {
    query.target = Target::CatalogGpu(gpu);
    absl::StatusOr<Answer> answer = pricer.Ask(query);
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->price->notes, std::vector<std::string>{"a note"});
  }
  EXPECT_EQ(described, 1);
  EXPECT_EQ(pricer.described_workloads(), 1u);
  query.workload.key.clear();
  ASSERT_TRUE(pricer.Ask(query).ok());
  ASSERT_TRUE(pricer.Ask(query).ok());
  EXPECT_EQ(described, 3);
  EXPECT_EQ(pricer.described_workloads(), 1u);
}

// A question asked again is answered from memory, for any job size; another
// layout, target or model is another question; with answers not kept, each
// is priced afresh, to the same numbers.
TEST_F(PricerTest, AnswersAreKeptPerQuestionAndModel) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {.node_recheck = absl::Hours(1)});
  Pricer afresh(*store_, models::GpuCatalog::BuiltIn(), {.keep_answers = false});
  Query query = QueryFor(Lstm(), Target::CatalogGpu("H100-SXM5-80GB"));
  absl::StatusOr<Answer> first = pricer.Ask(query);
  ASSERT_TRUE(first.ok()) << first.status();
  query.job = predictor::JobSize{.iterations = 10};
  absl::StatusOr<Answer> again = pricer.Ask(query);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->price, first->price);
  EXPECT_EQ(again->job.iterations, 10);

  absl::StatusOr<Answer> fresh = afresh.Ask(query);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_NE(fresh->price, first->price);
  EXPECT_EQ(fresh->price->prediction.iteration_ms, first->price->prediction.iteration_ms);
  EXPECT_NE(afresh.Ask(query)->price, fresh->price);

  query.layout = predictor::ParallelLayout{.data = 2};
  absl::StatusOr<Answer> layout = pricer.Ask(query);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_NE(layout->price, first->price);
  ASSERT_TRUE(layout->price->parallel.has_value());
  EXPECT_EQ(layout->price->parallel->layout.gpus(), 2);
  query.layout.reset();
  query.target = Target::CatalogGpu("L4-24GB");
  EXPECT_NE(pricer.Ask(query)->price, first->price);

  query.target = Target::CatalogGpu("H100-SXM5-80GB");
  absl::StatusOr<SavedFit> refit = FitWithoutBeta2();
  ASSERT_TRUE(refit.ok()) << refit.status();
  pricer.ModelSaved(refit->loaded);
  absl::StatusOr<Answer> refitted = pricer.Ask(query);
  ASSERT_TRUE(refitted.ok()) << refitted.status();
  EXPECT_NE(refitted->price, first->price);
  EXPECT_EQ(refitted->price->model->meta.version, 2);
}

// A layout on a registered node may use no more GPUs than the node has.
TEST_F(PricerTest, ALayoutOnANodeIsLimitedToItsGpus) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  Query query = QueryFor(Lstm(), Target::Node("beta2"));
  absl::StatusOr<models::Node> node = store_->GetNode("beta2");
  ASSERT_TRUE(node.ok()) << node.status();
  query.layout = predictor::ParallelLayout{.data = std::max(1, node->gpu_count) * 2};
  EXPECT_EQ(pricer.Ask(query).status().code(), absl::StatusCode::kInvalidArgument);
  query.target = Target::CatalogGpu("H100-SXM5-80GB");
  EXPECT_TRUE(pricer.Ask(query).ok());
}

// One memory model for every layout: a layout that does not fit is refused
// with the nearest change that fits, and every layout field keys the answer.
TEST_F(PricerTest, ALayoutThatDoesNotFitIsRefusedWithTheNearestFit) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  models::WorkloadSpec spec = Lstm().spec;
  spec.params = {{"layers", 8}, {"hidden", 6144}};
  spec.batch_size = 8;
  absl::StatusOr<models::WorkloadDescriptor> large = models::Describe(spec);
  ASSERT_TRUE(large.ok()) << large.status();
  Query query = QueryFor(*large, Target::CatalogGpu("L4-24GB"));
  query.layout = predictor::ParallelLayout{.data = 2};
  const absl::Status refused = pricer.Ask(query).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("DP2 does not fit: needs"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("; fits with"), std::string::npos) << refused;
  query.layout.reset();
  const absl::Status single = pricer.Ask(query).status();
  EXPECT_EQ(single.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(single.message().find("more GPUs"), std::string::npos) << single;

  query.target = Target::CatalogGpu("H200-SXM-141GB");
  query.layout = predictor::ParallelLayout{.data = 2};
  absl::StatusOr<Answer> ddp = pricer.Ask(query);
  ASSERT_TRUE(ddp.ok()) << ddp.status();
  query.layout->zero = 1;
  absl::StatusOr<Answer> zero1 = pricer.Ask(query);
  ASSERT_TRUE(zero1.ok()) << zero1.status();
  EXPECT_LT(zero1->price->parallel->memory.optimizer, ddp->price->parallel->memory.optimizer);
  query.layout->activation_checkpointing = true;
  absl::StatusOr<Answer> checkpointed = pricer.Ask(query);
  ASSERT_TRUE(checkpointed.ok()) << checkpointed.status();
  EXPECT_NE(checkpointed->price, zero1->price);
  query.layout->framework = predictor::Framework::kDeepspeed;
  absl::StatusOr<Answer> deepspeed = pricer.Ask(query);
  ASSERT_TRUE(deepspeed.ok()) << deepspeed.status();
  EXPECT_NE(deepspeed->price, checkpointed->price);
}

// A layout search prices through Ask's road: each layout's price is Ask's
// to the last bit, and a layout is left unpriced exactly when Ask refuses
// it for memory.
TEST_F(PricerTest, PriceLayoutsAnswersAsAskForEveryLayout) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  models::WorkloadSpec transformer;
  transformer.family = "transformer";
  transformer.params = {{"layers", 4}, {"hidden", 256}, {"heads", 8}, {"seq_len", 128}};
  transformer.batch_size = 16;
  models::WorkloadSpec large = Lstm().spec;
  large.params = {{"layers", 8}, {"hidden", 6144}};
  large.batch_size = 8;
  int priced_layouts = 0, unfit_layouts = 0;
  for (const auto& [spec, gpu] : {std::pair{transformer, "H100-SXM5-80GB"},
                                  std::pair{large, "L4-24GB"}}) {
    absl::StatusOr<models::WorkloadDescriptor> described = models::Describe(spec);
    ASSERT_TRUE(described.ok()) << described.status();
    std::vector<predictor::ParallelLayout> layouts;
    for (int count : {1, 2, 4}) {
      for (const predictor::ParallelLayout& l :
           predictor::EnumerateLayouts(spec, predictor::Framework::kPytorch, count, 0)) {
        layouts.push_back(l);
      }
    }
    Pricer searching(*store_, models::GpuCatalog::BuiltIn(), {});
    absl::StatusOr<std::vector<LayoutPrice>> priced =
        searching.PriceLayouts(QueryFor(*described, Target::CatalogGpu(gpu)), layouts);
    ASSERT_TRUE(priced.ok()) << priced.status();
    ASSERT_EQ(priced->size(), layouts.size());
    Pricer asking(*store_, models::GpuCatalog::BuiltIn(), {.keep_answers = false});
    for (const LayoutPrice& p : *priced) {
      Query query = QueryFor(*described, Target::CatalogGpu(gpu));
      if (!p.layout.single_gpu()) query.layout = p.layout;
      absl::StatusOr<Answer> asked = asking.Ask(query);
      const std::string name = predictor::DescribeLayout(p.layout);
      if (!p.price.ok()) {
        ASSERT_FALSE(asked.ok()) << name;
        EXPECT_NE(asked.status().message().find("does not fit"), std::string::npos)
            << name << ": " << asked.status();
        ++unfit_layouts;
        continue;
      }
      ASSERT_TRUE(asked.ok()) << name << ": " << asked.status();
      ++priced_layouts;
      EXPECT_EQ((*p.price)->prediction.iteration_ms, asked->price->prediction.iteration_ms)
          << name;
      EXPECT_EQ((*p.price)->prediction.lo_ms, asked->price->prediction.lo_ms) << name;
      EXPECT_EQ((*p.price)->prediction.hi_ms, asked->price->prediction.hi_ms) << name;
      EXPECT_EQ((*p.price)->prediction.breakdown_ms, asked->price->prediction.breakdown_ms)
          << name;
      if (p.layout.single_gpu()) {
        EXPECT_EQ(p.memory.required_bytes, asked->price->memory.required_bytes) << name;
      } else {
        EXPECT_EQ(p.memory.required_bytes, asked->price->parallel->memory.required()) << name;
      }
    }
  }
  EXPECT_GT(priced_layouts, 20);
  EXPECT_GT(unfit_layouts, 0);
}

TEST_F(PricerTest, AnEmptyTargetNameIsInvalid) {
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {});
  EXPECT_EQ(pricer.ResolveTarget(Target::CatalogGpu("")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pricer.ResolveTarget(Target::Node("")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A workload without a key cannot be told from another: its answers are
// never kept.
TEST_F(PricerTest, AnswersToAWorkloadWithoutAKeyAreNotKept) {
  ASSERT_TRUE(FitWithoutBeta2().ok());
  Pricer pricer(*store_, models::GpuCatalog::BuiltIn(), {.node_recheck = absl::Hours(1)});
  Query query = QueryFor(Lstm(), Target::CatalogGpu("H100-SXM5-80GB"));
  query.workload.key.clear();
  absl::StatusOr<Answer> first = pricer.Ask(query);
  absl::StatusOr<Answer> second = pricer.Ask(query);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->price, second->price);
  EXPECT_EQ(first->price->prediction.iteration_ms, second->price->prediction.iteration_ms);
}

TEST_F(PricerTest, EvaluationUnderHeldOutSizesReportsOnlyLevelTwo) {
  predictor::EvaluateOptions options;
  options.split = predictor::Split::kHeldOutSizes;
  absl::StatusOr<predictor::EvaluationResult> result =
      EvaluateSelection(*store_, {}, options, [] { return absl::OkStatus(); });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->size_threshold, 0);
  EXPECT_EQ(result->report.level1.overall.count, 0);
  EXPECT_GT(result->report.level2.overall.count, 0);
  EXPECT_EQ(result->workload_keys.size(), result->report.points.size());
  EXPECT_NE(result->report_json.find("\"split\":\"sizes\""), std::string::npos);
}

}  // namespace
}  // namespace perfcast::serving
