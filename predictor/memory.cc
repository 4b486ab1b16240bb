#include "predictor/memory.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/quantile.h"
#include "base/status_macros.h"
#include "predictor/folds.h"
#include "predictor/regression.h"

namespace perfcast::predictor {
namespace {

constexpr int kMemoryFolds = 5;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct Row {
  MemoryTerms terms;
  double peak = 0;
  std::string workload;  // the key: one workload on several GPUs is one group
  std::string family;
  std::string phase;
};

std::array<double, kMemoryFeatures> Features(const MemoryTerms& t) {
  return {1.0,
          t.activations,
          t.inputs,
          t.fp32_activations,
          t.largest_op_bytes,
          t.fp32_largest_op_bytes,
          t.forward_bytes};
}

// Non-negative least squares of (peak − persistent) / peak on the features
// divided by peak: relative error, so small and large steps count alike.
// Columns are scaled to a maximum of 1 for the solver's conditioning. The
// answer is the best unconstrained solution, over every subset of the
// non-zero columns, that is non-negative: exactly the NNLS optimum when the
// columns are independent, and still an answer when a small group makes
// some of them collinear (a family measured at one precision, inference
// rows whose largest operation is their largest output). Subsets are tried
// smallest first and a larger one must fit measurably better, so that a
// group with fewer workloads than features (which several subsets fit
// exactly) gets the fewest features rather than whichever rounding favours.
// With at most kMemoryFeatures columns that is at most 127 small solves.
absl::StatusOr<MemoryCalibration> FitRows(absl::Span<const Row* const> rows) {
  Eigen::MatrixXd x(rows.size(), kMemoryFeatures);
  Eigen::VectorXd y(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::array<double, kMemoryFeatures> f = Features(rows[i]->terms);
    for (int j = 0; j < kMemoryFeatures; ++j) x(i, j) = f[j] / rows[i]->peak;
    y(i) = (rows[i]->peak - rows[i]->terms.persistent()) / rows[i]->peak;
  }
  std::vector<int> used;
  Eigen::VectorXd scale(kMemoryFeatures);
  for (int j = 0; j < kMemoryFeatures; ++j) {
    scale(j) = x.col(j).cwiseAbs().maxCoeff();
    if (scale(j) > 0) used.push_back(j);
  }
  Eigen::MatrixXd xs(rows.size(), used.size());
  for (size_t k = 0; k < used.size(); ++k) xs.col(k) = x.col(used[k]) / scale(used[k]);
  const Eigen::MatrixXd gram = xs.transpose() * xs;
  const Eigen::VectorXd xty = xs.transpose() * y;
  const double yty = y.squaredNorm();
  double best_sse = HUGE_VAL;
  Eigen::VectorXd best = Eigen::VectorXd::Zero(used.size());
  std::vector<uint32_t> masks;
  for (uint32_t mask = 1; mask < (1u << used.size()); ++mask) masks.push_back(mask);
  std::stable_sort(masks.begin(), masks.end(), [](uint32_t a, uint32_t b) {
    return std::popcount(a) < std::popcount(b);
  });
  for (uint32_t mask : masks) {
    std::vector<int> subset;
    for (size_t k = 0; k < used.size(); ++k) {
      if (mask & (1u << k)) subset.push_back(static_cast<int>(k));
    }
    Eigen::MatrixXd g(subset.size(), subset.size());
    Eigen::VectorXd c(subset.size());
    for (size_t a = 0; a < subset.size(); ++a) {
      c(a) = xty(subset[a]);
      for (size_t b = 0; b < subset.size(); ++b) g(a, b) = gram(subset[a], subset[b]);
    }
    absl::StatusOr<Eigen::VectorXd> beta = SolveGram(g, c, /*non_negative=*/false);
    if (!beta.ok() || beta->minCoeff() < 0) continue;
    // ‖y − Xb‖² = y'y − 2 b'X'y + b'X'Xb, from the Gram matrix alone.
    const double sse = yty - 2 * beta->dot(c) + beta->dot(g * *beta);
    if (sse < best_sse - 1e-12 * yty) {
      best_sse = sse;
      best.setZero();
      for (size_t a = 0; a < subset.size(); ++a) best(subset[a]) = (*beta)(a);
    }
  }
  if (!(best_sse < HUGE_VAL)) {
    return absl::FailedPreconditionError("memory: no non-negative fit of the measured peaks");
  }
  MemoryCalibration c;
  c.coefficients.assign(kMemoryFeatures, 0.0);
  for (size_t k = 0; k < used.size(); ++k) c.coefficients[used[k]] = best(k) / scale(used[k]);
  c.rows = static_cast<int64_t>(rows.size());
  double error = 0;
  for (const Row* row : rows) error += std::abs(c.Predict(row->terms) - row->peak) / row->peak;
  c.fit_mape = error / rows.size();
  return c;
}

// Fits on all rows and cross-validates with folds over workloads, so that the
// same workload measured on two GPUs never sits on both sides of a split.
absl::StatusOr<MemoryCalibration> Calibrate(const std::string& scope,
                                            absl::Span<const Row* const> rows) {
  ASSIGN_OR_RETURN(MemoryCalibration all, FitRows(rows));
  absl::flat_hash_map<std::string, int> workload_index;
  std::vector<int> group_of_row;
  for (const Row* row : rows) {
    auto [it, inserted] = workload_index.try_emplace(row->workload, workload_index.size());
    group_of_row.push_back(it->second);
  }
  const int64_t groups = static_cast<int64_t>(workload_index.size());
  if (groups < kMinMemoryWorkloads) {
    return absl::FailedPreconditionError(absl::StrCat(scope, ": too few workloads"));
  }
  const int folds = static_cast<int>(std::min<int64_t>(kMemoryFolds, groups));
  ASSIGN_OR_RETURN(std::vector<int> fold_of_group, RandomFolds(groups, folds, 1));
  std::vector<double> errors(rows.size());
  for (int fold = 0; fold < folds; ++fold) {
    std::vector<const Row*> train;
    for (size_t i = 0; i < rows.size(); ++i) {
      if (fold_of_group[group_of_row[i]] != fold) train.push_back(rows[i]);
    }
    ASSIGN_OR_RETURN(MemoryCalibration part, FitRows(train));
    for (size_t i = 0; i < rows.size(); ++i) {
      if (fold_of_group[group_of_row[i]] == fold) {
        errors[i] = (part.Predict(rows[i]->terms) - rows[i]->peak) / rows[i]->peak;
      }
    }
  }
  MemoryCalibration c = std::move(all);
  c.scope = scope;
  double sum = 0;
  for (double e : errors) {
    sum += std::abs(e);
    c.cv_max_error = std::max(c.cv_max_error, std::abs(e));
  }
  c.cv_mape = sum / errors.size();
  c.error_p10 = Quantile(errors, 0.1);
  c.error_p90 = Quantile(errors, 0.9);
  return c;
}

}  // namespace

int OptimizerStates(const models::WorkloadSpec& spec) {
  if (spec.phase != models::Phase::kTrain || spec.optimizer == "none") return 0;
  if (spec.optimizer == "sgd") return 1;
  return 2;  // adam, adamw: first and second moments
}

int OptimizerTemporaries(const models::WorkloadSpec& spec) {
  if (spec.phase != models::Phase::kTrain) return 0;
  return spec.optimizer == "adam" || spec.optimizer == "adamw" ? 1 : 0;
}

double MemoryCalibration::Predict(const MemoryTerms& terms) const {
  const std::array<double, kMemoryFeatures> f = Features(terms);
  double y = terms.persistent();
  for (size_t j = 0; j < coefficients.size() && j < f.size(); ++j) y += coefficients[j] * f[j];
  return std::max(y, terms.optimizer_peak());
}

MemoryTerms AnalyticMemory(const models::WorkloadDescriptor& d) {
  const models::WorkloadSpec& spec = d.spec;
  const double master = spec.precision == models::Precision::kFp64 ? 8 : 4;
  const bool amp = models::IsMixedPrecision(spec.precision);
  const bool train = spec.phase == models::Phase::kTrain;
  MemoryTerms t;
  t.weights = d.parameters * master;
  t.gradients = train ? d.parameters * master : 0;
  t.optimizer_state = OptimizerStates(spec) * d.parameters * master;
  t.optimizer_temporaries = OptimizerTemporaries(spec) * d.parameters * master;
  t.amp_copies = amp && train ? d.parameters * 2 : 0;
  t.activations = d.activation_bytes;
  t.inputs = d.input_bytes;
  const bool wide = spec.precision == models::Precision::kFp32 ||
                    spec.precision == models::Precision::kStrictFp32 ||
                    spec.precision == models::Precision::kTf32 ||
                    spec.precision == models::Precision::kFp64;
  t.fp32_activations = wide ? d.activation_bytes : 0;
  for (const models::Operation& op : d.operations) {
    if (op.op_class == models::OpClass::kOptimizer ||
        op.op_class == models::OpClass::kHostToDevice) {
      continue;
    }
    t.largest_op_bytes = std::max(t.largest_op_bytes, op.bytes);
  }
  t.fp32_largest_op_bytes = wide ? t.largest_op_bytes : 0;
  t.forward_bytes = d.forward_bytes;
  return t;
}

MemoryModel FitMemory(absl::Span<const DescribedProfile> profiles) {
  std::vector<Row> rows;
  for (const DescribedProfile& p : profiles) {
    if (p.profile.workload.kind != models::WorkloadKind::kModel) continue;
    if (!p.profile.peak_memory_bytes.has_value() || !(*p.profile.peak_memory_bytes > 0) ||
        !std::isfinite(*p.profile.peak_memory_bytes)) {
      continue;
    }
    rows.push_back({AnalyticMemory(p.descriptor), *p.profile.peak_memory_bytes,
                    p.profile.workload.Key(), p.profile.workload.family,
                    std::string(models::PhaseName(p.profile.workload.phase))});
  }
  MemoryModel model;
  std::map<std::string, std::vector<const Row*>> groups;
  for (const Row& row : rows) {
    groups[absl::StrCat(row.family, "/", row.phase)].push_back(&row);
    groups[absl::StrCat("*/", row.phase)].push_back(&row);
  }
  for (const auto& [scope, group] : groups) {
    if (static_cast<int64_t>(group.size()) < kMinMemoryRows) continue;
    absl::StatusOr<MemoryCalibration> c = Calibrate(scope, group);
    if (c.ok()) model.calibrations[scope] = *std::move(c);
  }
  return model;
}

MemoryInputs MemoryInputsOf(const models::WorkloadDescriptor& descriptor) {
  MemoryInputs inputs;
  inputs.terms = AnalyticMemory(descriptor);
  const std::string phase(models::PhaseName(descriptor.spec.phase));
  inputs.scopes = {absl::StrCat(descriptor.spec.family, "/", phase), absl::StrCat("*/", phase)};
  for (int i = 0; i < 2; ++i) inputs.methods[i] = absl::StrCat("calibrated:", inputs.scopes[i]);
  return inputs;
}

MemoryEstimate EstimateMemory(const MemoryModel& model,
                              const models::WorkloadDescriptor& descriptor) {
  return EstimateMemory(model, MemoryInputsOf(descriptor));
}

MemoryEstimate EstimateMemory(const MemoryModel& model, const MemoryInputs& inputs) {
  MemoryEstimate e;
  e.terms = inputs.terms;
  const MemoryCalibration* c = nullptr;
  int found = 0;
  for (; found < 2; ++found) {
    auto it = model.calibrations.find(inputs.scopes[found]);
    if (it != model.calibrations.end()) {
      c = &it->second;
      break;
    }
  }
  if (c == nullptr) {
    e.peak_bytes = e.low_bytes = e.high_bytes =
        std::max(e.terms.total(), e.terms.optimizer_peak());
    e.method = "analytic";
  } else {
    e.peak_bytes = c->Predict(e.terms);
    // measured ≈ predicted / (1 + error), as for times.
    e.low_bytes = e.peak_bytes / (1 + std::max(c->error_p90, -0.5));
    e.high_bytes = e.peak_bytes / (1 + std::max(c->error_p10, -0.5));
    e.method = c->scope == inputs.scopes[found] ? inputs.methods[found]
                                                : absl::StrCat("calibrated:", c->scope);
  }
  e.required_bytes = e.peak_bytes * (1 + kAllocatorSlack) + kCudaContextBytes;
  return e;
}

MemoryVerdict CheckMemoryFit(const MemoryEstimate& estimate, const models::GpuSpec& gpu) {
  MemoryVerdict v;
  v.device_bytes = gpu.memory_gib * kGiB;
  v.required_bytes = estimate.required_bytes;
  if (v.device_bytes > 0 && estimate.required_bytes > v.device_bytes) {
    v.fits = false;
    v.reason = absl::StrFormat(
        "does not fit: needs %.1f GiB (peak %.1f GiB + allocator slack + CUDA context), %s has "
        "%.1f GiB",
        estimate.required_bytes / kGiB, estimate.peak_bytes / kGiB, gpu.model,
        v.device_bytes / kGiB);
  }
  return v;
}

}  // namespace perfcast::predictor
