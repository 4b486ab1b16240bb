#include "predictor/power.h"

#include <vector>

#include "gtest/gtest.h"
#include "predictor/model.h"
#include "predictor/predictor.h"

namespace perfcast::predictor {
namespace {

models::GpuSpec Gpu(double tdp) {
  models::GpuSpec gpu;
  gpu.model = "X";
  gpu.tdp_watts = tdp;
  return gpu;
}

TEST(Power, LearnsUtilisationPerFamilyAndPrecisionWithFallbacks) {
  std::vector<PowerSample> samples;
  for (int i = 0; i < 10; ++i) {
    samples.push_back({"lstm", "bf16-amp", 700, 350.0 + i});   // ~0.5 of TDP
    samples.push_back({"cnn", "fp32", 400, 320.0 + i});        // ~0.8 of TDP
  }
  samples.push_back({"cnn", "fp32", 0, 300});  // unknown TDP: skipped
  const PowerModel model = FitPower(samples);
  ASSERT_EQ(model.calibrations.count("lstm/bf16-amp"), 1u);
  EXPECT_EQ(model.calibrations.at("cnn/fp32").rows, 10);
  EXPECT_EQ(model.calibrations.at("*").rows, 20);

  models::WorkloadSpec spec;
  spec.family = "lstm";
  spec.precision = models::Precision::kBf16Amp;
  PowerEstimate e = EstimatePower(model, spec, Gpu(300));
  EXPECT_TRUE(e.measured);
  EXPECT_NEAR(e.utilisation, 354.5 / 700, 1e-9);
  EXPECT_NEAR(e.watts, 300 * 354.5 / 700, 1e-9);
  EXPECT_NE(e.source.find("lstm/bf16-amp"), std::string::npos) << e.source;

  spec.precision = models::Precision::kFp32;  // the family's own median
  EXPECT_NE(EstimatePower(model, spec, Gpu(300)).source.find("lstm profiles"), std::string::npos);
  spec.family = "dlrm";  // every family's median
  EXPECT_NE(EstimatePower(model, spec, Gpu(300)).source.find("all families"), std::string::npos);

  const PowerEstimate fallback = EstimatePower(PowerModel{}, spec, Gpu(300));
  EXPECT_FALSE(fallback.measured);
  EXPECT_DOUBLE_EQ(fallback.watts, 300 * kDefaultUtilisation);
  EXPECT_NE(fallback.source.find("default"), std::string::npos);
  EXPECT_DOUBLE_EQ(EstimatePower(model, spec, Gpu(0)).watts, 0);
}

TEST(Power, MemoryAndPowerSurviveTheModelFile) {
  PredictorModel model;
  MemoryCalibration memory;
  memory.scope = "lstm/train";
  memory.coefficients = {7e7, 1.1, 1.0, 0.2, 0.5, 3.0, 0.01};
  memory.rows = 12;
  memory.cv_mape = 0.05;
  memory.error_p10 = -0.1;
  memory.error_p90 = 0.08;
  model.memory.calibrations[memory.scope] = memory;
  model.power.calibrations["*"] = {"*", 0.6, 0.4, 0.8, 30};
  absl::StatusOr<std::string> text = SerializeModel(model);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<PredictorModel> back = ParseModel(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->memory, model.memory);
  EXPECT_EQ(back->power, model.power);

  // A memory calibration of the wrong width is refused, not misread.
  std::string bad = *text;
  bad.replace(bad.find("1.1,"), 4, "");
  EXPECT_FALSE(ParseModel(bad).ok());
}

// A model saved with the five memory features of earlier releases (constant,
// activations + inputs, fp32 activations, largest operation, forward bytes)
// loads and predicts the same peaks.
TEST(Power, FiveFeatureMemoryCalibrationsStillLoad) {
  PredictorModel model;
  MemoryCalibration memory;
  memory.scope = "lstm/train";
  memory.coefficients = {7e7, 1.1, 0.2, 0.5, 0.01, 0, 0};
  model.memory.calibrations[memory.scope] = memory;
  absl::StatusOr<std::string> text = SerializeModel(model);
  ASSERT_TRUE(text.ok()) << text.status();
  std::string old = *text;
  const size_t at = old.find("0.01,");
  ASSERT_NE(at, std::string::npos) << old;
  old.replace(at + 4, old.find(']', at) - (at + 4), "");  // drop the trailing zeros
  absl::StatusOr<PredictorModel> back = ParseModel(old);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << old;
  const MemoryCalibration& c = back->memory.calibrations.at("lstm/train");
  ASSERT_EQ(c.coefficients.size(), static_cast<size_t>(kMemoryFeatures));
  MemoryTerms terms;
  terms.activations = 3e8;
  terms.inputs = 1e6;
  terms.fp32_activations = 3e8;
  terms.largest_op_bytes = 5e7;
  terms.fp32_largest_op_bytes = 5e7;
  terms.forward_bytes = 2e9;
  EXPECT_DOUBLE_EQ(c.Predict(terms), 7e7 + 1.1 * (3e8 + 1e6) + 0.2 * 3e8 + 0.5 * 5e7 + 0.01 * 2e9);
}

// Fit learns utilisation from the board power of model profiles on nodes of
// known TDP; operation profiles do not count.
TEST(Power, FitLearnsFromProfilesBoardPower) {
  models::Node node;
  node.name = "n1";
  node.gpu.model = "G";
  node.gpu.tdp_watts = 400;
  node.gpu.fp32_tflops = 20;
  node.gpu.memory_bandwidth_gbs = 1000;
  node.measured.launch_latency_us = 5;
  std::vector<models::Profile> profiles;
  for (int layers = 1; layers <= 8; ++layers) {
    for (int batch : {16, 64}) {
      models::Profile p;
      p.node_name = "n1";
      p.workload.family = "lstm";
      p.workload.params = {{"layers", layers}};
      p.workload.batch_size = batch;
      p.iteration.mean_ms = 1.0 + layers * batch / 100.0;
      p.iteration.count = 10;
      p.conditions.board_power_w = 200;
      profiles.push_back(p);
    }
  }
  FitOptions options;
  options.folds = 2;
  absl::StatusOr<PredictorModel> model = Fit(profiles, {{"n1", node}}, options);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->power.calibrations.count("lstm/fp32"), 1u);
  EXPECT_DOUBLE_EQ(model->power.calibrations.at("lstm/fp32").utilisation, 0.5);
  EXPECT_EQ(model->power.calibrations.at("*").rows, 16);
}

}  // namespace
}  // namespace perfcast::predictor
