#include "predictor/recommend.h"

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "models/gpu_catalog.h"
#include "predictor/layout_memory.h"

namespace perfcast::predictor {
namespace {

Target Catalog(const std::string& model) {
  Target t;
  t.node.name = "catalog:" + model;
  t.node.gpu = *models::GpuCatalog::BuiltIn().Find(model);
  return t;
}

// Step time inversely proportional to FP32 rate, band ±20%; on several GPUs
// the step shrinks with the count, plus 10% for the all-reduce.
Prediction FakeStep(const models::Node& node, int count) {
  Prediction p;
  p.iteration_ms = 1000 / node.gpu.fp32_tflops * (count == 1 ? 1 : 1.1 / count);
  p.lo_ms = 0.8 * p.iteration_ms;
  p.hi_ms = 1.2 * p.iteration_ms;
  return p;
}

// Plain data parallelism over `count` GPUs at FakeStep's time, with the
// layout memory model's memory per GPU; a batch the count does not split is
// an error, as a search finds no layout for it.
LayoutSearch DataParallel(const models::WorkloadDescriptor& job) {
  return [job](const models::Node& node, int count) -> absl::StatusOr<std::vector<PricedLayout>> {
    if (job.spec.batch_size % count != 0) {
      return absl::InvalidArgumentError(absl::StrCat("a batch of ", job.spec.batch_size,
                                                     " does not split evenly over ", count));
    }
    PricedLayout priced;
    priced.layout.data = count;
    if (count == 1) {
      priced.memory = EstimateMemory(MemoryModel{}, job);
    } else {
      priced.memory = AsMemoryEstimate(
          *EstimateLayoutMemory(MemoryModel{}, job.spec, priced.layout));
    }
    priced.step = std::make_shared<const Prediction>(FakeStep(node, count));
    return std::vector<PricedLayout>{priced};
  };
}

models::WorkloadDescriptor Small() {
  models::WorkloadSpec spec;
  spec.family = "lstm";
  spec.batch_size = 8;
  return *models::Describe(spec);
}

std::vector<Target> Targets() {
  Target node;
  node.node.name = "rack7";
  node.node.gpu = *models::GpuCatalog::BuiltIn().Find("A100-SXM4-80GB");
  node.node.gpu_count = 2;
  node.registered = true;
  return {Catalog("T4-16GB"), Catalog("L4-24GB"), Catalog("H100-SXM5-80GB"), node};
}

const Recommendation& Find(const std::vector<Recommendation>& rs, const std::string& target,
                           int count = 1) {
  for (const Recommendation& r : rs) {
    if (r.target == target && r.gpu_count == count) return r;
  }
  ADD_FAILURE() << "no " << target << " x" << count;
  return rs.front();
}

TEST(Recommend, RanksByTimeCostAndEnergyWithIntervals) {
  RecommendOptions options;
  options.iterations = 3600;
  for (RankBy rank_by : {RankBy::kTime, RankBy::kCost, RankBy::kEnergy}) {
    options.rank_by = rank_by;
    absl::StatusOr<std::vector<Recommendation>> rs =
        Recommend(Small(), Targets(), DataParallel(Small()), PowerModel{},
                  models::PriceTable::BuiltIn(), options);
    ASSERT_TRUE(rs.ok()) << rs.status();
    ASSERT_EQ(rs->size(), 4u);
    for (size_t i = 0; i + 1 < rs->size(); ++i) {
      const Recommendation& a = (*rs)[i];
      const Recommendation& b = (*rs)[i + 1];
      EXPECT_EQ(a.exclusion, Exclusion::kNone);
      const double ka = rank_by == RankBy::kTime ? a.seconds
                        : rank_by == RankBy::kCost ? a.cost_usd : a.energy_kwh;
      const double kb = rank_by == RankBy::kTime ? b.seconds
                        : rank_by == RankBy::kCost ? b.cost_usd : b.energy_kwh;
      EXPECT_LE(ka, kb) << ExclusionName(a.exclusion);
    }
  }
  const absl::StatusOr<std::vector<Recommendation>> rs = Recommend(
      Small(), Targets(), DataParallel(Small()), PowerModel{}, models::PriceTable::BuiltIn(),
      options);
  ASSERT_TRUE(rs.ok());
  const Recommendation& l4 = Find(*rs, "catalog:L4-24GB");
  const double price = models::PriceTable::BuiltIn().Find("L4-24GB")->usd_per_gpu_hour;
  EXPECT_NEAR(l4.seconds, 3600 * (1000 / 30.3) / 1e3, 1e-9);
  EXPECT_NEAR(l4.cost_usd, l4.seconds / 3600 * price, 1e-9);
  EXPECT_LT(l4.cost_low_usd, l4.cost_usd);
  EXPECT_GT(l4.cost_high_usd, l4.cost_usd);
  EXPECT_NEAR(l4.energy_kwh, l4.seconds / 3600 * 72 * kDefaultUtilisation / 1e3, 1e-12);
  EXPECT_FALSE(l4.power.measured);
  ASSERT_TRUE(l4.price.has_value());
  EXPECT_EQ(l4.price->gpu, "L4-24GB");
}

TEST(Recommend, DeadlineBudgetMemoryAndCountsExcludeWithReasons) {
  RecommendOptions options;
  options.iterations = 3600;
  options.gpu_counts = {1, 2, 4};
  // T4 (8.1 TFLOPS): 123 ms/step, 444 s, high 533 s; L4 (30.3): 119 s high.
  options.deadline_seconds = 300;
  absl::StatusOr<std::vector<Recommendation>> rs =
      Recommend(Small(), Targets(), DataParallel(Small()), PowerModel{},
                models::PriceTable::BuiltIn(), options);
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_EQ(rs->size(), 12u);
  const Recommendation& t4 = Find(*rs, "catalog:T4-16GB");
  EXPECT_EQ(t4.exclusion, Exclusion::kDeadline);
  EXPECT_FALSE(t4.meets_deadline);
  EXPECT_NE(t4.reason.find("misses the deadline"), std::string::npos) << t4.reason;
  EXPECT_TRUE(Find(*rs, "catalog:L4-24GB").meets_deadline);
  EXPECT_EQ(Find(*rs, "catalog:L4-24GB").exclusion, Exclusion::kNone);
  // Four T4s make the deadline one does not, at 4 x 1.1 / 4 the GPU-hours.
  const Recommendation& t4x4 = Find(*rs, "catalog:T4-16GB", 4);
  EXPECT_EQ(t4x4.exclusion, Exclusion::kNone) << t4x4.reason;
  EXPECT_NEAR(t4x4.seconds, 1.1 / 4 * t4.seconds, 1e-9 * t4.seconds);
  EXPECT_NEAR(t4x4.cost_usd, 1.1 * t4.cost_usd, 1e-9 * t4.cost_usd);
  EXPECT_NE(Find(*rs, "rack7", 4).reason.find("has 2 GPU(s)"), std::string::npos);
  EXPECT_EQ(Find(*rs, "rack7", 2).exclusion, Exclusion::kNone);
  EXPECT_EQ(rs->front().exclusion, Exclusion::kNone);
  EXPECT_EQ(rs->back().exclusion, Exclusion::kNoPrediction);

  // A batch that does not split over the count is not predicted, and says so.
  options.gpu_counts = {3};
  rs = Recommend(Small(), Targets(), DataParallel(Small()), PowerModel{},
                 models::PriceTable::BuiltIn(), options);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(Find(*rs, "catalog:L4-24GB", 3).exclusion, Exclusion::kNoPrediction);
  EXPECT_NE(Find(*rs, "catalog:L4-24GB", 3).reason.find("does not split evenly over 3"),
            std::string::npos)
      << Find(*rs, "catalog:L4-24GB", 3).reason;

  options.gpu_counts = {1};
  options.deadline_seconds = 0;
  options.budget_usd = 0.05;  // L4: 119 s x $0.80/h = 2.7 cents (high 3.2)
  rs = Recommend(Small(), Targets(), DataParallel(Small()), PowerModel{},
                 models::PriceTable::BuiltIn(), options);
  ASSERT_TRUE(rs.ok());
  EXPECT_EQ(Find(*rs, "catalog:L4-24GB").exclusion, Exclusion::kNone);
  EXPECT_EQ(Find(*rs, "catalog:T4-16GB").exclusion, Exclusion::kBudget);

  // A model of some 5B parameters trained with Adam fits none of these in
  // memory except nothing: each candidate says so, with no time.
  models::WorkloadSpec big;
  big.family = "transformer";
  big.params = {{"layers", 32}, {"hidden", 4096}, {"heads", 32}, {"ffn", 11008},
                {"seq_len", 2048}, {"vocab", 32000}};
  big.precision = models::Precision::kBf16Amp;
  options.budget_usd = 0;
  rs = Recommend(*models::Describe(big), Targets(), DataParallel(*models::Describe(big)),
                 PowerModel{},
                 models::PriceTable::BuiltIn(), options);
  ASSERT_TRUE(rs.ok());
  for (const Recommendation& r : *rs) {
    EXPECT_EQ(r.exclusion, Exclusion::kMemory) << r.target;
    EXPECT_FALSE(r.predicted);
    EXPECT_NE(r.reason.find("does not fit"), std::string::npos);
  }
}

// Each of N data-parallel GPUs holds the whole model and 1/N of the batch:
// a step whose activations overflow one T4 fits on four.
TEST(Recommend, DataParallelGpusEachHoldTheirShareOfTheBatch) {
  models::WorkloadSpec spec;
  spec.family = "transformer";
  spec.params = {{"layers", 12}, {"hidden", 768}, {"heads", 12}, {"seq_len", 128}};
  spec.batch_size = 512;
  const models::WorkloadDescriptor whole = *models::Describe(spec);
  spec.batch_size = 128;
  const models::WorkloadDescriptor quarter = *models::Describe(spec);
  const models::GpuSpec t4 = *models::GpuCatalog::BuiltIn().Find("T4-16GB");
  ASSERT_FALSE(CheckMemoryFit(EstimateMemory(MemoryModel{}, whole), t4).fits);
  ASSERT_TRUE(CheckMemoryFit(EstimateMemory(MemoryModel{}, quarter), t4).fits);

  RecommendOptions options;
  options.iterations = 100;
  options.gpu_counts = {1, 4};
  absl::StatusOr<std::vector<Recommendation>> rs =
      Recommend(whole, {Catalog("T4-16GB")}, DataParallel(whole), PowerModel{},
                models::PriceTable::BuiltIn(), options);
  ASSERT_TRUE(rs.ok()) << rs.status();
  EXPECT_EQ(Find(*rs, "catalog:T4-16GB", 1).exclusion, Exclusion::kMemory);
  const Recommendation& four = Find(*rs, "catalog:T4-16GB", 4);
  EXPECT_EQ(four.exclusion, Exclusion::kNone) << four.reason;
  EXPECT_TRUE(four.predicted);
  // The layout memory model's, as Predict's: the replica's peak plus DDP's buckets.
  const LayoutMemory layout = EstimateLayoutMemory(MemoryModel{}, quarter, {.data = 4});
  EXPECT_DOUBLE_EQ(four.memory.peak_bytes, layout.allocated());
  EXPECT_DOUBLE_EQ(four.memory.required_bytes, layout.required());
  EXPECT_GT(four.memory.peak_bytes, EstimateMemory(MemoryModel{}, quarter).peak_bytes);
}

// A search's layouts: each count's best is its candidate, every fitting one
// with all_layouts; a layout that does not fit is dropped, never a faster or
// cheaper one, and a count none of whose layouts fits is one memory row.
TEST(Recommend, EachCountIsItsBestFittingLayout) {
  const models::WorkloadDescriptor job = Small();
  const double device = models::GpuCatalog::BuiltIn().Find("L4-24GB")->memory_gib * 1024.0 *
                        1024 * 1024;
  // Per count: ZeRO 0-3, each stage slower by 5% and needing less memory;
  // on 2 GPUs only ZeRO 3 fits, on 4 ZeRO >= 1; on 8 none.
  auto search = [&](const models::Node& node, int count)
      -> absl::StatusOr<std::vector<PricedLayout>> {
    std::vector<PricedLayout> out;
    for (int zero = 0; zero <= 3; ++zero) {
      PricedLayout& priced = out.emplace_back();
      priced.layout = {.data = count, .zero = zero};
      const int fits_from = count == 2 ? 3 : count == 4 ? 1 : 4;
      priced.memory.required_bytes = device * (zero >= fits_from ? 0.5 : 1.5 - 0.1 * zero);
      priced.memory.peak_bytes = 0.9 * priced.memory.required_bytes;
      Prediction step = FakeStep(node, count);
      step.iteration_ms *= 1 + 0.05 * zero;
      step.lo_ms *= 1 + 0.05 * zero;
      step.hi_ms *= 1 + 0.05 * zero;
      priced.step = std::make_shared<const Prediction>(step);
    }
    return out;
  };
  RecommendOptions options;
  options.iterations = 100;
  options.gpu_counts = {2, 4, 8};
  options.rank_by = RankBy::kTime;
  absl::StatusOr<std::vector<Recommendation>> rs =
      Recommend(job, {Catalog("L4-24GB")}, search, PowerModel{}, models::PriceTable::BuiltIn(),
                options);
  ASSERT_TRUE(rs.ok()) << rs.status();
  ASSERT_EQ(rs->size(), 3u);
  EXPECT_EQ(Find(*rs, "catalog:L4-24GB", 2).layout.zero, 3);
  EXPECT_EQ(Find(*rs, "catalog:L4-24GB", 4).layout.zero, 1);
  EXPECT_EQ(Find(*rs, "catalog:L4-24GB", 4).exclusion, Exclusion::kNone);
  const Recommendation& eight = Find(*rs, "catalog:L4-24GB", 8);
  EXPECT_EQ(eight.exclusion, Exclusion::kMemory);
  EXPECT_EQ(eight.layout.zero, 3);  // the nearest to fitting
  EXPECT_NE(eight.reason.find("no layout fits; the nearest, dp8·zero3"), std::string::npos)
      << eight.reason;
  // The four GPUs of ZeRO-1 beat the two of ZeRO-3.
  EXPECT_EQ(rs->front().gpu_count, 4);

  options.all_layouts = true;
  rs = Recommend(job, {Catalog("L4-24GB")}, search, PowerModel{}, models::PriceTable::BuiltIn(),
                 options);
  ASSERT_TRUE(rs.ok()) << rs.status();
  // 2 GPUs: ZeRO-3; 4: ZeRO 1-3; 8: the memory row.
  ASSERT_EQ(rs->size(), 5u);
  for (size_t i = 0; i + 1 < rs->size(); ++i) {
    if ((*rs)[i + 1].exclusion == Exclusion::kNone) {
      EXPECT_LE((*rs)[i].seconds, (*rs)[i + 1].seconds);
    }
  }
  EXPECT_EQ(rs->back().exclusion, Exclusion::kMemory);
}

TEST(Recommend, BadOptionsAreRefused) {
  RecommendOptions options;
  auto run = [&] {
    return Recommend(Small(), Targets(), DataParallel(Small()), PowerModel{},
                     models::PriceTable::BuiltIn(), options)
        .status()
        .code();
  };
  EXPECT_EQ(run(), absl::StatusCode::kInvalidArgument);  // no iterations
  options.iterations = 10;
  options.deadline_seconds = -1;
  EXPECT_EQ(run(), absl::StatusCode::kInvalidArgument);
  options.deadline_seconds = 0;
  options.gpu_counts = {0};
  EXPECT_EQ(run(), absl::StatusCode::kInvalidArgument);
  options.gpu_counts = {};
  EXPECT_EQ(run(), absl::StatusCode::kInvalidArgument);
  options.gpu_counts = {1};
  EXPECT_EQ(run(), absl::StatusCode::kOk);
  EXPECT_FALSE(ParseRankBy("speed").ok());
  EXPECT_EQ(*ParseRankBy("energy"), RankBy::kEnergy);
}

}  // namespace
}  // namespace perfcast::predictor
