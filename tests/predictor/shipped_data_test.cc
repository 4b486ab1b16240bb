// The predictor on the measurements shipped in data/: what `make demo` fits.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "db/store.h"
#include "gtest/gtest.h"
#include "models/descriptor.h"
#include "models/gpu_catalog.h"
#include "predictor/evaluate.h"
#include "predictor/features.h"
#include "predictor/predictor.h"
#include "predictor/pricing_plan.h"
#include "predictor/rates.h"

namespace perfcast::predictor {
namespace {

// Adds the nodes and (when `profiles` is given) the steady-state H200
// profiles of data/`file`; a node already read keeps its first figures.
void Load(const std::string& file, std::map<std::string, models::Node>& nodes,
          std::vector<DescribedProfile>* profiles) {
  absl::StatusOr<std::unique_ptr<db::Store>> store =
      db::OpenStoreReadOnly(std::string("sqlite://") + PERFCAST_DATA_DIR + "/" + file);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE(db::ForEachNode(**store, {}, [&](models::Node& node) {
                nodes.try_emplace(node.name, node);
              }).ok());
  if (profiles == nullptr) return;
  ASSERT_TRUE((*store)
                  ->ScanProfiles({},
                                 [&](const models::Profile& p) {
                                   absl::StatusOr<models::WorkloadDescriptor> d =
                                       models::Describe(models::MeasuredWorkload(p));
                                   if (d.ok()) profiles->push_back({p, *std::move(d)});
                                   return true;
                                 })
                  .ok());
}

// The demo's fit (H200, steady-state method 2 then) predicted GPT-2 training at -50
// and -15 ms on the H100 and H200 nodes whose stored host figures came from
// the older per-step-sync runs (launch latency 8.2 and 5.2 us against the
// ~1 us of the rows it was fitted on): a negative host term extrapolated.
// Checked on those nodes, a method-2 node and the fit's own.
TEST(ShippedData, Gpt2IsNeverPredictedBelowItsRooflineOnAMeasuredNode) {
  std::map<std::string, models::Node> nodes;
  std::vector<DescribedProfile> profiles;
  // The older runs' nodes first: their figures are the ones the old answer met.
  Load("h100.sqlite", nodes, nullptr);
  Load("h200.sqlite", nodes, nullptr);
  Load("h200-m2-default.sqlite", nodes, nullptr);  // a method-2 node
  // The demo's fit: the newest method's H200 files (method 4).
  for (const char* file : {"h200-m5-architectures.sqlite", "h200-m6-architectures.sqlite",
                           "h200-m5-default.sqlite", "h200-m6-default.sqlite"}) {
    Load(file, nodes, &profiles);
  }
  ASSERT_GT(profiles.size(), 1000u);
  FitOptions options;
  options.created_at_us = 1;
  absl::StatusOr<PredictorModel> model = FitDescribed(profiles, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();

  models::WorkloadSpec gpt2;
  gpt2.kind = models::WorkloadKind::kModel;
  gpt2.family = "decoder";  // its defaults are GPT-2 small's architecture
  gpt2.batch_size = 8;
  gpt2.precision = models::Precision::kBf16Amp;
  gpt2.phase = models::Phase::kTrain;
  absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(gpt2);
  ASSERT_TRUE(d.ok()) << d.status();
  for (const char* name : {"h100-sxm-1", "h200-sxm-1", "h200-sxm-2", "h200-sxm-5", "h200-sxm-6"}) {
    SCOPED_TRACE(name);
    const models::Node& node = nodes.at(name);
    absl::StatusOr<Prediction> p = PricingPlan(*model, node).Predict(*d);
    ASSERT_TRUE(p.ok()) << p.status();
    absl::StatusOr<EffectiveRates> rates = ResolveRates(node, model->efficiencies);
    ASSERT_TRUE(rates.ok());
    EXPECT_GE(p->iteration_ms, WorkloadInputs(*d, *rates).at("roofline_ms"));
    EXPECT_LE(p->lo_ms, p->iteration_ms);
    EXPECT_GE(p->hi_ms, p->iteration_ms);
    for (const auto& [phase, m] : model->level2) {
      for (double c : m.fit.coefficients) EXPECT_GE(c, 0) << models::PhaseName(phase);
    }
  }
}

// The breakdown of a host-bound step shows the host: level 2's host terms
// (dispatch_ms, ...) are the "host" entry, the level-1 classes scaled to the
// rest. Fitted on the probed H200 files, priced on the H100 node: a 2-layer
// cnn at batch 16 (a 1.2 ms step of ~0.35 ms GPU work) is mostly host, a
// ResNet-50 at batch 256 in bf16 mostly device.
TEST(ShippedData, HostBoundStepsShowTheHostInTheirBreakdown) {
  std::map<std::string, models::Node> nodes;
  std::vector<DescribedProfile> profiles;
  for (const char* file : {"h200-m10-default.sqlite", "h200-m12-architectures.sqlite"}) {
    Load(file, nodes, &profiles);
  }
  Load("h100-m10-default.sqlite", nodes, nullptr);
  FitOptions options;
  options.created_at_us = 1;
  absl::StatusOr<PredictorModel> model = FitDescribed(profiles, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();
  const models::Node& node = nodes.at("h100-sxm-10");

  auto predict = [&](models::WorkloadSpec spec) -> absl::StatusOr<Prediction> {
    spec.kind = models::WorkloadKind::kModel;
    spec.phase = models::Phase::kTrain;
    ASSIGN_OR_RETURN(models::WorkloadDescriptor d, models::Describe(spec));
    return PricingPlan(*model, node).Predict(d);
  };
  auto adds_up = [](const Prediction& p) {
    double sum = 0;
    for (const auto& [op_class, ms] : p.breakdown_ms) sum += ms;
    EXPECT_NEAR(sum, p.iteration_ms, 1e-9 * p.iteration_ms);
    EXPECT_NEAR(p.breakdown_scale, (p.iteration_ms - p.host_ms) / p.level1_ms, 1e-12);
  };

  models::WorkloadSpec cnn;
  cnn.family = "cnn";
  cnn.params = {{"layers", 2}, {"channels", 128}};
  cnn.batch_size = 16;
  cnn.precision = models::Precision::kFp32;
  absl::StatusOr<Prediction> small = predict(cnn);
  ASSERT_TRUE(small.ok()) << small.status();
  adds_up(*small);
  EXPECT_GT(small->host_ms, 0.5 * small->iteration_ms);
  EXPECT_GE(small->breakdown_ms.at("host"), small->host_ms);

  models::WorkloadSpec resnet;
  resnet.family = "resnet_imagenet";
  resnet.params = {{"depth", 50}};
  resnet.batch_size = 256;
  resnet.precision = models::Precision::kBf16Amp;
  absl::StatusOr<Prediction> large = predict(resnet);
  ASSERT_TRUE(large.ok()) << large.status();
  adds_up(*large);
  EXPECT_LT(large->host_ms, 0.2 * large->iteration_ms);
}

// Leave-one-GPU-out whole-step report over the given shipped files: each GPU
// fit on the other alone, with the spec sheets completed from the catalog as
// the server stores them.
absl::StatusOr<EvaluationReport> LeaveOneGpuOut(std::initializer_list<const char*> files) {
  std::map<std::string, models::Node> nodes;
  std::vector<DescribedProfile> profiles;
  for (const char* file : files) Load(file, nodes, &profiles);
  for (auto& [name, node] : nodes) {
    models::CompleteFromCatalog(models::GpuCatalog::BuiltIn(), node.gpu);
  }
  EvaluateOptions options;
  options.split = Split::kLeaveOneGpuOut;
  options.fit.created_at_us = 1;
  return EvaluateDescribed(profiles, nodes, options);
}

// The 10-90% band of whole steps covers 80% +- 5%, overall and on each GPU.
void ExpectWholeStepCoverageNearEightyPercent(const EvaluationReport& report) {
  EXPECT_GE(report.level2.overall.coverage, 0.75);
  EXPECT_LE(report.level2.overall.coverage, 0.85);
  ASSERT_EQ(report.level2.by_gpu.size(), 2u);
  for (const auto& [gpu, summary] : report.level2.by_gpu) {
    EXPECT_GE(summary.coverage, 0.75) << gpu;
    EXPECT_LE(summary.coverage, 0.85) << gpu;
  }
}

// Leave-one-GPU-out on perfcast's own method-2 files (the H100's and the
// H200's, measured rates). Most steps are priced by their family's level-2
// model, whose own held-out errors (one GPU) cover about 69%; with the global
// model's band as its floor (the rule before) 94%.
TEST(ShippedData, LeaveOneGpuOutWholeStepBandsCoverEightyPercent) {
  absl::StatusOr<EvaluationReport> report = LeaveOneGpuOut(
      {"h200-m2-architectures.sqlite", "h200-m2-default.sqlite", "h200-m2-default-3r1.sqlite",
       "h200-m2-default-3r2.sqlite", "h200-m2-sizes.sqlite", "h100-m2-architectures.sqlite",
       "h100-m2-default.sqlite", "h100-m2-default-b.sqlite", "h100-m2-default-c.sqlite"});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_GT(report->level2.overall.count, 1000);
  ExpectWholeStepCoverageNearEightyPercent(*report);
}

// The same on the newest method (4) where every profile carries the host
// probe it ran under: the H200's h200-m10 default, h200-m12 architectures and
// h200-m7 intermediate sizes against the H100's h100-m10 default and
// architectures (one machine each, 2026-11-26/27). Adding the H200's m5/m6
// files, whose host figure is their run's start/end mean, drops the H200's
// coverage to 60% (data/README.md): the dispatch term then prices those
// steps with a host they did not run under.
TEST(ShippedData, LeaveOneGpuOutOnProbedNewestMethodFilesCoversEightyPercent) {
  absl::StatusOr<EvaluationReport> report = LeaveOneGpuOut(
      {"h200-m10-default.sqlite", "h200-m12-architectures.sqlite", "h200-m7-sizes.sqlite",
       "h200-m7-decoder-batches.sqlite", "h100-m10-default.sqlite",
       "h100-m10-architectures.sqlite"});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_GT(report->level2.overall.count, 500);
  EXPECT_LE(report->level2.overall.mape, 0.15);
  ExpectWholeStepCoverageNearEightyPercent(*report);
}


// Issue 30, item 4: a user's own runs calibrate their GPU and family. Fitted
// on the H200's files alone, the H100 is a GPU known from its spec sheet;
// for each family (training steps), five of its H100 runs spread over its
// sizes calibrate the model, and the family's other H100 runs are predicted
// with and without that calibration. The calibrated answers must be closer
// on the held-out runs, their bands narrower, and their method say so.
TEST(ShippedData, FiveMeasuredRunsCalibrateOtherSizesOfTheirFamilyOnThatGpu) {
  std::map<std::string, models::Node> nodes;
  std::vector<DescribedProfile> training;
  for (const char* file : {"h200-m10-default.sqlite", "h200-m12-architectures.sqlite"}) {
    Load(file, nodes, &training);
  }
  std::vector<DescribedProfile> h100;
  for (const char* file : {"h100-m10-default.sqlite", "h100-m10-architectures.sqlite"}) {
    Load(file, nodes, &h100);
  }
  for (auto& [name, node] : nodes) {
    models::CompleteFromCatalog(models::GpuCatalog::BuiltIn(), node.gpu);
    if (node.gpu.model == "H100-SXM5-80GB") node.measured = {};  // the spec sheet only
  }
  FitOptions options;
  options.created_at_us = 1;
  absl::StatusOr<PredictorModel> model = FitDescribed(training, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();

  std::map<std::string, std::vector<const DescribedProfile*>> by_family;
  for (const DescribedProfile& p : h100) {
    if (p.profile.workload.kind == models::WorkloadKind::kModel &&
        p.profile.workload.phase == models::Phase::kTrain) {
      by_family[p.profile.workload.family].push_back(&p);
    }
  }
  double before_sum = 0, after_sum = 0, width_before = 0, width_after = 0;
  int held_out = 0, covered_before = 0, covered_after = 0, families_closer = 0, families = 0;
  for (auto& [family, runs] : by_family) {
    if (runs.size() < 7) continue;  // five to calibrate, at least two to predict
    ++families;
    // Five runs spread over the family's sizes, by parameter count.
    std::sort(runs.begin(), runs.end(), [](const DescribedProfile* a, const DescribedProfile* b) {
      return std::make_pair(a->descriptor.parameters, a->profile.workload.Key()) <
             std::make_pair(b->descriptor.parameters, b->profile.workload.Key());
    });
    std::vector<DescribedProfile> measured;
    std::vector<const DescribedProfile*> others;
    for (size_t i = 0; i < runs.size(); ++i) {
      if (measured.size() < 5 && i * 5 / runs.size() == measured.size()) {
        measured.push_back(*runs[i]);
      } else {
        others.push_back(runs[i]);
      }
    }
    PredictorModel calibrated = *model;
    ASSERT_TRUE(Calibrate(calibrated, measured, nodes).ok());
    ASSERT_EQ(calibrated.calibrations.size(), 1u) << family;
    double family_before = 0, family_after = 0;
    for (const DescribedProfile* run : others) {
      const models::Node& node = nodes.at(run->profile.node_name);
      absl::StatusOr<Prediction> plain = PricingPlan(*model, node).Predict(run->descriptor);
      absl::StatusOr<Prediction> better = PricingPlan(calibrated, node).Predict(run->descriptor);
      ASSERT_TRUE(plain.ok()) << plain.status();
      ASSERT_TRUE(better.ok()) << better.status();
      EXPECT_FALSE(plain->calibrated);
      EXPECT_TRUE(better->calibrated);
      EXPECT_EQ(MethodName(better->method, better->calibrated),
                absl::StrCat(MethodName(better->method), "+calibrated"));
      const double measured_ms = run->profile.iteration.mean_ms;
      family_before += std::abs(plain->iteration_ms / measured_ms - 1);
      family_after += std::abs(better->iteration_ms / measured_ms - 1);
      width_before += std::log(plain->hi_ms / plain->lo_ms);
      width_after += std::log(better->hi_ms / better->lo_ms);
      covered_before += plain->lo_ms <= measured_ms && measured_ms <= plain->hi_ms;
      covered_after += better->lo_ms <= measured_ms && measured_ms <= better->hi_ms;
      ++held_out;
    }
    std::printf("%-16s %2zu held out: MAPE %5.1f%% -> %5.1f%% (x%.3f from 5 runs)\n",
                family.c_str(), others.size(), 100 * family_before / others.size(),
                100 * family_after / others.size(),
                calibrated.calibrations.begin()->second.factor);
    families_closer += family_after < family_before;
    before_sum += family_before;
    after_sum += family_after;
  }
  std::printf("all: %d held out, MAPE %.1f%% -> %.1f%%, 10-90%% band coverage %.0f%% -> %.0f%%, "
              "mean log width %.3f -> %.3f\n",
              held_out, 100 * before_sum / held_out, 100 * after_sum / held_out,
              100.0 * covered_before / held_out, 100.0 * covered_after / held_out,
              width_before / held_out, width_after / held_out);
  ASSERT_GE(families, 7);
  EXPECT_LT(after_sum, 0.8 * before_sum);
  EXPECT_GE(families_closer, families - 1);
  EXPECT_LT(width_after, width_before);
}

}  // namespace
}  // namespace perfcast::predictor
