// PricingPlan, the one implementation of a prediction, on a model fitted on
// the measurements shipped in data/ (and that model cut down to reach the
// other paths: level 1 alone, level 2 alone, no family models, attention
// split into GEMMs), every workload those files hold, on the measured nodes,
// every catalog GPU from its spec sheet and nodes that lack rates. One plan
// per model and node prices all the workloads, as the server's does; every
// answer must hold together: its band around it, its breakdown adding up to
// it, its level-1 sum the one fitting regresses on (Level1Plan) and the one
// the per-record times add up to.
#include "predictor/pricing_plan.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "db/store.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/predictor.h"
#include "predictor/profile_rates.h"
#include "predictor/rates.h"

namespace perfcast::predictor {
namespace {

// Exact equality of doubles, telling 0 from -0 and matching NaNs.
bool Same(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Why answers `a` and `b` differ, or "" when they do not.
std::string Difference(const absl::StatusOr<Prediction>& first,
                       const absl::StatusOr<Prediction>& second) {
  if (first.status() != second.status()) {
    return "status " + first.status().ToString() + " vs " + second.status().ToString();
  }
  if (!first.ok()) return "";
  const Prediction& a = *first;
  const Prediction& b = *second;
  auto number = [](const char* name, double x, double y) {
    return Same(x, y) ? std::string()
                      : std::string(name) + " " + std::to_string(x) + " vs " + std::to_string(y);
  };
  for (const std::string& d :
       {number("iteration_ms", a.iteration_ms, b.iteration_ms), number("lo_ms", a.lo_ms, b.lo_ms),
        number("hi_ms", a.hi_ms, b.hi_ms), number("level1_ms", a.level1_ms, b.level1_ms),
        number("breakdown_scale", a.breakdown_scale, b.breakdown_scale),
        number("host_ms", a.host_ms, b.host_ms)}) {
    if (!d.empty()) return d;
  }
  if (a.method != b.method) return "method";
  if (a.rate_source != b.rate_source) return "rate_source";
  if (a.breakdown_ms.size() != b.breakdown_ms.size()) return "breakdown classes";
  for (auto x = a.breakdown_ms.begin(), y = b.breakdown_ms.begin(); x != a.breakdown_ms.end();
       ++x, ++y) {
    if (x->first != y->first || !Same(x->second, y->second)) return "breakdown " + x->first;
  }
  if (a.features_used != b.features_used) return "features_used";
  if (a.extrapolated != b.extrapolated) return "extrapolated";
  if (a.uncalibrated_classes != b.uncalibrated_classes) return "uncalibrated_classes";
  return "";
}

// Why `answer` does not hold together, or "" when it does. `level1` is the
// model's level 1 alone, `rates` the node's as the model sees them.
std::string Inconsistency(const Prediction& answer, const Level1Plan& level1,
                          const EffectiveRates& rates, const PreparedWorkload& workload) {
  if (!std::isfinite(answer.iteration_ms) || !(answer.iteration_ms > 0)) return "iteration_ms";
  if (!(answer.lo_ms <= answer.iteration_ms && answer.iteration_ms <= answer.hi_ms)) {
    return "band " + std::to_string(answer.lo_ms) + " .. " + std::to_string(answer.hi_ms) +
           " around " + std::to_string(answer.iteration_ms);
  }
  double breakdown = 0;
  for (const auto& [op_class, ms] : answer.breakdown_ms) breakdown += ms;
  if (!(std::abs(breakdown - answer.iteration_ms) <= 1e-9 * answer.iteration_ms)) {
    return "breakdown adds up to " + std::to_string(breakdown);
  }
  absl::StatusOr<double> sum = level1.Sum(workload, rates);
  if (!sum.ok()) return "level-1 sum: " + sum.status().ToString();
  if (*sum != answer.level1_ms) return "level1_ms " + std::to_string(*sum);
  absl::StatusOr<std::vector<double>> records = level1.RecordTimes(workload, rates);
  if (!records.ok()) return "record times: " + records.status().ToString();
  if (records->size() != workload.descriptor().operations.size()) return "record count";
  double total = 0;
  for (double ms : *records) total += ms;
  if (total != answer.level1_ms) return "record times add up to " + std::to_string(total);
  return "";
}

class PricingPlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    nodes_ = new std::map<std::string, models::Node>();
    descriptors_ = new std::vector<models::WorkloadDescriptor>();
    std::vector<DescribedProfile> profiles;
    std::set<std::string> keys;
    for (const char* file : {"h100.sqlite", "h200-m1-architectures.sqlite",
                             "h200-m2-architectures.sqlite", "h200-m1-default.sqlite",
                             "h200-m2-default.sqlite", "h100-m2-default.sqlite"}) {
      absl::StatusOr<std::unique_ptr<db::Store>> store =
          db::OpenStoreReadOnly(std::string("sqlite://") + PERFCAST_DATA_DIR + "/" + file);
      ASSERT_TRUE(store.ok()) << store.status();
      ASSERT_TRUE(db::ForEachNode(**store, {}, [&](models::Node& node) {
                    nodes_->try_emplace(node.name, node);
                  }).ok());
      const bool train = std::string(file).find("h200-") == 0;  // fitted on the H200 only
      ASSERT_TRUE((*store)
                      ->ScanProfiles({},
                                     [&](const models::Profile& p) {
                                       absl::StatusOr<models::WorkloadDescriptor> d =
                                           models::Describe(models::MeasuredWorkload(p));
                                       if (!d.ok()) return true;
                                       if (keys.insert(p.workload.Key()).second) {
                                         descriptors_->push_back(*d);
                                       }
                                       if (train) profiles.push_back({p, *std::move(d)});
                                       return true;
                                     })
                      .ok());
    }
    FitOptions options;
    options.created_at_us = 1;
    absl::StatusOr<PredictorModel> model = FitDescribed(profiles, *nodes_, options);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = new PredictorModel(*std::move(model));
  }

  static void TearDownTestSuite() {
    delete model_;
    delete descriptors_;
    delete nodes_;
  }

  // Every workload on every node with `model`, one plan per node. Counts
  // the answers with extrapolated features and uncalibrated classes in
  // `extrapolated` and `uncalibrated` where given.
  static void ExpectConsistentAnswers(const PredictorModel& model, int* extrapolated = nullptr,
                                      int* uncalibrated = nullptr) {
    std::vector<models::Node> nodes;
    for (const auto& [name, node] : *nodes_) nodes.push_back(node);
    for (const models::GpuSpec& gpu : models::GpuCatalog::BuiltIn().gpus()) {
      models::Node node;
      node.name = "catalog:" + gpu.model;
      node.gpu = gpu;
      nodes.push_back(node);
    }
    models::Node no_rates;
    no_rates.name = "no-rates";
    no_rates.gpu.model = "NONE";
    nodes.push_back(no_rates);
    const Level1Plan level1(model);
    int priced = 0, failed = 0;
    for (const models::Node& node : nodes) {
      const PricingPlan plan(model, node);
      const absl::StatusOr<EffectiveRates> rates =
          ResolveRates(WithProfileRates(node, model.profile_rates), model.efficiencies);
      for (const models::WorkloadDescriptor& d : *descriptors_) {
        const absl::StatusOr<Prediction> answer = plan.Predict(d);
        ++(answer.ok() ? priced : failed);
        if (!answer.ok()) {
          EXPECT_NE(answer.status().code(), absl::StatusCode::kOk);
          continue;
        }
        ASSERT_TRUE(rates.ok()) << node.name << " priced without rates";
        ASSERT_EQ(Inconsistency(*answer, level1, *rates, PreparedWorkload(d)), "")
            << d.spec.Key() << " on " << node.name;
        if (extrapolated != nullptr) *extrapolated += !answer->extrapolated.empty();
        if (uncalibrated != nullptr) *uncalibrated += !answer->uncalibrated_classes.empty();
      }
    }
    // Both outcomes were exercised.
    EXPECT_GT(priced, 1000);
    EXPECT_GT(failed, 0);
  }

  static std::map<std::string, models::Node>* nodes_;
  static std::vector<models::WorkloadDescriptor>* descriptors_;
  static PredictorModel* model_;
};

std::map<std::string, models::Node>* PricingPlanTest::nodes_ = nullptr;
std::vector<models::WorkloadDescriptor>* PricingPlanTest::descriptors_ = nullptr;
PredictorModel* PricingPlanTest::model_ = nullptr;

TEST_F(PricingPlanTest, AnswersConsistentlyWithTheFittedModel) {
  ASSERT_FALSE(model_->level1.empty());
  ASSERT_FALSE(model_->level2.empty());
  ASSERT_FALSE(model_->level2_by_family.empty()) << "no family model: a path left untested";
  ExpectConsistentAnswers(*model_);
}

TEST_F(PricingPlanTest, AnswersConsistentlyWithLevelOneAlone) {
  PredictorModel model = *model_;
  model.level2.clear();
  model.level2_by_family.clear();
  ExpectConsistentAnswers(model);
}

TEST_F(PricingPlanTest, AnswersConsistentlyWithLevelTwoAlone) {
  PredictorModel model = *model_;
  model.level1.clear();
  ExpectConsistentAnswers(model);
}

TEST_F(PricingPlanTest, AnswersConsistentlyWithAttentionSplitIntoGemms) {
  PredictorModel model = *model_;
  ASSERT_EQ(model.level1.erase(models::OpClass::kAttention), 1u);
  ASSERT_TRUE(model.level1.contains(models::OpClass::kGemm));
  model.level2_by_family.clear();
  ExpectConsistentAnswers(model);
}

// A server prepares each workload once and prices it with every model on
// every node; the preparation moves into its cache. Answers stay those of
// the descriptor priced afresh, attention split or whole, after the move.
TEST_F(PricingPlanTest, APreparedWorkloadServesEveryModelAndNodeAfterAMove) {
  PredictorModel split_model = *model_;
  ASSERT_EQ(split_model.level1.erase(models::OpClass::kAttention), 1u);
  std::vector<PreparedWorkload> prepared;
  for (const models::WorkloadDescriptor& d : *descriptors_) {
    PreparedWorkload workload(d);
    prepared.push_back(std::move(workload));  // and again as the vector grows
  }
  int attention_workloads = 0;
  for (const models::WorkloadDescriptor& d : *descriptors_) {
    for (const models::Operation& op : d.operations) {
      if (op.op_class == models::OpClass::kAttention) {
        ++attention_workloads;
        break;
      }
    }
  }
  ASSERT_GT(attention_workloads, 0) << "no attention record: the split path left untested";
  int priced = 0;
  for (const PredictorModel* model : {model_, &split_model}) {
    for (const auto& [name, node] : *nodes_) {
      const PricingPlan plan(*model, node);
      for (const PreparedWorkload& workload : prepared) {
        absl::StatusOr<PlannedPrediction> planned = plan.PredictPlanned(workload);
        absl::StatusOr<Prediction> answer =
            planned.ok() ? absl::StatusOr<Prediction>(planned->ToPrediction()) : planned.status();
        const std::string difference =
            Difference(answer, plan.Predict(workload.descriptor()));
        ASSERT_EQ(difference, "") << workload.descriptor().spec.Key() << " on " << name;
        priced += answer.ok();
      }
    }
  }
  EXPECT_GT(priced, 100);
}

// A family model may use level1_gpu_ms without level1_ms: a second level-1
// pass on launch-free rates, and still a two-level answer.
TEST_F(PricingPlanTest, AnswersConsistentlyWithAFamilyModelOnTheGpuSumAlone) {
  PredictorModel model = *model_;
  ASSERT_FALSE(model.level2_by_family.empty());
  for (auto& [scope, fitted] : model.level2_by_family) {
    for (std::string& feature : fitted.features) {
      if (feature == "level1_ms") feature = "level1_gpu_ms";
    }
  }
  ExpectConsistentAnswers(model);
}

// Intervals come from per-regime errors and rate spreads where the model has
// them; the shipped data's fit has too few rows of each regime and may have
// no spread. Made-up ones make every interval factor of a plan distinct.
TEST_F(PricingPlanTest, AnswersConsistentlyWithLoadRegimesAndRateSpreads) {
  PredictorModel model = *model_;
  auto scaled = [](std::vector<double> quantiles, double factor) {
    for (double& q : quantiles) q *= factor;
    return quantiles;
  };
  for (auto& [op_class, fitted] : model.level1) {
    fitted.narrow_cv_error_quantiles = scaled(fitted.cv_error_quantiles, 2);
    fitted.wide_cv_error_quantiles = scaled(fitted.cv_error_quantiles, 0.5);
    fitted.narrow_transfer_error_quantiles = scaled(fitted.cv_error_quantiles, 3);
    fitted.wide_transfer_error_quantiles = scaled(fitted.cv_error_quantiles, 0.7);
  }
  model.rate_spread = {{"fp32", 0.1}, {"memory", 0.3}};
  ExpectConsistentAnswers(model);
}

// The plan lists labels by index and copies them once at the end. Training
// ranges collapsed to their lower end make most features extrapolated at
// both levels, and classes without a level-1 model are listed uncalibrated.
TEST_F(PricingPlanTest, AnswersConsistentlyWithManyExtrapolatedFeaturesAndUncalibratedClasses) {
  PredictorModel model = *model_;
  auto collapse = [](FittedModel& fitted) { fitted.feature_max = fitted.feature_min; };
  for (auto& [op_class, fitted] : model.level1) collapse(fitted);
  for (auto& [phase, fitted] : model.level2) collapse(fitted);
  for (auto& [scope, fitted] : model.level2_by_family) collapse(fitted);
  ASSERT_EQ(model.level1.erase(models::OpClass::kElementwise), 1u);
  ASSERT_EQ(model.level1.erase(models::OpClass::kNorm), 1u);
  int extrapolated = 0, uncalibrated = 0;
  ExpectConsistentAnswers(model, &extrapolated, &uncalibrated);
  EXPECT_GT(extrapolated, 1000);
  EXPECT_GT(uncalibrated, 1000);
}

}  // namespace
}  // namespace perfcast::predictor
