#include "base/status_macros.h"
#include "predictor/predictor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "gtest/gtest.h"
#include "predictor/evaluate.h"
#include "predictor/features.h"
#include "predictor/model.h"
#include "predictor/prediction_parts.h"
#include "predictor/pricing_plan.h"
#include "predictor/profile_rates.h"
#include "predictor/python_loop.h"
#include "predictor/rates.h"

namespace perfcast::predictor {
namespace {

using models::OpClass;
using models::Operation;

// Made-up GPUs. "gamma" is never profiled for training in the held-out test.
models::Node MakeNode(const std::string& name, const std::string& arch, int sms,
                      double fp32, double fp16, double bandwidth, double latency_us) {
  models::Node node;
  node.name = name;
  node.gpu.model = name + "-gpu";
  node.gpu.architecture = arch;
  node.gpu.sm_count = sms;
  node.gpu.fp32_tflops = fp32 * 1.25;  // spec sheets promise more than anyone measures
  node.gpu.fp16_tflops = fp16 * 1.25;
  node.gpu.memory_bandwidth_gbs = bandwidth * 1.25;
  node.measured.fp32_tflops = fp32;
  node.measured.fp16_tflops = fp16;
  node.measured.memory_bandwidth_gbs = bandwidth;
  node.measured.launch_latency_us = latency_us;
  node.measured.h2d_pageable_gbs = 10;
  return node;
}

std::map<std::string, models::Node> Nodes() {
  std::map<std::string, models::Node> nodes;
  for (const models::Node& node : {MakeNode("alpha1", "alpha", 40, 10, 60, 700, 6),
                                   MakeNode("alpha2", "alpha", 80, 19, 120, 1500, 5),
                                   MakeNode("beta1", "beta", 108, 18, 250, 1900, 4),
                                   MakeNode("beta2", "beta", 132, 50, 700, 3200, 3.5),
                                   MakeNode("gamma1", "gamma", 96, 30, 400, 2600, 4.5)}) {
    nodes[node.name] = node;
  }
  return nodes;
}

Operation Gemm(int64_t m, int64_t n, int64_t k, models::Precision precision) {
  Operation op;
  op.op_class = OpClass::kGemm;
  op.precision = precision;
  const double element = precision == models::Precision::kFp32 ? 4 : 2;
  op.flops = 2.0 * m * n * k;
  op.bytes = element * (m * k + k * n + m * n);
  op.work_items = std::ceil(m / 128.0) * std::ceil(n / 128.0);
  op.launches = 1;
  return op;
}

// One call of `op` on `node`, priced as the product prices an operation
// workload.
absl::StatusOr<double> PriceCall(const PredictorModel& model, const Operation& op,
                                 const models::Node& node) {
  models::WorkloadDescriptor d;
  d.spec.kind = models::WorkloadKind::kOperation;
  d.operations = {op};
  ASSIGN_OR_RETURN(Prediction p, PricingPlan(model, node).Predict(d));
  EXPECT_EQ(p.method, Method::kLevel1Operation);
  return p.iteration_ms;
}

Operation Elementwise(double elements) {
  Operation op;
  op.op_class = OpClass::kElementwise;
  op.flops = elements;
  op.bytes = 12 * elements;
  op.work_items = std::ceil(elements / 4096);
  op.launches = 1;
  return op;
}

// The known law the data follows: per-class efficiencies on roofline times.
double TrueCallMs(const Operation& op, const models::Node& node) {
  const double rate = 1e12 * (op.precision == models::Precision::kFp32 ? *node.measured.fp32_tflops
                                                                        : *node.measured.fp16_tflops);
  const double compute = 1e3 * op.flops / rate;
  const double memory = 1e3 * op.bytes / (1e9 * *node.measured.memory_bandwidth_gbs);
  const double launch = 1e-3 * *node.measured.launch_latency_us * op.launches;
  const double waves = std::ceil(op.work_items / node.gpu.sm_count);
  if (op.op_class == OpClass::kGemm) {
    return 1.3 * compute * waves * node.gpu.sm_count / op.work_items + 0.4 * memory + launch;
  }
  return 1.15 * memory + 1.0 * launch;
}

struct Synthetic {
  std::vector<DescribedProfile> profiles;
};

models::WorkloadDescriptor Workload(int layers, int batch, int hidden, models::Precision precision) {
  models::WorkloadDescriptor d;
  d.spec.kind = models::WorkloadKind::kModel;
  d.spec.family = "synthmlp";
  d.spec.params = {{"layers", layers}, {"hidden", hidden}};
  d.spec.batch_size = batch;
  d.spec.precision = precision;
  d.inner_modules = layers;
  d.input_bytes = 4.0 * batch * hidden;
  for (int direction = 0; direction < 3; ++direction) {  // fwd, bwd data, bwd weights
    Operation gemm = Gemm(batch, hidden, hidden, precision);
    gemm.count = layers;
    d.operations.push_back(gemm);
  }
  Operation act = Elementwise(static_cast<double>(batch) * hidden);
  act.count = 4 * layers;
  d.operations.push_back(act);
  return d;
}

// Iteration time: the sum of true op times, a 3% framework tax, and the
// input copy.
double TrueIterationMs(const models::WorkloadDescriptor& d, const models::Node& node) {
  double total = 0;
  for (const Operation& op : d.operations) total += op.count * TrueCallMs(op, node);
  return 1.03 * total + 1e3 * d.input_bytes / (1e9 * *node.measured.h2d_pageable_gbs);
}

Synthetic MakeProfiles(const std::map<std::string, models::Node>& nodes, double noise_sd,
                       uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, noise_sd);
  Synthetic data;
  int64_t id = 1;
  for (const auto& [name, node] : nodes) {
    for (models::Precision precision : {models::Precision::kFp32, models::Precision::kFp16Amp}) {
      for (int64_t m : {64, 256, 1024, 4096}) {
        for (int64_t n : {128, 512, 2048}) {
          for (int64_t k : {256, 1024, 4096}) {
            DescribedProfile p;
            p.profile.id = id++;
            p.profile.node_name = name;
            p.profile.workload.kind = models::WorkloadKind::kOperation;
            p.profile.workload.family = "gemm";
            p.profile.workload.params = {{"m", m}, {"n", n}, {"k", k}};
            p.profile.workload.precision = precision;
            p.descriptor.spec = p.profile.workload;
            p.descriptor.operations = {Gemm(m, n, k, precision)};
            p.profile.iteration.mean_ms =
                TrueCallMs(p.descriptor.operations[0], node) * (1 + noise(rng));
            data.profiles.push_back(p);
          }
        }
      }
    }
    for (double elements : {1e4, 1e5, 1e6, 4e6, 1.6e7, 6.4e7}) {
      DescribedProfile p;
      p.profile.id = id++;
      p.profile.node_name = name;
      p.profile.workload.kind = models::WorkloadKind::kOperation;
      p.profile.workload.family = "elementwise";
      p.descriptor.spec = p.profile.workload;
      p.descriptor.operations = {Elementwise(elements)};
      p.profile.iteration.mean_ms = TrueCallMs(p.descriptor.operations[0], node) * (1 + noise(rng));
      data.profiles.push_back(p);
    }
    for (int layers : {2, 4, 8}) {
      for (int batch : {32, 128, 512}) {
        for (int hidden : {256, 1024}) {
          for (models::Precision precision : {models::Precision::kFp32, models::Precision::kFp16Amp}) {
            DescribedProfile p;
            p.profile.id = id++;
            p.profile.node_name = name;
            p.descriptor = Workload(layers, batch, hidden, precision);
            p.profile.workload = p.descriptor.spec;
            p.profile.iteration.mean_ms = TrueIterationMs(p.descriptor, node) * (1 + noise(rng));
            data.profiles.push_back(p);
          }
        }
      }
    }
  }
  // An agent's rows: its C++ loop's steps (models::MeasuredLoop).
  for (DescribedProfile& p : data.profiles) p.profile.agent_version = "perfcast-agent 0.1.0";
  return data;
}

// The agent's fp32 whole-model runs on gamma1 ran 30% slower than the law
// the other nodes follow: what an agent-run correction should learn.
void SlowFp32ModelRunsOnGamma1(std::vector<DescribedProfile>& profiles) {
  for (DescribedProfile& p : profiles) {
    if (p.profile.node_name == "gamma1" && p.profile.workload.kind == models::WorkloadKind::kModel &&
        p.profile.workload.precision == models::Precision::kFp32) {
      p.profile.iteration.mean_ms *= 1.3;
    }
  }
}

FitOptions Options() {
  FitOptions options;
  options.created_at_us = 1'700'000'000'000'000;
  options.max_features = 4;
  return options;
}

TEST(Predictor, TwoLevelPredictsHeldOutGpuWithinAFewPercent) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.01, 17);
  std::vector<DescribedProfile> train;
  for (const DescribedProfile& p : data.profiles) {
    if (p.profile.node_name != "gamma1") train.push_back(p);
  }
  absl::StatusOr<PredictorModel> model = FitDescribed(train, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(model->level1.count(OpClass::kGemm));
  ASSERT_TRUE(model->level1.count(OpClass::kElementwise));
  ASSERT_TRUE(model->level2.count(models::Phase::kTrain));
  EXPECT_EQ(model->level2.at(models::Phase::kTrain).features.front(), "level1_ms");

  const models::Node& gamma = nodes.at("gamma1");
  double worst = 0;
  int count = 0;
  for (int layers : {3, 6}) {
    for (int batch : {64, 256}) {
      for (models::Precision precision : {models::Precision::kFp32, models::Precision::kFp16Amp}) {
        const models::WorkloadDescriptor d = Workload(layers, batch, 512, precision);
        absl::StatusOr<Prediction> p = PricingPlan(*model, gamma).Predict(d);
        ASSERT_TRUE(p.ok()) << p.status();
        const double truth = TrueIterationMs(d, gamma);
        worst = std::max(worst, std::abs(p->iteration_ms - truth) / truth);
        EXPECT_EQ(p->method, Method::kTwoLevel);
        EXPECT_EQ(p->rate_source, RateSource::kMeasured);
        EXPECT_LE(p->lo_ms, p->iteration_ms);
        EXPECT_GE(p->hi_ms, p->iteration_ms);
        EXPECT_GT(p->breakdown_ms.at("gemm"), 0);
        EXPECT_TRUE(p->uncalibrated_classes.empty());
        ++count;
      }
    }
  }
  EXPECT_EQ(count, 8);
  EXPECT_LT(worst, 0.05) << "worst relative error on the held-out GPU";

  // Level 1 alone on the held-out GPU.
  const Operation gemm = Gemm(2048, 1024, 768, models::Precision::kFp16Amp);
  absl::StatusOr<double> call = PriceCall(*model, gemm, gamma);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_NEAR(*call, TrueCallMs(gemm, gamma), 0.05 * TrueCallMs(gemm, gamma));
}

TEST(Predictor, EitherLevelAloneWorks) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.005, 3);
  FitOptions level1_only = Options();
  level1_only.fit_level2 = false;
  absl::StatusOr<PredictorModel> l1 = FitDescribed(data.profiles, nodes, level1_only);
  ASSERT_TRUE(l1.ok()) << l1.status();
  EXPECT_TRUE(l1->level2.empty());
  const models::WorkloadDescriptor d = Workload(4, 128, 1024, models::Precision::kFp32);
  absl::StatusOr<Prediction> p1 = PricingPlan(*l1, nodes.at("beta1")).Predict(d);
  ASSERT_TRUE(p1.ok()) << p1.status();
  EXPECT_EQ(p1->method, Method::kLevel1Sum);

  std::vector<DescribedProfile> models_only;
  for (const DescribedProfile& p : data.profiles) {
    if (p.profile.workload.kind == models::WorkloadKind::kModel) models_only.push_back(p);
  }
  absl::StatusOr<PredictorModel> l2 = FitDescribed(models_only, nodes, Options());
  ASSERT_TRUE(l2.ok()) << l2.status();
  EXPECT_TRUE(l2->level1.empty());
  absl::StatusOr<Prediction> p2 = PricingPlan(*l2, nodes.at("beta1")).Predict(d);
  ASSERT_TRUE(p2.ok()) << p2.status();
  EXPECT_EQ(p2->method, Method::kLevel2Direct);
  EXPECT_EQ(p2->uncalibrated_classes.size(), 2u);
  EXPECT_GT(p2->iteration_ms, 0);
  // Without level 1 nothing sees the waves of small GEMMs over the SMs, so
  // the direct model must do clearly worse than the two-level one.
  absl::StatusOr<PredictorModel> both = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(both.ok()) << both.status();
  const double direct_mape = l2->level2.at(models::Phase::kTrain).cv_mape;
  const double two_level_mape = both->level2.at(models::Phase::kTrain).cv_mape;
  EXPECT_LT(two_level_mape, 0.03);
  EXPECT_LT(two_level_mape, 0.5 * direct_mape);
}

TEST(Predictor, ErrorsAreClear) {
  const auto nodes = Nodes();
  EXPECT_EQ(FitDescribed({}, nodes, Options()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  Synthetic data = MakeProfiles(nodes, 0.0, 1);
  std::vector<DescribedProfile> few(data.profiles.begin(), data.profiles.begin() + 5);
  absl::StatusOr<PredictorModel> too_few = FitDescribed(few, nodes, Options());
  EXPECT_EQ(too_few.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(too_few.status().message().find("too few"), std::string::npos) << too_few.status();
  data.profiles[0].profile.node_name = "nowhere";
  EXPECT_EQ(FitDescribed(data.profiles, nodes, Options()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PricingPlan(PredictorModel{}, nodes.at("beta1"))
                .Predict(Workload(2, 8, 64, models::Precision::kFp32))
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(Predictor, SpecOnlyNodeUsesLearnedArchitectureEfficiency) {
  const auto nodes = Nodes();
  std::vector<const models::Node*> list;
  for (const auto& [name, node] : nodes) list.push_back(&node);
  const EfficiencyTable table = LearnEfficiencies(list);
  models::Node spec_only = nodes.at("alpha2");
  spec_only.measured = {};
  absl::StatusOr<EffectiveRates> rates = ResolveRates(spec_only, table);
  ASSERT_TRUE(rates.ok());
  EXPECT_EQ(rates->source, RateSource::kSpecTimesEfficiency);
  EXPECT_NEAR(rates->memory_bytes_per_s, 1500e9, 1e-3);
  EXPECT_NEAR(rates->FlopsPerSecond(models::Precision::kBf16Amp), 19e12, 1e-1);  // no bf16: fp32
  spec_only.gpu.architecture = "unknown-generation";
  EXPECT_EQ(ResolveRates(spec_only, table)->source, RateSource::kSpecTimesGlobalEfficiency);
  EXPECT_EQ(ResolveRates(spec_only, EfficiencyTable{})->source, RateSource::kSpec);
}

// A spec-only GPU of an architecture no node taught takes the efficiency of
// the nodes of its vendor and board-power class (a power-capped inference
// card sustains a fraction of its boost-clock rate that a 700 W board does
// not), where those nodes are power-bound what its own board power allows
// (PowerCappedEfficiency), and only without such nodes the global one; the
// table survives a model file.
TEST(Predictor, UnseenArchitectureTakesItsVendorAndPowerClassEfficiency) {
  auto with_class = [](models::Node node, double tdp_watts) {
    node.gpu.vendor = "NVIDIA";
    node.gpu.tdp_watts = tdp_watts;
    return node;
  };
  // Low-power cards sustain half their spec; big boards 80% (MakeNode's).
  models::Node small1 = with_class(MakeNode("small1", "old", 40, 5, 20, 200, 6), 70);
  small1.gpu.fp32_tflops = 10;
  models::Node small2 = with_class(MakeNode("small2", "older", 40, 5, 20, 200, 6), 75);
  small2.gpu.fp32_tflops = 10;
  const models::Node big = with_class(MakeNode("big", "big", 108, 18, 250, 1900, 4), 700);
  const std::vector<const models::Node*> list = {&small1, &small2, &big};
  const EfficiencyTable table = LearnEfficiencies(list);
  EXPECT_EQ(EfficiencyClass(small1.gpu), "NVIDIA <=100W");
  EXPECT_NEAR(table.by_class.at("NVIDIA <=100W").at("fp32"), 0.5, 1e-12);

  models::Node target = with_class(MakeNode("new", "new-generation", 60, 20, 80, 300, 5), 72);
  target.measured = {};
  target.gpu.fp32_tflops = 40;
  absl::StatusOr<EffectiveRates> rates = ResolveRates(target, table);
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_EQ(rates->source, RateSource::kSpecTimesClassEfficiency);
  EXPECT_EQ(RateSourceName(rates->source), "spec*class-efficiency");
  // The low-power nodes sustain less FP32 than the global efficiency: their
  // cap prices the target's 40 TFLOP/s by the 72 W it has for them, not at
  // their own 0.5 (they had 7-7.5 W per spec TFLOP/s, the target 1.8).
  const double cap = 0.5 / std::cbrt(std::sqrt(70.0 / 10 * 75.0 / 10));
  EXPECT_NEAR(table.power_cap_by_class.at("NVIDIA <=100W").at("fp32"), cap, 1e-12);
  EXPECT_NEAR(rates->FlopsPerSecond(models::Precision::kFp32), 40e12 * cap * std::cbrt(72.0 / 40),
              1e3);
  // Their FP16 (0.8, the global efficiency) is not power-bound: no cap, the
  // class's efficiency; nor is the big board's class.
  EXPECT_FALSE(table.power_cap_by_class.at("NVIDIA <=100W").contains("fp16"));
  EXPECT_FALSE(table.power_cap_by_class.contains("NVIDIA >450W"));
  EXPECT_NEAR(rates->FlopsPerSecond(models::Precision::kFp16Amp), 80e12, 1e3);
  // With watts to spare the cap never lifts a card above the global efficiency.
  target.gpu.fp32_tflops = 4;
  EXPECT_NEAR(ResolveRates(target, table)->FlopsPerSecond(models::Precision::kFp32),
              4e12 * table.global.at("fp32"), 1e3);
  target.gpu.tdp_watts = 300;  // no node of its class: the global efficiency
  EXPECT_EQ(ResolveRates(target, table)->source, RateSource::kSpecTimesGlobalEfficiency);
  target.gpu.vendor.clear();  // a class needs the vendor
  EXPECT_EQ(EfficiencyClass(target.gpu), "");

  PredictorModel model;
  model.efficiencies = table;
  absl::StatusOr<std::string> text = SerializeModel(model);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> parsed = ParseModel(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->efficiencies, table);
}

// A GEMM model prices both its tiled math and its tiled traffic, selected
// first whatever the training rows favour: which one they favour depends on
// which collections were measured (docs/transfer-validation.md).
TEST(Predictor, GemmModelStartsFromTiledComputeAndTraffic) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.01, 5);
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<std::string>& features = model->level1.at(OpClass::kGemm).features;
  ASSERT_GE(features.size(), 2u);
  EXPECT_EQ(features[0], "tile_compute_ms");
  EXPECT_EQ(features[1], "tile_memory_ms");
  EXPECT_TRUE(RequiredFeatures(OpClass::kElementwise).empty());
}

// FP8 and INT8 are never measured: their spec rates take the bf16
// efficiency; strict-fp32 runs on the fp32 units.
TEST(Predictor, EightBitRatesBorrowTheBf16EfficiencyAndStrictFp32IsFp32) {
  models::Node measured;
  measured.name = "m";
  measured.gpu.architecture = "hopper";
  measured.gpu.fp32_tflops = 60;
  measured.gpu.bf16_tflops = 1000;
  measured.gpu.memory_bandwidth_gbs = 3000;
  measured.measured.fp32_tflops = 45;
  measured.measured.bf16_tflops = 600;  // 0.6 of its spec
  measured.measured.memory_bandwidth_gbs = 2500;
  const models::Node* list[] = {&measured};
  const EfficiencyTable table = LearnEfficiencies(list);
  models::Node spec_only;
  spec_only.name = "s";
  spec_only.gpu = measured.gpu;
  spec_only.gpu.fp8_tflops = 2000;
  spec_only.gpu.int8_tops = 2000;
  absl::StatusOr<EffectiveRates> rates = ResolveRates(spec_only, table);
  ASSERT_TRUE(rates.ok()) << rates.status();
  EXPECT_NEAR(rates->FlopsPerSecond(models::Precision::kFp8), 0.6 * 2000e12, 1e3);
  EXPECT_NEAR(rates->FlopsPerSecond(models::Precision::kInt8), 0.6 * 2000e12, 1e3);
  EXPECT_EQ(rates->FlopsPerSecond(models::Precision::kStrictFp32),
            rates->FlopsPerSecond(models::Precision::kFp32));
  EXPECT_EQ(table.by_architecture.at("hopper").count("fp8"), 0u);
}

TEST(Model, SerialisationRoundTripsBitExactly) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.01, 5);
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  // Awkward doubles: subnormal, extremes, values with 17 significant digits.
  std::mt19937_64 rng(99);
  FittedModel& gemm = model->level1.at(OpClass::kGemm);
  gemm.cv_error_quantiles[0] = std::numeric_limits<double>::denorm_min();
  gemm.cv_error_quantiles[1] = std::numeric_limits<double>::max();
  gemm.cv_error_quantiles[2] = -std::numeric_limits<double>::min();
  for (int i = 3; i < 60; ++i) {
    uint64_t bits = rng();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    gemm.cv_error_quantiles[i] = std::isfinite(value) ? value : 0.1 * i;
  }
  absl::StatusOr<std::string> text = SerializeModel(*model);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> parsed = ParseModel(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  for (int i = 0; i < 101; ++i) {
    const double a = model->level1.at(OpClass::kGemm).cv_error_quantiles[i];
    const double b = parsed->level1.at(OpClass::kGemm).cv_error_quantiles[i];
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << i << ": " << a << " vs " << b;
  }
  EXPECT_TRUE(*parsed == *model);
  EXPECT_EQ(*SerializeModel(*parsed), *text);
  const models::WorkloadDescriptor d = Workload(5, 100, 300, models::Precision::kFp16Amp);
  const double before = PricingPlan(*model, nodes.at("gamma1")).Predict(d)->iteration_ms;
  const double after = PricingPlan(*parsed, nodes.at("gamma1")).Predict(d)->iteration_ms;
  EXPECT_EQ(std::memcmp(&before, &after, sizeof before), 0);

  gemm.fit.intercept = std::nan("");
  EXPECT_EQ(SerializeModel(*model).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseModel("{").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseModel(R"({"format_version": 2})").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A calibration is the group's mean log ratio shrunk toward 1: one run moves
// an answer less than five that agree, and scattered runs less than
// agreeing ones; its spread narrows with the runs.
TEST(Calibration, ShrinksTowardTheModelByTheRunsAndTheirScatter) {
  EXPECT_EQ(FitCalibration({}, {}).factor, 1);
  const double band = 2 * 1.2815515655446004 * 0.15;  // the model's own: 15% one sd
  const Calibration one = FitCalibration({std::log(1.2)}, {band});
  const Calibration five = FitCalibration(std::vector<double>(5, std::log(1.2)),
                                          std::vector<double>(5, band));
  const Calibration scattered = FitCalibration(
      {std::log(1.2) - 0.2, std::log(1.2) + 0.2, std::log(1.2) - 0.1, std::log(1.2) + 0.1,
       std::log(1.2)},
      std::vector<double>(5, band));
  EXPECT_GT(one.factor, 1.0);
  EXPECT_LT(one.factor, five.factor);
  EXPECT_LT(five.factor, 1.2);
  EXPECT_GT(five.factor, 1.18);
  EXPECT_LT(scattered.factor, five.factor);
  EXPECT_EQ(five.rows, 5);
  EXPECT_LT(five.log_sd, one.log_sd);
  EXPECT_LT(five.log_sd, scattered.log_sd);
  EXPECT_LT(one.log_sd, 0.15);
  // Repeats of one workload that agree within 1% pull further, and narrower.
  const Calibration repeat = FitCalibration({std::log(1.2)}, {band}, 0.01);
  EXPECT_GT(repeat.factor, one.factor);
  EXPECT_GT(repeat.factor, 1.19);
  EXPECT_LT(repeat.log_sd, 0.02);
}

// Fitted with `calibrate`, the imported whole-model runs (not an agent's)
// correct their GPU, family and phase only; the answer says so, its band
// narrows, the reference path and the plan agree, and the model file keeps
// the calibration.
TEST(Calibration, ImportedRunsCorrectTheirGroupOnly) {
  auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.01, 5);
  // The user's runs on gamma1 ran 30% slower than the agent's there.
  std::vector<DescribedProfile> runs;
  for (const DescribedProfile& p : data.profiles) {
    if (p.profile.node_name == "gamma1" && p.profile.workload.kind == models::WorkloadKind::kModel &&
        p.profile.workload.precision == models::Precision::kFp32 && runs.size() < 5) {
      DescribedProfile mine = p;
      mine.profile.agent_version = "file-import";
      mine.profile.iteration.mean_ms *= 1.3;
      runs.push_back(mine);
    }
  }
  ASSERT_EQ(runs.size(), 5u);
  std::vector<DescribedProfile> with_runs = data.profiles;
  with_runs.insert(with_runs.end(), runs.begin(), runs.end());
  FitOptions options = Options();
  options.calibrate_measured = false;  // the user's runs alone (the agent's: the next test)
  absl::StatusOr<PredictorModel> plain = FitDescribed(with_runs, nodes, options);
  options.calibrate = true;
  absl::StatusOr<PredictorModel> calibrated = FitDescribed(with_runs, nodes, options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(calibrated.ok()) << calibrated.status();
  EXPECT_TRUE(plain->calibrations.empty());
  ASSERT_EQ(calibrated->calibrations.size(), 1u);
  EXPECT_EQ(calibrated->calibrations.begin()->first, "gamma1-gpu/synthmlp/train");
  EXPECT_THAT(calibrated->notes,
              ::testing::Contains(::testing::HasSubstr("calibrated gamma1-gpu/synthmlp/train on 5")));

  const models::WorkloadDescriptor d = Workload(6, 64, 512, models::Precision::kFp32);
  // The user's runs are Python loops: their calibration corrects a Python loop's answer.
  absl::StatusOr<Prediction> before =
      PricingPlan(*plain, nodes.at("gamma1")).Predict(d, models::Loop::kPython);
  absl::StatusOr<Prediction> after =
      PricingPlan(*calibrated, nodes.at("gamma1")).Predict(d, models::Loop::kPython);
  ASSERT_TRUE(before.ok() && after.ok());
  const double truth = 1.3 * TrueIterationMs(d, nodes.at("gamma1"));
  EXPECT_LT(std::abs(after->iteration_ms - truth), std::abs(before->iteration_ms - truth));
  // Never wider than the model's own (up to rounding: the band is taken apart in log space
  // and put together again around the calibrated answer).
  EXPECT_LE(after->hi_ms / after->lo_ms, (before->hi_ms / before->lo_ms) * (1 + 1e-12));
  EXPECT_TRUE(after->calibrated);
  EXPECT_EQ(MethodName(after->method, after->calibrated), "two-level+calibrated");
  EXPECT_THAT(after->features_used,
              ::testing::Contains("calibration/gamma1-gpu/synthmlp/train:measured_runs"));
  double sum = 0;
  for (const auto& [op_class, ms] : after->breakdown_ms) sum += ms;
  EXPECT_NEAR(sum, after->iteration_ms, 1e-9 * after->iteration_ms);

  // Another GPU, and the same GPU's inference, keep the model's answer.
  for (const auto& [node, phase] : {std::pair{"beta1", models::Phase::kTrain},
                                    std::pair{"gamma1", models::Phase::kInference}}) {
    models::WorkloadDescriptor other = d;
    other.spec.phase = phase;
    absl::StatusOr<Prediction> p = PricingPlan(*calibrated, nodes.at(node)).Predict(other);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_FALSE(p->calibrated) << node;
  }

  absl::StatusOr<std::string> text = SerializeModel(*calibrated);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> parsed = ParseModel(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->calibrations == calibrated->calibrations);
  EXPECT_EQ(SerializeModel(*plain)->find("calibrations"), std::string::npos);
}

// The agent's own runs calibrate the C++ step of their GPU, family, phase
// and precision. Where one group's runs sit apart from what the shared terms
// give (gamma1's fp32 steps 30% slower than the law), a size none of them ran
// moves toward that, its band narrows, a Python loop is composed on the
// corrected step, the other precision there keeps (about) its answer; a
// workload they measured (on beta1, 20% off the law) moves toward its own
// runs; and the model file keeps the corrections.
TEST(Calibration, AgentRunsCorrectTheirGpuFamilyPhaseAndPrecision) {
  auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.01, 5);
  SlowFp32ModelRunsOnGamma1(data.profiles);
  // One workload on beta1 that the law misses: its own runs answer it.
  const models::WorkloadDescriptor odd = Workload(8, 512, 1024, models::Precision::kFp32);
  double odd_ms = 0;
  for (DescribedProfile& p : data.profiles) {
    if (p.profile.node_name == "beta1" && p.profile.workload == odd.spec) {
      p.profile.iteration.mean_ms *= 1.2;
      p.profile.repeat_cv = 0.01;  // its repeats agree, as an agent's do
      odd_ms = p.profile.iteration.mean_ms;
    }
  }
  ASSERT_GT(odd_ms, 0);
  FitOptions options = Options();
  options.calibrate_measured = false;
  absl::StatusOr<PredictorModel> plain = FitDescribed(data.profiles, nodes, options);
  options.calibrate_measured = true;
  absl::StatusOr<PredictorModel> calibrated = FitDescribed(data.profiles, nodes, options);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(calibrated.ok()) << calibrated.status();
  EXPECT_TRUE(plain->measured_calibrations.empty());
  EXPECT_TRUE(calibrated->calibrations.empty());
  auto group = calibrated->measured_calibrations.find("gamma1-gpu/synthmlp/train/fp32");
  ASSERT_NE(group, calibrated->measured_calibrations.end());
  EXPECT_GT(group->second.factor, 1.1);
  EXPECT_EQ(group->second.rows, 18);

  const models::Node& gamma = nodes.at("gamma1");
  const models::WorkloadDescriptor d = Workload(6, 64, 512, models::Precision::kFp32);
  const double truth = 1.3 * TrueIterationMs(d, gamma);
  absl::StatusOr<Prediction> before = PricingPlan(*plain, gamma).Predict(d);
  absl::StatusOr<Prediction> after = PricingPlan(*calibrated, gamma).Predict(d);
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_LT(std::abs(after->iteration_ms / truth - 1), 0.05);
  EXPECT_LT(std::abs(after->iteration_ms - truth), 0.5 * std::abs(before->iteration_ms - truth));
  EXPECT_LT(after->hi_ms / after->lo_ms, before->hi_ms / before->lo_ms);
  EXPECT_TRUE(after->calibrated);
  EXPECT_THAT(after->features_used,
              ::testing::Contains("calibration/gamma1-gpu/synthmlp/train/fp32:measured_runs"));
  absl::StatusOr<Prediction> python =
      PricingPlan(*calibrated, gamma).Predict(d, models::Loop::kPython);
  ASSERT_TRUE(python.ok()) << python.status();
  EXPECT_DOUBLE_EQ(python->python.cpp_ms, after->iteration_ms);
  EXPECT_THAT(after->features_used,
              ::testing::Not(::testing::Contains(::testing::HasSubstr("/model/synthmlp"))));

  // The measured workload: its group's correction and then its own runs'.
  const std::string odd_label =
      absl::StrCat("calibration/beta1-gpu/", odd.spec.Key(), ":measured_runs");
  EXPECT_EQ(calibrated->run_calibrations.count(absl::StrCat("beta1-gpu/", odd.spec.Key())), 1u);
  absl::StatusOr<Prediction> odd_before = PricingPlan(*plain, nodes.at("beta1")).Predict(odd);
  absl::StatusOr<Prediction> odd_after = PricingPlan(*calibrated, nodes.at("beta1")).Predict(odd);
  ASSERT_TRUE(odd_before.ok() && odd_after.ok());
  EXPECT_THAT(odd_after->features_used, ::testing::Contains(odd_label));
  EXPECT_LT(std::abs(odd_after->iteration_ms / odd_ms - 1),
            0.8 * std::abs(odd_before->iteration_ms / odd_ms - 1));
  EXPECT_LE(odd_after->hi_ms / odd_after->lo_ms, odd_before->hi_ms / odd_before->lo_ms);

  const models::WorkloadDescriptor amp = Workload(6, 64, 512, models::Precision::kFp16Amp);
  absl::StatusOr<Prediction> amp_before = PricingPlan(*plain, gamma).Predict(amp);
  absl::StatusOr<Prediction> amp_after = PricingPlan(*calibrated, gamma).Predict(amp);
  ASSERT_TRUE(amp_before.ok() && amp_after.ok());
  EXPECT_THAT(amp_after->features_used,
              ::testing::Not(::testing::Contains(
                  "calibration/gamma1-gpu/synthmlp/train/fp32:measured_runs")));
  const double amp_truth = TrueIterationMs(amp, gamma);
  EXPECT_LT(std::abs(amp_after->iteration_ms / amp_truth - 1),
            std::abs(amp_before->iteration_ms / amp_truth - 1) + 0.02);

  absl::StatusOr<std::string> text = SerializeModel(*calibrated);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> parsed = ParseModel(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->measured_calibrations == calibrated->measured_calibrations);
  EXPECT_TRUE(parsed->run_calibrations == calibrated->run_calibrations);
  EXPECT_EQ(SerializeModel(*plain)->find("measured_calibrations"), std::string::npos);
  EXPECT_EQ(SerializeModel(*plain)->find("run_calibrations"), std::string::npos);
}

// The group's runs are compared with answers out of fold: each run's entry
// moves its answer, and so the group's ratio, by exactly that much; a list
// that is not one per run is refused; and a fit passes its regression's
// out-of-fold answers (the group's ratio differs from the one in sample).
TEST(Calibration, AgentGroupsCompareRunsWithAnswersOutOfFold) {
  auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.03, 7);
  SlowFp32ModelRunsOnGamma1(data.profiles);
  absl::StatusOr<PredictorModel> fitted = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(fitted.ok()) << fitted.status();
  const std::string key = "gamma1-gpu/synthmlp/train/fp32";
  ASSERT_EQ(fitted->measured_calibrations.count(key), 1u);
  std::vector<DescribedProfile> runs;
  for (const DescribedProfile& p : data.profiles) {
    if (p.profile.workload.kind == models::WorkloadKind::kModel) runs.push_back(p);
  }
  PredictorModel in_sample = *fitted;
  ASSERT_TRUE(CalibrateMeasured(in_sample, runs, {}, nodes).ok());
  PredictorModel moved = *fitted;
  ASSERT_TRUE(
      CalibrateMeasured(moved, runs, std::vector<double>(runs.size(), std::log(1.1)), nodes).ok());
  const Calibration& base = in_sample.measured_calibrations.at(key);
  EXPECT_NEAR(moved.measured_calibrations.at(key).raw_log_ratio,
              base.raw_log_ratio - std::log(1.1), 1e-12);
  EXPECT_NE(fitted->measured_calibrations.at(key).raw_log_ratio, base.raw_log_ratio);
  PredictorModel refused = *fitted;
  EXPECT_EQ(CalibrateMeasured(refused, runs, {0.0}, nodes).code(),
            absl::StatusCode::kInvalidArgument);
}

// Among the sizes its runs measured, an agent group's answer shows the runs'
// scatter (narrower than the model's band where they agree); a size none of
// them ran shows that scatter widened by how far the groups' corrections
// missed a size left out, whole (not clipped to the model's band), and wider
// when the corrections differ by size; the sizes survive the model file,
// and a file without them gives every size the runs' scatter.
TEST(Calibration, AgentGroupBandBeyondItsSizesIsWhatCarryingItMissed) {
  Calibration c;
  c.log_sd = 0.05;
  EXPECT_FALSE(c.Beyond(100));
  EXPECT_EQ(c.LogSdFor(100), 0.05);
  c.min_inner_modules = 2;
  c.max_inner_modules = 8;
  c.beyond_log_sd = 0.2;
  EXPECT_EQ(c.LogSdFor(2), 0.05);
  EXPECT_EQ(c.LogSdFor(8), 0.05);
  EXPECT_EQ(c.LogSdFor(1), 0.2);
  EXPECT_TRUE(c.Beyond(16));
  EXPECT_EQ(c.LogSdFor(16), 0.2);

  auto nodes = Nodes();
  const std::string key = "gamma1-gpu/synthmlp/train/fp32";
  // gamma1's fp32 steps 30% slower than the law; with `by_size`, the 8-layer
  // ones 60% slower.
  auto fit = [&](bool by_size, bool calibrate) {
    Synthetic data = MakeProfiles(nodes, 0.01, 5);
    for (DescribedProfile& p : data.profiles) {
      if (p.profile.node_name == "gamma1" &&
          p.profile.workload.kind == models::WorkloadKind::kModel &&
          p.profile.workload.precision == models::Precision::kFp32) {
        p.profile.iteration.mean_ms *= by_size && p.descriptor.inner_modules == 8 ? 1.6 : 1.3;
      }
    }
    FitOptions options = Options();
    options.calibrate_measured = calibrate;
    absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, options);
    EXPECT_TRUE(model.ok()) << model.status();
    return *std::move(model);
  };
  const PredictorModel plain = fit(false, false);
  const PredictorModel calibrated = fit(false, true);
  const Calibration& group = calibrated.measured_calibrations.at(key);
  EXPECT_EQ(group.min_inner_modules, 2);
  EXPECT_EQ(group.max_inner_modules, 8);
  EXPECT_GT(group.beyond_log_sd, group.log_sd);
  EXPECT_GT(fit(true, true).measured_calibrations.at(key).beyond_log_sd,
            1.5 * group.beyond_log_sd);

  const models::Node& gamma = nodes.at("gamma1");
  auto width = [](const Prediction& p) { return p.hi_ms / p.lo_ms; };
  const models::WorkloadDescriptor inside = Workload(6, 64, 512, models::Precision::kFp32);
  absl::StatusOr<Prediction> before = PricingPlan(plain, gamma).Predict(inside);
  absl::StatusOr<Prediction> after = PricingPlan(calibrated, gamma).Predict(inside);
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_TRUE(after->calibrated);
  const double z90 = internal::kBandZ90;  // the band's z-score, as the calibration uses it
  EXPECT_LT(std::log(width(*after)), 0.8 * std::log(width(*before)));
  EXPECT_LE(std::log(width(*after)), 2 * z90 * group.log_sd + 1e-9);
  const models::WorkloadDescriptor larger = Workload(16, 64, 512, models::Precision::kFp32);
  absl::StatusOr<Prediction> beyond = PricingPlan(calibrated, gamma).Predict(larger);
  ASSERT_TRUE(beyond.ok()) << beyond.status();
  ASSERT_TRUE(beyond->calibrated);

  EXPECT_NEAR(std::log(width(*beyond)), 2 * z90 * group.beyond_log_sd, 1e-9);
  EXPECT_NEAR(beyond->hi_ms / beyond->iteration_ms, beyond->iteration_ms / beyond->lo_ms, 1e-9);

  absl::StatusOr<std::string> text = SerializeModel(calibrated);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> parsed = ParseModel(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(parsed->measured_calibrations == calibrated.measured_calibrations);
  nlohmann::json doc = nlohmann::json::parse(*text);
  for (auto& [name, value] : doc["measured_calibrations"].items()) {
    value.erase("min_inner_modules");
    value.erase("max_inner_modules");
    value.erase("beyond_log_sd");
  }
  absl::StatusOr<PredictorModel> older = ParseModel(doc.dump());
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ(older->measured_calibrations.at(key).LogSdFor(16), group.log_sd);
  doc["measured_calibrations"][key]["min_inner_modules"] = 9;
  doc["measured_calibrations"][key]["max_inner_modules"] = 8;
  doc["measured_calibrations"][key]["beyond_log_sd"] = 0.1;
  EXPECT_EQ(ParseModel(doc.dump()).status().code(), absl::StatusCode::kInvalidArgument);
}

// A strict-fp32 workload without convolutions runs fp32's kernels, so fp32's
// runs calibrate it; with a convolution (cuDNN's TF32 under fp32) it is its own.
TEST(Calibration, StrictFp32TakesFp32sRunsOnlyWithoutConvolutions) {
  models::WorkloadDescriptor d = Workload(2, 32, 256, models::Precision::kStrictFp32);
  EXPECT_EQ(CalibrationPrecision(d), models::Precision::kFp32);
  Operation conv = Gemm(32, 256, 256, models::Precision::kStrictFp32);
  conv.op_class = OpClass::kConv;
  d.operations.push_back(conv);
  EXPECT_EQ(CalibrationPrecision(d), models::Precision::kStrictFp32);
  d.spec.precision = models::Precision::kTf32;
  EXPECT_EQ(CalibrationPrecision(d), models::Precision::kTf32);
  EXPECT_EQ(MeasuredCalibrationKey("H200-SXM-141GB", "bert", models::Phase::kInference,
                                   models::Precision::kStrictFp32),
            "H200-SXM-141GB/bert/inference/strict-fp32");
}

// An fp32 workload of `family` with three convolutions (TF32 under fp32) and
// its strict-fp32 twin, priced on gamma1 given TF32 tensor cores at four
// times its FP32 rate; `extra_ms` is the convolutions' math at the FP32 rate
// less at the TF32 rate there.
struct ConvolutionTwins {
  models::Node gamma;
  models::WorkloadDescriptor fp32;
  models::WorkloadDescriptor strict;
  double extra_ms = 0;
};

ConvolutionTwins MakeConvolutionTwins(const PredictorModel& model,
                                      const std::map<std::string, models::Node>& nodes,
                                      const std::string& family) {
  ConvolutionTwins twins;
  twins.gamma = nodes.at("gamma1");
  twins.gamma.measured.tf32_tflops = 4 * *twins.gamma.measured.fp32_tflops;
  Operation conv = Gemm(2048, 256, 2304, models::Precision::kTf32);
  conv.op_class = OpClass::kConv;
  conv.count = 3;
  twins.fp32 = Workload(6, 64, 512, models::Precision::kFp32);
  twins.fp32.spec.family = family;
  twins.fp32.operations.push_back(conv);
  twins.strict = twins.fp32;
  twins.strict.spec.precision = models::Precision::kStrictFp32;
  for (Operation& op : twins.strict.operations) op.precision = models::Precision::kStrictFp32;
  absl::StatusOr<EffectiveRates> rates =
      ResolveRates(WithProfileRates(twins.gamma, model.profile_rates), model.efficiencies);
  EXPECT_TRUE(rates.ok()) << rates.status();
  if (rates.ok()) {
    twins.extra_ms = 1e3 * conv.count * conv.flops *
                     (1 / rates->FlopsPerSecond(models::Precision::kStrictFp32) -
                      1 / rates->FlopsPerSecond(models::Precision::kTf32));
  }
  return twins;
}

// Where the agent measured a family in fp32 but not in strict-fp32, a
// strict-fp32 workload with convolutions is its fp32 twin (convolutions in
// TF32, fp32's runs correcting it) plus the convolutions' math at the FP32
// rate instead of the TF32 rate, its band widened by that math's, in the C++
// step a Python loop then builds on.
TEST(Calibration, StrictFp32WithConvolutionsIsFp32sStepPlusTheirFp32Math) {
  auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.01, 5);
  SlowFp32ModelRunsOnGamma1(data.profiles);
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  const ConvolutionTwins twins = MakeConvolutionTwins(*model, nodes, "synthmlp");
  PricingPlan plan(*model, twins.gamma);
  absl::StatusOr<Prediction> s = plan.Predict(twins.strict);
  absl::StatusOr<Prediction> f = plan.Predict(twins.fp32);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(f.ok()) << f.status();
  const double extra_ms = twins.extra_ms;
  EXPECT_GT(extra_ms, 0.1 * f->iteration_ms);
  EXPECT_NEAR(s->iteration_ms, f->iteration_ms + extra_ms, 1e-9 * s->iteration_ms);
  EXPECT_LE(s->lo_ms, f->lo_ms + extra_ms * (1 + 1e-9));
  EXPECT_GE(s->hi_ms, f->hi_ms + extra_ms * (1 - 1e-9));
  EXPECT_TRUE(s->calibrated);
  EXPECT_THAT(s->features_used,
              ::testing::Contains("calibration/gamma1-gpu/synthmlp/train/fp32:measured_runs"));
  double breakdown_ms = 0;
  for (const auto& [op_class, ms] : s->breakdown_ms) breakdown_ms += ms;
  EXPECT_NEAR(breakdown_ms, s->iteration_ms, 1e-9 * s->iteration_ms);
  absl::StatusOr<Prediction> python = plan.Predict(twins.strict, models::Loop::kPython);
  ASSERT_TRUE(python.ok()) << python.status();
  EXPECT_DOUBLE_EQ(python->python.cpp_ms, s->iteration_ms);
}

// A family the agent never measured on the node, in any precision, is priced
// the same way: level 1's convolutions at the FP32 rate are never asked for.
TEST(Calibration, UnmeasuredStrictFp32ConvolutionsAreFp32sStepPlusTheirFp32Math) {
  auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.01, 5);
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  const ConvolutionTwins twins = MakeConvolutionTwins(*model, nodes, "unmeasured_convnet");
  PricingPlan plan(*model, twins.gamma);
  absl::StatusOr<Prediction> s = plan.Predict(twins.strict);
  absl::StatusOr<Prediction> f = plan.Predict(twins.fp32);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_FALSE(f->calibrated);
  EXPECT_GT(twins.extra_ms, 0.1 * f->iteration_ms);
  EXPECT_NEAR(s->iteration_ms, f->iteration_ms + twins.extra_ms, 1e-9 * s->iteration_ms);
  EXPECT_EQ(s->method, f->method);
}

TEST(Evaluate, LeaveOneGpuOutAndHeldOutSizes) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.01, 8);
  EvaluateOptions options;
  options.fit = Options();
  absl::StatusOr<EvaluationReport> logo = EvaluateDescribed(data.profiles, nodes, options);
  ASSERT_TRUE(logo.ok()) << logo.status();
  EXPECT_EQ(logo->level2.by_gpu.size(), 5u);
  EXPECT_LT(logo->level2.overall.mape, 0.05);
  EXPECT_LT(logo->level1.overall.mape, 0.05);
  EXPECT_EQ(logo->points.size(), data.profiles.size());

  options.split = Split::kHeldOutSizes;
  options.size_threshold = 4;
  absl::StatusOr<EvaluationReport> sizes = EvaluateDescribed(data.profiles, nodes, options);
  ASSERT_TRUE(sizes.ok()) << sizes.status();
  EXPECT_EQ(sizes->level1.overall.count, 0);
  EXPECT_EQ(sizes->level2.overall.count, 5 * 3 * 2 * 2);  // the 8-layer runs
  EXPECT_LT(sizes->level2.overall.mape, 0.05);
}

TEST(Evaluate, LargestSizePerFamilyHoldsOutEachFamilysLargest) {
  const auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.01, 8);
  // Two families: synthmlp sized by layers x hidden^2; "wide" runs of the
  // same work measured at one size only.
  std::vector<DescribedProfile> profiles;
  for (DescribedProfile p : data.profiles) {
    if (p.profile.workload.kind != models::WorkloadKind::kModel) {
      profiles.push_back(p);
      continue;
    }
    const double hidden = static_cast<double>(p.profile.workload.params.at("hidden"));
    p.descriptor.parameters = p.descriptor.inner_modules * hidden * hidden;
    profiles.push_back(p);
    if (p.descriptor.inner_modules == 4 && hidden == 256) {
      p.profile.workload.family = p.descriptor.spec.family = "wide";
      profiles.push_back(p);
    }
  }
  EvaluateOptions options;
  options.fit = Options();
  options.split = Split::kLargestSizePerFamily;
  absl::StatusOr<EvaluationReport> report = EvaluateDescribed(profiles, nodes, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->level1.overall.count, 0);
  // synthmlp's 8-layer, 1024-wide runs: 5 GPUs x 3 batches x 2 precisions.
  ASSERT_EQ(report->level2.by_family.size(), 1u);
  EXPECT_EQ(report->level2.by_family.at("synthmlp").count, 5 * 3 * 2);
  EXPECT_LT(report->level2.by_family.at("synthmlp").mape, 0.05);
  for (const EvaluatedPoint& point : report->points) {
    const DescribedProfile& p = profiles[point.profile_index];
    EXPECT_EQ(p.descriptor.inner_modules, 8);
    EXPECT_EQ(p.profile.workload.params.at("hidden"), 1024);
  }
  ASSERT_FALSE(report->notes.empty());
  EXPECT_THAT(report->notes.front(), ::testing::HasSubstr("one size only, not held out: wide"));
}

// The old failure: a level-2 model whose host term had a negative
// coefficient (fitted on one host) predicted a step on a node with a larger
// launch latency below zero, and the answer was refused. Now the level-1 sum
// answers, never below the operations' roofline time, with a wider band.
TEST(Predictor, NeverAnswersBelowTheRooflineFloor) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.01, 5);
  FitOptions level1_only = Options();
  level1_only.fit_level2 = false;
  level1_only.calibrate_measured = false;  // the level-2 model below is set by hand
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, level1_only);
  ASSERT_TRUE(model.ok()) << model.status();
  FittedModel level2;
  level2.level = 2;
  level2.target = "iteration_ms";
  level2.scope = "train";
  level2.features = {"level1_ms", "launch_ms"};
  level2.feature_min = {0, 0};
  level2.feature_max = {1e3, 1};
  level2.fit.mean = {0, 0};
  level2.fit.scale = {1, 1};
  level2.fit.coefficients = {1.0, -15.0};  // as fitted on the H200 in November
  level2.cv_error_quantiles = std::vector<double>(101, 0.0);
  for (int q = 0; q <= 100; ++q) level2.cv_error_quantiles[q] = (q - 50) / 500.0;
  const models::WorkloadDescriptor d = Workload(8, 32, 256, models::Precision::kFp16Amp);
  // On the host it was fitted on, the negative term is offset: 1 ms above level 1.
  absl::StatusOr<EffectiveRates> fitted_host = ResolveRates(nodes.at("beta2"), model->efficiencies);
  ASSERT_TRUE(fitted_host.ok());
  level2.fit.intercept = 15 * WorkloadInputs(d, *fitted_host).at("launch_ms") + 1;
  model->level2[models::Phase::kTrain] = level2;

  absl::StatusOr<Prediction> near = PricingPlan(*model, nodes.at("beta2")).Predict(d);
  ASSERT_TRUE(near.ok()) << near.status();
  EXPECT_EQ(near->method, Method::kTwoLevel);
  EXPECT_NEAR(near->iteration_ms, near->level1_ms + 1, 1e-9);
  models::Node slow_host = nodes.at("beta2");
  slow_host.measured.launch_latency_us = 200;
  absl::StatusOr<Prediction> p = PricingPlan(*model, slow_host).Predict(d);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->method, Method::kLevel1Fallback);
  EXPECT_EQ(MethodName(p->method), "level1-fallback");
  EXPECT_EQ(MethodLevel(p->method), 1);
  absl::StatusOr<EffectiveRates> rates = ResolveRates(slow_host, model->efficiencies);
  ASSERT_TRUE(rates.ok());
  const double floor_ms = WorkloadInputs(d, *rates).at("roofline_ms");
  EXPECT_GT(floor_ms, 0);
  EXPECT_GE(p->iteration_ms, floor_ms);
  EXPECT_GE(p->iteration_ms, p->level1_ms);
  EXPECT_LT(p->lo_ms, p->hi_ms);
  EXPECT_LE(p->lo_ms, p->iteration_ms);
  EXPECT_GE(p->hi_ms, p->iteration_ms);
  double breakdown = 0;
  for (const auto& [op_class, ms] : p->breakdown_ms) breakdown += ms;
  EXPECT_NEAR(breakdown, p->iteration_ms, 1e-9 * p->iteration_ms);
}

// Fits constrain every level-2 coefficient to be >= 0 unless told not to:
// each candidate is a time (or count) that can only add to a step.
TEST(Predictor, Level2CoefficientsAreNonNegative) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.03, 11);
  EXPECT_TRUE(FitOptions{}.level2_non_negative);
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_FALSE(model->level2.empty());
  for (const auto& [phase, m] : model->level2) {
    EXPECT_TRUE(m.regression.non_negative);
    for (double c : m.fit.coefficients) EXPECT_GE(c, 0) << models::PhaseName(phase);
  }
}

// FitOptions' losses reach each level's models (and their saved form);
// squared stays the default.
TEST(Predictor, LossOptionReachesEachLevelAndRoundTrips) {
  const auto nodes = Nodes();
  const Synthetic data = MakeProfiles(nodes, 0.03, 11);
  EXPECT_EQ(FitOptions{}.level1_loss, Loss::kSquared);
  EXPECT_EQ(FitOptions{}.level2_loss, Loss::kSquared);
  FitOptions options = Options();
  options.level1_loss = Loss::kAbsolute;
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();
  absl::StatusOr<PredictorModel> squared = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(squared.ok()) << squared.status();
  ASSERT_FALSE(model->level1.empty());
  ASSERT_FALSE(model->level2.empty());
  for (const auto& [op_class, m] : model->level1) {
    EXPECT_EQ(m.regression.loss, Loss::kAbsolute);
    EXPECT_NE(m.fit.coefficients, squared->level1.at(op_class).fit.coefficients);
    for (double c : m.fit.coefficients) EXPECT_GE(c, 0);
  }
  for (const auto& [phase, m] : model->level2) EXPECT_EQ(m.regression.loss, Loss::kSquared);
  absl::StatusOr<std::string> text = SerializeModel(*model);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> parsed = ParseModel(*text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(*parsed == *model);
  std::string bad = *text;
  const std::string absolute = R"("loss": "absolute")";
  const size_t at = bad.find(absolute);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, absolute.size(), R"("loss": "cubic")");
  EXPECT_EQ(ParseModel(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

// A GEMM in 16-bit or tf32 whose rows are not 16-byte aligned loses the
// tensor cores' wide loads: GPT-2's vocabulary of 50257 (2-byte aligned in
// bf16) ran at 1/6 of the rate on an H200, BERT's 30522 (4-byte) at 1/3.
TEST(Features, MisalignedTensorCoreGemmsPayForNarrowLoads) {
  EffectiveRates rates;
  for (double& r : rates.flops_per_s) r = 1e14;
  rates.memory_bytes_per_s = 1e12;
  rates.sm_count = 100;
  auto narrow = [&](int64_t n, models::Precision precision) {
    Operation op = Gemm(16384, n, 768, precision);
    op.shape = {{"m", 16384}, {"n", n}, {"k", 768}, {"batch", 1}};
    const FeatureInputs in = OperationInputs(op, rates);
    return in.at("narrow_flops") / in.at("tile_flops");
  };
  EXPECT_DOUBLE_EQ(narrow(50257, models::Precision::kBf16Amp), 7);
  EXPECT_DOUBLE_EQ(narrow(30522, models::Precision::kBf16Amp), 3);
  EXPECT_DOUBLE_EQ(narrow(30524, models::Precision::kFp16Amp), 1);
  EXPECT_DOUBLE_EQ(narrow(32000, models::Precision::kBf16Amp), 0);
  EXPECT_DOUBLE_EQ(narrow(50257, models::Precision::kTf32), 3);
  EXPECT_DOUBLE_EQ(narrow(50257, models::Precision::kFp32), 0);  // no tensor cores
  EXPECT_TRUE(IsCandidateFor(OpClass::kGemm, "narrow_load_ms"));
  EXPECT_FALSE(IsCandidateFor(OpClass::kElementwise, "narrow_load_ms"));
}

// A GEMM's tiles that run together share their operand panels in L2: its
// device-memory traffic counts each operand and the output once, however
// many tile rows and columns re-read them (a re-read per tile made the
// traffic term stand in for the math time of power-capped GPUs).
TEST(Features, GemmTrafficReadsEachOperandOnce) {
  EffectiveRates rates;
  for (double& r : rates.flops_per_s) r = 1e14;
  rates.memory_bytes_per_s = 1e12;
  rates.sm_count = 100;
  Operation op = Gemm(4096, 2048, 1024, models::Precision::kFp32);
  op.shape = {{"m", 4096}, {"n", 2048}, {"k", 1024}, {"batch", 3}};
  op.flops *= 3;
  op.bytes *= 3;
  const FeatureInputs in = OperationInputs(op, rates);
  const double once = 4.0 * 3 * (4096.0 * 1024 + 1024.0 * 2048 + 4096.0 * 2048);
  EXPECT_DOUBLE_EQ(in.at("tile_bytes"), once);
}

// Any precision loads a GEMM's operands 16 bytes at a time where its rows
// allow: fp32 rows of 196 elements (784 bytes) do, rows of 98 (392) or 197
// do not; a bf16 vocabulary of 50257 does not; other classes have no rows.
TEST(Features, NarrowLoadsAreGemmRowsOffSixteenBytes) {
  auto gemm = [](int64_t m, int64_t n, int64_t k, models::Precision precision) {
    Operation op = Gemm(m, n, k, precision);
    op.shape = {{"m", m}, {"n", n}, {"k", k}, {"batch", 8}};
    return op;
  };
  EXPECT_FALSE(NarrowLoads(gemm(4096, 196, 1024, models::Precision::kFp32)));
  EXPECT_TRUE(NarrowLoads(gemm(4096, 98, 1024, models::Precision::kFp32)));
  EXPECT_TRUE(NarrowLoads(gemm(4096, 1024, 197, models::Precision::kFp32)));
  EXPECT_TRUE(NarrowLoads(gemm(4097, 1024, 1024, models::Precision::kFp32)));
  EXPECT_TRUE(NarrowLoads(gemm(16384, 50257, 768, models::Precision::kBf16Amp)));
  EXPECT_FALSE(NarrowLoads(gemm(16384, 50264, 768, models::Precision::kBf16Amp)));
  Operation elementwise;
  elementwise.op_class = OpClass::kElementwise;
  elementwise.shape = {{"numel", 1001}};
  EXPECT_FALSE(NarrowLoads(elementwise));
}

// Prediction evaluates level-1 models through the compiled table: it must
// give EvaluateFeatures' values bit for bit, for every class's candidates,
// and its errors (a missing input, a non-finite value).
TEST(Features, CompiledTableGivesEvaluateFeaturesValues) {
  EffectiveRates rates;
  for (double& r : rates.flops_per_s) r = 3.1e13;
  rates.flops_per_s[static_cast<int>(models::Precision::kBf16Amp)] = 7.7e14;
  rates.memory_bytes_per_s = 2.9e12;
  rates.launch_latency_s = 4.3e-6;
  rates.h2d_bytes_per_s = 2.2e10;
  rates.dispatch_ops_per_s = 1.7e5;
  rates.sm_count = 132;
  std::vector<std::string> inputs;
  for (absl::string_view name : OperationInputNames()) inputs.emplace_back(name);
  const std::vector<std::string> names = CandidateNames(OperationFeatureTable(), inputs);
  ASSERT_GT(names.size(), 10u);
  const CompiledFeatureTable& table = CompiledOperationTable();
  std::vector<int> name_slots;
  for (const std::string& name : names) name_slots.push_back(table.Slot(name));
  std::vector<double> slots(table.size()), values;
  std::mt19937_64 random(7);
  std::uniform_int_distribution<int64_t> side(1, 70000);
  for (int i = 0; i < 200; ++i) {
    const int64_t m = side(random), n = side(random), k = side(random);
    Operation op = Gemm(m, n, k, i % 2 == 0 ? models::Precision::kBf16Amp : models::Precision::kFp32);
    op.shape = {{"m", m}, {"n", n}, {"k", k}, {"batch", 1 + i % 4}};
    op.launches = 1 + i % 3;
    op.work_items = i % 5 == 0 ? 0 : side(random);
    if (i % 3 == 0) op.op_class = OpClass::kElementwise;
    op.autograd_calls = i % 2;
    absl::StatusOr<std::vector<double>> expected =
        EvaluateFeatures(OperationFeatureTable(), OperationInputs(op, rates), names);
    ASSERT_TRUE(expected.ok()) << expected.status();
    table.Evaluate(OperationInputValues(op, rates), absl::MakeSpan(slots));
    ASSERT_TRUE(SelectFeatures(names, name_slots, slots, values).ok());
    ASSERT_EQ(values.size(), expected->size());
    for (size_t j = 0; j < values.size(); ++j) {
      EXPECT_EQ(std::memcmp(&values[j], &(*expected)[j], sizeof(double)), 0) << names[j];
    }
  }
  // A name the inputs cannot give, and a value that is not finite.
  const std::vector<std::string> unknown = {"compute_ms", "no_such_feature"};
  const std::vector<int> unknown_slots = {table.Slot("compute_ms"), table.Slot("no_such_feature")};
  EXPECT_EQ(unknown_slots[1], -1);
  const absl::Status missing = SelectFeatures(unknown, unknown_slots, slots, values);
  EXPECT_EQ(missing,
            EvaluateFeatures(OperationFeatureTable(), OperationInputs(Operation{}, rates), unknown)
                .status());
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  rates.memory_bytes_per_s = 0;
  Operation op = Gemm(64, 64, 64, models::Precision::kFp32);
  op.flops = 0;
  op.bytes = 0;  // 0 / 0
  const std::vector<std::string> memory = {"memory_ms"};
  table.Evaluate(OperationInputValues(op, rates), absl::MakeSpan(slots));
  const absl::Status not_finite = SelectFeatures(memory, {table.Slot("memory_ms")}, slots, values);
  EXPECT_EQ(not_finite.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(not_finite,
            EvaluateFeatures(OperationFeatureTable(), OperationInputs(op, rates), memory).status());
}

// A held-out profile is predicted with the host it ran on (its run
// conditions), as the fit saw it, not with whatever another run last stored
// on its node.
TEST(Evaluate, HeldOutProfilesArePredictedWithTheHostTheyRanOn) {
  const auto measured_nodes = Nodes();
  Synthetic data = MakeProfiles(measured_nodes, 0.01, 8);
  std::map<std::string, models::Node> stored = measured_nodes;
  for (auto& [name, node] : stored) *node.measured.launch_latency_us *= 20;
  for (DescribedProfile& p : data.profiles) {
    p.profile.conditions.launch_latency_us =
        measured_nodes.at(p.profile.node_name).measured.launch_latency_us;
  }
  EvaluateOptions options;
  options.fit = Options();
  options.split = Split::kHeldOutSizes;
  options.size_threshold = 4;
  absl::StatusOr<EvaluationReport> report = EvaluateDescribed(data.profiles, stored, options);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->level2.overall.count, 5 * 3 * 2 * 2);
  EXPECT_LT(report->level2.overall.mape, 0.05);
}

// Each held-out row is priced as the loop that measured it: an imported run
// (a user's own, the plain loop's) gets a Python loop's host work on top of
// the C++ step that an agent's row of the same workload is priced at.
TEST(Evaluate, ImportedRunsArePricedAsTheirPythonLoop) {
  const auto nodes = Nodes();
  Synthetic agent = MakeProfiles(nodes, 0.01, 8);
  for (DescribedProfile& p : agent.profiles) {
    p.descriptor.kernel_launches = 2000;  // enough for the host to show
  }
  Synthetic imported = agent;
  for (DescribedProfile& p : imported.profiles) p.profile.agent_version = "file-import";
  EvaluateOptions options;
  options.fit = Options();
  // Only the agent's rows would calibrate: the two fits would differ.
  options.fit.calibrate_measured = false;
  options.split = Split::kHeldOutSizes;
  options.size_threshold = 4;
  absl::StatusOr<EvaluationReport> cpp = EvaluateDescribed(agent.profiles, nodes, options);
  absl::StatusOr<EvaluationReport> python = EvaluateDescribed(imported.profiles, nodes, options);
  ASSERT_TRUE(cpp.ok()) << cpp.status();
  ASSERT_TRUE(python.ok()) << python.status();
  ASSERT_EQ(cpp->points.size(), python->points.size());
  int models = 0;
  for (size_t i = 0; i < cpp->points.size(); ++i) {
    const EvaluatedPoint& c = cpp->points[i];
    const EvaluatedPoint& p = python->points[i];
    ASSERT_EQ(c.profile_index, p.profile_index);
    if (c.level != 2) {
      EXPECT_DOUBLE_EQ(p.predicted_ms, c.predicted_ms);  // an operation is one call
      continue;
    }
    ++models;
    const DescribedProfile& row = agent.profiles.at(c.profile_index);
    ASSERT_DOUBLE_EQ(c.measured_ms, row.profile.iteration.mean_ms);
    double ms = c.predicted_ms, lo = c.lo_ms, hi = c.hi_ms;
    ApplyPythonLoop(HostWorkOf(row.descriptor), row.profile.workload.phase, {},
                    HostCostOf(nodes.at(row.profile.node_name), FittedPythonLoopTerms()),
                    FittedPythonLoopTerms(), ms, lo, hi);
    EXPECT_GT(p.predicted_ms, c.predicted_ms);
    EXPECT_NEAR(p.predicted_ms, ms, 1e-9 * ms);
    EXPECT_NEAR(p.hi_ms, hi, 1e-9 * hi);
  }
  EXPECT_EQ(models, 5 * 3 * 2 * 2);
}

}  // namespace
}  // namespace perfcast::predictor

namespace perfcast::predictor {
namespace {

// Through models::Describe: operation profiles of the real "gemm" family
// fit level 1, and Predict describes a spec itself.
TEST(Predictor, FitAndPredictDescribeRealWorkloads) {
  const auto nodes = Nodes();
  std::vector<models::Profile> profiles;
  int64_t id = 1;
  for (const auto& [name, node] : nodes) {
    for (int64_t m : {256, 1024, 4096}) {
      for (int64_t k : {512, 2048}) {
        models::Profile p;
        p.id = id++;
        p.node_name = name;
        p.workload.kind = models::WorkloadKind::kOperation;
        p.workload.family = "gemm";
        p.workload.params = {{"m", m}, {"n", 1024}, {"k", k}};
        absl::StatusOr<models::WorkloadDescriptor> d = models::Describe(p.workload);
        ASSERT_TRUE(d.ok()) << d.status();
        p.iteration.mean_ms = TrueCallMs(d->operations.front(), node);
        profiles.push_back(p);
      }
    }
  }
  FitOptions options = Options();
  options.fit_level2 = false;
  absl::StatusOr<PredictorModel> model = Fit(profiles, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();
  models::WorkloadSpec spec = profiles.front().workload;
  spec.params["m"] = 2048;
  absl::StatusOr<Prediction> p = Predict(*model, spec, nodes.at("gamma1"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->method, Method::kLevel1Operation);
  EXPECT_GT(p->breakdown_ms.at("gemm"), 0);
  models::Profile bad = profiles.front();
  bad.workload.family = "no-such-family";
  profiles.push_back(bad);
  EXPECT_EQ(Fit(profiles, nodes, options).status().code(), absl::StatusCode::kInvalidArgument);
}

// The synthetic profiles plus a copy of every model row as family
// "synthslow", whose steps take 1.6 times as long around the same kernels.
Synthetic WithSlowFamily(const std::map<std::string, models::Node>& nodes) {
  Synthetic data = MakeProfiles(nodes, 0.01, 11);
  const size_t original = data.profiles.size();
  for (size_t i = 0; i < original; ++i) {
    DescribedProfile p = data.profiles[i];
    if (p.profile.workload.kind != models::WorkloadKind::kModel) continue;
    p.profile.id += 100000;
    p.profile.workload.family = "synthslow";
    p.descriptor.spec.family = "synthslow";
    p.profile.iteration.mean_ms *= 1.6;
    data.profiles.push_back(p);
  }
  return data;
}

// A workload of the slow family.
models::WorkloadDescriptor SlowWorkload() {
  models::WorkloadDescriptor slow = Workload(6, 200, 512, models::Precision::kFp32);
  slow.spec.family = "synthslow";
  return slow;
}

// Two families with the same operations whose steps differ by a constant
// factor (one framework's layers cost 60% more around the same kernels): one
// global level 2 cannot price both, each family's own model can, and a
// workload of a family is priced by its family's model, which the answer
// names. Family models survive serialisation.
TEST(Predictor, FamiliesWithEnoughRowsGetTheirOwnLevel2) {
  const auto nodes = Nodes();
  Synthetic data = WithSlowFamily(nodes);
  const models::WorkloadDescriptor slow = SlowWorkload();
  const models::Node& node = nodes.at("gamma1");
  const double truth = 1.6 * TrueIterationMs(slow, node);

  FitOptions options = Options();
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();
  const std::string scope = FamilyScope("synthslow", slow.spec.phase);
  ASSERT_TRUE(model->level2_by_family.contains(scope)) << absl::StrJoin(model->notes, "\n");
  absl::StatusOr<Prediction> priced = PricingPlan(*model, node).Predict(slow);
  ASSERT_TRUE(priced.ok()) << priced.status();
  EXPECT_NEAR(priced->iteration_ms, truth, 0.05 * truth);
  EXPECT_TRUE(std::any_of(priced->features_used.begin(), priced->features_used.end(),
                          [&](const std::string& f) {
                            return absl::StartsWith(f, absl::StrCat("level2/", scope, ":"));
                          }))
      << absl::StrJoin(priced->features_used, ", ");

  absl::StatusOr<PredictorModel> parsed = ParseModel(*SerializeModel(*model));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(*parsed == *model);
  // A model stored before family models existed still loads, with none.
  nlohmann::json older = nlohmann::json::parse(*SerializeModel(*model));
  older.erase("level2_by_family");
  absl::StatusOr<PredictorModel> old_model = ParseModel(older.dump());
  ASSERT_TRUE(old_model.ok()) << old_model.status();
  EXPECT_TRUE(old_model->level2_by_family.empty());
  EXPECT_EQ(old_model->level2, model->level2);
  older["level2_by_family"] = 3;
  EXPECT_EQ(ParseModel(older.dump()).status().code(), absl::StatusCode::kInvalidArgument);

  // A spec-sheet GPU of an architecture no training GPU had takes the global
  // model: a family's few rows price memory and dispatch as the training
  // architectures behave.
  models::Node unseen = node;
  unseen.name = "unseen";
  unseen.gpu.model = "unseen-gpu";
  unseen.gpu.architecture = "new-generation";
  unseen.measured = {};
  absl::StatusOr<Prediction> global_priced = PricingPlan(*model, unseen).Predict(slow);
  ASSERT_TRUE(global_priced.ok()) << global_priced.status();
  EXPECT_EQ(global_priced->distance.architecture_seen, Seen::kNew);
  EXPECT_TRUE(std::none_of(global_priced->features_used.begin(),
                           global_priced->features_used.end(), [&](const std::string& f) {
                             return absl::StartsWith(f, absl::StrCat("level2/", scope, ":"));
                           }))
      << absl::StrJoin(global_priced->features_used, ", ");

  options.family_min_rows = 0;  // the global model alone splits the difference
  options.calibrate_measured = false;  // (the agent's runs would correct it: calibration.h)
  absl::StatusOr<PredictorModel> global = FitDescribed(data.profiles, nodes, options);
  ASSERT_TRUE(global.ok()) << global.status();
  EXPECT_TRUE(global->level2_by_family.empty());
  absl::StatusOr<Prediction> blended = PricingPlan(*global, node).Predict(slow);
  ASSERT_TRUE(blended.ok()) << blended.status();
  EXPECT_GT(std::abs(blended->iteration_ms / truth - 1), 0.1) << blended->iteration_ms;
}

// A family's model corrects the offset the global model has on the family's
// rows; its band keeps the global model's scatter on those rows around that
// offset as a floor, not the global model's whole band, which spans every
// family's offset. The global model here splits two families 1.6x apart
// (held-out errors of about +-20% either way, one sign per family); the
// family's band is much narrower than that. The earlier rule (the union of
// the family's band and the global one) gave the global band's width.
TEST(Predictor, FamilyBandIsTheGlobalScatterOnItsRowsNotTheGlobalBand) {
  const auto nodes = Nodes();
  Synthetic data = WithSlowFamily(nodes);
  const models::WorkloadDescriptor slow = SlowWorkload();
  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  const FittedModel& family = model->level2_by_family.at(FamilyScope("synthslow", slow.spec.phase));
  const FittedModel& global = model->level2.at(slow.spec.phase);
  ASSERT_FALSE(family.reference_error_quantiles.empty());
  // The reference is the global model's errors on the family's rows: offset
  // one way, with little scatter around the offset.
  const double offset = std::log1p(family.ReferenceErrorQuantile(0.5));
  const double reference_below = std::log1p(family.ReferenceErrorQuantile(0.9)) - offset;
  const double reference_above = offset - std::log1p(family.ReferenceErrorQuantile(0.1));
  EXPECT_GT(std::abs(offset), 0.1);
  const double global_width =
      std::log1p(global.ErrorQuantile(0.9)) - std::log1p(global.ErrorQuantile(0.1));
  EXPECT_GT(global_width, 3 * (reference_below + reference_above));

  absl::StatusOr<Prediction> priced = PricingPlan(*model, nodes.at("gamma1")).Predict(slow);
  ASSERT_TRUE(priced.ok()) << priced.status();
  const double below = std::log(priced->iteration_ms / priced->lo_ms);
  const double above = std::log(priced->hi_ms / priced->iteration_ms);
  EXPECT_LT(below + above, 0.5 * global_width) << priced->lo_ms << " " << priced->hi_ms;
  EXPECT_GE(below, reference_below - 1e-12);
  EXPECT_GE(above, reference_above - 1e-12);

  // The reference survives serialisation; a model saved before it existed
  // loads with none (its family's band is then its own).
  nlohmann::json json = nlohmann::json::parse(*SerializeModel(*model));
  for (auto& [scope, fitted] : json["level2_by_family"].items()) {
    fitted.erase("reference_error_quantiles");
  }
  absl::StatusOr<PredictorModel> older = ParseModel(json.dump());
  ASSERT_TRUE(older.ok()) << older.status();
  for (const auto& [scope, fitted] : older->level2_by_family) {
    EXPECT_TRUE(fitted.reference_error_quantiles.empty()) << scope;
  }
}

// A training-phase operation benchmark times forward and backward as one
// autograd::grad call, whose entry costs the host some tens of microseconds
// whatever the operation (its cost here: 12 dispatch times); a model's step
// enters autograd once for all its operations. Level 1 learns that entry
// apart from the launches, so a model's operation is priced without it: a
// model's backward kernel of a small element-wise op is a few microseconds,
// not the benchmark's 90.
TEST(Predictor, Level1LeavesTheBenchmarksAutogradEntryOutOfAModelsOperations) {
  std::map<std::string, models::Node> nodes = Nodes();
  double dispatch = 1.1e5;
  for (auto& [name, node] : nodes) {
    node.measured.dispatch_ops_per_s = dispatch;
    dispatch *= 1.2;
  }
  auto truth = [](const Operation& op, const models::Node& node) {
    return TrueCallMs(op, node) + 1e3 * op.autograd_calls * 12 / *node.measured.dispatch_ops_per_s;
  };
  std::vector<DescribedProfile> profiles;
  int64_t id = 1;
  for (const auto& [name, node] : nodes) {
    for (models::Phase phase : {models::Phase::kInference, models::Phase::kTrain}) {
      for (double elements : {1e4, 1e5, 1e6, 4e6, 1.6e7, 6.4e7}) {
        DescribedProfile p;
        p.profile.id = id++;
        p.profile.node_name = name;
        p.profile.workload.kind = models::WorkloadKind::kOperation;
        p.profile.workload.family = "elementwise";
        p.profile.workload.phase = phase;
        p.descriptor.spec = p.profile.workload;
        Operation op = Elementwise(elements);
        if (phase == models::Phase::kTrain) {  // forward and backward kernels
          op.bytes *= 2.5;
          op.launches = 2;
          op.autograd_calls = 1;
        }
        p.descriptor.operations = {op};
        p.profile.iteration.mean_ms = truth(op, node);
        profiles.push_back(p);
      }
    }
  }
  FitOptions options = Options();
  options.fit_level2 = false;
  absl::StatusOr<PredictorModel> model = FitDescribed(profiles, nodes, options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE(model->level1.contains(OpClass::kElementwise));
  EXPECT_THAT(model->level1.at(OpClass::kElementwise).features, testing::Contains("autograd_ms"));

  // The same forward+backward inside a model's step: no autograd entry.
  Operation in_model = Elementwise(1e5);
  in_model.bytes *= 2.5;
  in_model.launches = 2;
  const models::Node& node = nodes.at("gamma1");
  absl::StatusOr<double> priced = PriceCall(*model, in_model, node);
  ASSERT_TRUE(priced.ok()) << priced.status();
  EXPECT_NEAR(*priced, truth(in_model, node), 0.05 * truth(in_model, node));
  Operation benchmark = in_model;
  benchmark.autograd_calls = 1;
  EXPECT_GT(truth(benchmark, node), 5 * truth(in_model, node));  // what it must not be charged
}

// Inside a busy GPU stream the host queues kernels ahead, and most of the
// launch cost the operation benchmarks measured hides behind the kernels:
// here a family of steps pays a fifth of it. Its own level 2 learns that
// from level1_gpu_ms (level 1 without the launch costs) beside level1_ms
// and prices a larger size of it; the global model, whose families hide
// different shares, is never offered the feature.
TEST(Predictor, AFamilysLevel2LearnsTheLaunchCostItsBusyStreamHides) {
  const auto nodes = Nodes();
  Synthetic data = MakeProfiles(nodes, 0.01, 13);
  // The operations' time with `paid` of their launch cost (no input copy:
  // a family's own model has no input-copy term).
  auto step_ms = [](const models::WorkloadDescriptor& d, const models::Node& node, double paid) {
    double total = 0;
    for (const Operation& op : d.operations) {
      const double launch = 1e-3 * *node.measured.launch_latency_us * op.launches;
      total += op.count * (TrueCallMs(op, node) - (1 - paid) * launch);
    }
    return 1.03 * total;
  };
  auto busy_ms = [&](const models::WorkloadDescriptor& d, const models::Node& node) {
    return step_ms(d, node, 0.2);
  };
  const size_t original = data.profiles.size();
  for (size_t i = 0; i < original; ++i) {
    DescribedProfile p = data.profiles[i];
    if (p.profile.workload.kind != models::WorkloadKind::kModel) continue;
    p.profile.id += 100000;
    p.profile.workload.family = "synthbusy";
    p.descriptor.spec.family = "synthbusy";
    p.profile.iteration.mean_ms = busy_ms(p.descriptor, nodes.at(p.profile.node_name));
    data.profiles.push_back(p);
  }
  // Twice the layers of any profile, at a batch small enough for launches
  // to matter.
  models::WorkloadDescriptor big = Workload(16, 32, 1024, models::Precision::kFp16Amp);
  big.spec.family = "synthbusy";
  const models::Node& node = nodes.at("gamma1");

  absl::StatusOr<PredictorModel> model = FitDescribed(data.profiles, nodes, Options());
  ASSERT_TRUE(model.ok()) << model.status();
  for (const auto& [phase, global] : model->level2) {
    EXPECT_THAT(global.features, testing::Not(testing::Contains("level1_gpu_ms")));
  }
  const std::string scope = FamilyScope("synthbusy", big.spec.phase);
  ASSERT_TRUE(model->level2_by_family.contains(scope)) << absl::StrJoin(model->notes, "\n");
  EXPECT_THAT(model->level2_by_family.at(scope).features, testing::Contains("level1_gpu_ms"));
  absl::StatusOr<Prediction> priced = PricingPlan(*model, node).Predict(big);
  ASSERT_TRUE(priced.ok()) << priced.status();
  const double truth = busy_ms(big, node);
  EXPECT_NEAR(priced->iteration_ms, truth, 0.05 * truth);
  EXPECT_LT(truth, 0.9 * step_ms(big, node, 1));  // the launches it does not pay matter

  // The same family model without level1_ms, level1_gpu_ms its only level-1
  // input, still prices through a level-1 pass: two-level, not
  // level2-direct.
  PredictorModel gpu_only = *model;
  FittedModel& family = gpu_only.level2_by_family.at(scope);
  if (auto it = std::find(family.features.begin(), family.features.end(), "level1_ms");
      it != family.features.end()) {
    const auto i = it - family.features.begin();
    family.features.erase(it);
    for (std::vector<double>* v : {&family.fit.mean, &family.fit.scale, &family.fit.coefficients,
                                   &family.feature_min, &family.feature_max}) {
      if (static_cast<size_t>(i) < v->size()) v->erase(v->begin() + i);
    }
  }
  absl::StatusOr<Prediction> gpu_priced = PricingPlan(gpu_only, node).Predict(big);
  ASSERT_TRUE(gpu_priced.ok()) << gpu_priced.status();
  EXPECT_NE(gpu_priced->method, Method::kLevel2Direct);
  EXPECT_GT(gpu_priced->level1_ms, 0);
}

}  // namespace
}  // namespace perfcast::predictor
