#include "tests/client/report_samples.h"

#include <cmath>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "predictor/model.h"

namespace perfcast::client {

v1::EvaluateResponse SampleEvaluation() {
  v1::EvaluateResponse e;
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 0.08);
  const char* gpus[] = {"H100-SXM5-80GB", "H200-SXM-141GB"};
  const char* families[] = {"lstm", "transformer", "cnn"};
  double sum[3] = {0, 0, 0};
  int count[3] = {0, 0, 0};
  for (int g = 0; g < 2; ++g) {
    for (int f = 0; f < 3; ++f) {
      for (int layers = 1; layers <= 8; layers *= 2) {
        for (int batch : {16, 64, 256}) {
          v1::EvaluatedPoint* p = e.add_points();
          p->set_gpu_model(gpus[g]);
          p->set_family(families[f]);
          p->set_precision("fp32");
          p->set_workload_key(absl::StrCat("model/", families[f], "{layers=", layers, "}/b", batch,
                                           "/fp32/train/adam"));
          p->set_level(2);
          p->set_measured_ms(0.5 * layers * std::sqrt(batch) * (g == 0 ? 1.2 : 1.0));
          const double error = noise(rng) + (g == 1 ? 0.05 : -0.02);
          p->set_predicted_ms(p->measured_ms() * (1 + error));
          p->set_predicted_ms_low(p->predicted_ms() * 0.9);
          p->set_predicted_ms_high(p->predicted_ms() * 1.1);
          sum[2] += std::abs(error);
          ++count[2];
        }
      }
      for (int k = 0; k < 20; ++k) {
        v1::EvaluatedPoint* p = e.add_points();
        p->set_gpu_model(gpus[g]);
        p->set_family("gemm");
        p->set_precision("bf16-amp");
        p->set_workload_key(absl::StrCat("operation/gemm{k=", 64 << (k % 6), "}/b1/bf16-amp/inference/-"));
        p->set_level(1);
        p->set_measured_ms(0.01 * (1 + k));
        const double error = noise(rng);
        p->set_predicted_ms(p->measured_ms() * (1 + error));
        sum[1] += std::abs(error);
        ++count[1];
      }
    }
  }
  e.set_level1_mape(sum[1] / count[1]);
  e.set_level2_mape(sum[2] / count[2]);
  e.add_notes("split H200-SXM-141GB: a note the report lists");

  predictor::PredictorModel model;
  predictor::FittedModel level2;
  level2.level = 2;
  level2.target = "iteration_ms";
  level2.scope = "train";
  level2.features = {"level1_ms", "launch_us"};
  level2.fit.mean = {10, 200};
  level2.fit.scale = {5, 50};
  level2.fit.coefficients = {5.2, 0.4};
  level2.fit.intercept = 11;
  level2.cv_mape = 0.071;
  level2.training_rows = 300;
  level2.training_gpus = {"H100-SXM5-80GB", "H200-SXM-141GB"};
  level2.feature_min = {0.1, 50};
  level2.feature_max = {900, 400};
  model.level2[models::Phase::kTrain] = level2;
  nlohmann::json report = {{"split", "gpu"},
                           {"model", nlohmann::json::parse(*predictor::SerializeModel(model))}};
  e.set_report_json(report.dump());
  return e;
}

v1::EvaluateResponse SampleTransferEvaluation() {
  const v1::EvaluateResponse all = SampleEvaluation();
  v1::EvaluateResponse e = all;
  e.clear_points();
  for (const v1::EvaluatedPoint& p : all.points()) {
    if (p.gpu_model() != "H200-SXM-141GB") continue;
    v1::EvaluatedPoint* out = e.add_points();
    *out = p;
    out->set_phase(p.level() == 1 ? "inference" : "train");
    if (p.level() == 1) {
      out->set_op_class("gemm");
      out->set_predicted_ms_low(p.predicted_ms() * 0.85);
      out->set_predicted_ms_high(p.predicted_ms() * 1.15);
    }
  }
  e.add_train_gpus("A100-SXM4-80GB");
  e.add_train_gpus("H100-SXM5-80GB");
  e.add_test_gpus("H200-SXM-141GB");
  e.set_level1_rows(60);
  e.set_level2_rows(36);
  e.set_level1_bias(-0.012);
  e.set_level1_mean_bias(-0.02);
  e.set_level1_coverage(0.875);
  e.set_level2_bias(0.043);
  e.set_level2_mean_bias(0.05);
  e.set_level2_coverage(0.625);
  nlohmann::json report = nlohmann::json::parse(all.report_json());
  report["split"] = "train-test-gpus";
  report["model_fitted_on"] = "training GPUs";
  e.set_report_json(report.dump());
  return e;
}

v1::RecommendResponse SampleRecommendation() {
  v1::RecommendResponse r;
  r.set_iterations(120000);
  r.set_workload_key("model/transformer{hidden=1024,layers=24}/b32/bf16-amp/train/adam");
  r.set_rank_by("cost");
  r.set_deadline_seconds(4 * 3600);
  r.set_budget_usd(40);
  r.set_model_id(3);
  r.set_model_version(2);
  struct Row {
    const char* gpu;
    double ms;
    double price;
    double memory_gib;
  } rows[] = {{"H100-SXM5-80GB", 60, 2.99, 80},  {"H200-SXM-141GB", 52, 5.408, 141},
              {"A100-SXM4-80GB", 130, 1.79, 80}, {"L40S-48GB", 170, 1.861, 48},
              {"L4-24GB", 520, 0.8048, 24},      {"T4-16GB", 1400, 0.526, 16},
              // Nearly the same time and cost: their labels would overprint.
              {"H100-PCIE-80GB", 61, 2.95, 80},  {"H100-NVL-94GB", 59, 3.0, 94},
              {"A100-PCIE-80GB", 129, 1.80, 80}, {"A100-SXM4-40GB", 131, 1.78, 40}};
  int rank = 0;
  for (const Row& row : rows) {
    v1::Candidate* c = r.add_candidates();
    c->set_rank(++rank);
    c->set_target(absl::StrCat("catalog:", row.gpu));
    c->set_gpu_model(row.gpu);
    c->set_gpu_count(1);
    c->mutable_memory()->set_required_bytes(30.0 * (1 << 30));
    c->mutable_memory()->set_device_bytes(row.memory_gib * (1 << 30));
    c->mutable_memory()->set_fits(row.memory_gib > 31);
    c->set_priced(true);
    c->mutable_price()->set_gpu_model(row.gpu);
    c->mutable_price()->set_usd_per_gpu_hour(row.price);
    c->mutable_price()->set_kind("list");
    c->mutable_price()->set_as_of("2024-06");
    c->mutable_price()->set_source("https://example.com/pricing");
    if (!c->memory().fits()) {
      c->set_excluded_by("memory");
      c->set_reason("does not fit: needs 30.0 GiB");
      continue;
    }
    c->set_predicted(true);
    c->set_iteration_ms(row.ms);
    c->set_job_seconds(row.ms * 120);
    c->set_job_seconds_low(row.ms * 120 * 0.85);
    c->set_job_seconds_high(row.ms * 120 * 1.2);
    const double per_s = row.price / 3600;
    c->set_cost_usd(c->job_seconds() * per_s);
    c->set_cost_usd_low(c->job_seconds_low() * per_s);
    c->set_cost_usd_high(c->job_seconds_high() * per_s);
    c->set_board_power_w(400);
    c->set_power_source("spec TDP x default utilisation 0.70 (no power measured)");
    c->set_energy_kwh(c->job_seconds() / 3600 * 0.4);
    c->set_energy_kwh_low(c->job_seconds_low() / 3600 * 0.4);
    c->set_energy_kwh_high(c->job_seconds_high() / 3600 * 0.4);
    c->set_meets_deadline(c->job_seconds_high() <= r.deadline_seconds());
    if (!c->meets_deadline()) {
      c->set_excluded_by("deadline");
      c->set_reason("90th-percentile time misses the deadline");
    } else if (c->cost_usd_high() > r.budget_usd()) {
      c->set_excluded_by("budget");
      c->set_reason("90th-percentile cost exceeds the budget");
    } else {
      c->set_recommended(true);
    }
  }
  return r;
}

}  // namespace perfcast::client
