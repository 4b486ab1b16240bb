#include "predictor/prediction_parts.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "models/iteration_builder.h"

namespace perfcast::predictor::internal {
namespace {

// Interval quantiles: the middle 80% of held-out relative errors.
constexpr double kLowQuantile = 0.1;
constexpr double kHighQuantile = 0.9;
// A GPU a model never saw and knows from its spec sheet alone, when the
// model's rows came from one GPU only and so say nothing about the error on
// another: the band this many times wider. Where the agent measured the
// GPU's rates, the random-fold band serves as it is: widened, it covered
// far more than 80% of a held-out GPU's steps (docs/code-evidence.md,
// "Interval widths").
constexpr double kUnseenWidening = 1.75;
}  // namespace

BandFactors BandFor(const FittedModel& model, const Target& target, double rate_spread,
                    LoadWidth width) {
  const bool unseen = std::find(model.training_gpus.begin(), model.training_gpus.end(),
                                target.gpu) == model.training_gpus.end();
  const double high_error = std::max(model.ErrorQuantile(kHighQuantile, unseen, width), -0.95);
  const double low_error = std::max(model.ErrorQuantile(kLowQuantile, unseen, width), -0.95);
  double below = std::max(0.0, std::log1p(high_error));  // log(predicted / lo)
  double above = std::max(0.0, -std::log1p(low_error));  // log(hi / predicted)
  if (!model.reference_error_quantiles.empty()) {
    // A family's model: at least the global model's scatter on the
    // family's rows around their median (model.h says why): the family's
    // own band alone was too narrow on a held-out GPU, the union with the
    // global model's whole band too wide (docs/code-evidence.md, "Interval
    // widths").
    auto log1p_of = [&](double q) {
      return std::log1p(std::max(model.ReferenceErrorQuantile(q), -0.95));
    };
    const double median = log1p_of(0.5);
    below = std::max(below, log1p_of(kHighQuantile) - median);
    above = std::max(above, median - log1p_of(kLowQuantile));
  }
  if (unseen && model.transfer_error_quantiles.empty() && target.spec_rates) {
    below *= kUnseenWidening;
    above *= kUnseenWidening;
  }
  if (target.spec_rates && rate_spread > 0) {
    const double spread = kBandZ90 * model.distance_scale * rate_spread;
    below = std::hypot(below, spread);
    above = std::hypot(above, spread);
  }
  return {std::exp(-below), std::exp(above)};
}

void WidenBand(double rate_spread, Prediction& prediction) {
  if (!(rate_spread > 0) || !(prediction.lo_ms > 0) || !(prediction.hi_ms > 0)) return;
  const double y = prediction.iteration_ms;
  const double below = std::log(y / prediction.lo_ms), above = std::log(prediction.hi_ms / y);
  prediction.lo_ms = y * std::exp(-std::hypot(std::max(0.0, below), kBandZ90 * rate_spread));
  prediction.hi_ms = y * std::exp(std::hypot(std::max(0.0, above), kBandZ90 * rate_spread));
}

std::vector<models::Operation> SplitAttention(const models::Operation& op) {
  auto get = [&](const char* name) {
    auto it = op.shape.find(name);
    return it == op.shape.end() ? 1.0 : static_cast<double>(it->second);
  };
  const double b = get("batch") * get("heads"), s = get("seq_len"), d = get("head_dim");
  const bool backward = op.name.size() >= 4 && op.name.substr(op.name.size() - 4) == ".bwd";
  const double es = models::ElementBytes(op.precision);
  std::vector<models::Operation> out;
  auto gemm = [&](double m, double n, double k) {
    models::Operation g;
    g.op_class = models::OpClass::kGemm;
    g.name = op.name + ".bmm";
    g.shape = {{"m", static_cast<int64_t>(m)}, {"n", static_cast<int64_t>(n)},
               {"k", static_cast<int64_t>(k)}, {"batch", static_cast<int64_t>(b)}};
    g.precision = op.precision;
    g.flops = 2 * m * n * k * b;
    g.bytes = es * (m * k + k * n + m * n) * b;
    g.work_items = models::GemmTiles(m, n, b);
    g.count = op.count;
    out.push_back(g);
  };
  const double scores = b * s * s;
  gemm(s, s, d);  // QKᵀ (dS·K for dQ backward)
  gemm(s, d, s);  // AV (Pᵀ·dO for dV backward)
  if (backward) {
    gemm(s, s, d);  // dP = dO·Vᵀ
    gemm(s, d, s);  // dK = dSᵀ·Q
  }
  models::Operation softmax;
  softmax.op_class = models::OpClass::kSoftmax;
  softmax.name = op.name + ".softmax";
  softmax.precision = op.precision;
  softmax.flops = 5 * scores;
  softmax.bytes = (backward ? 3 : 2) * es * scores;
  softmax.work_items = std::max(1.0, std::ceil(scores / 1024));
  softmax.count = op.count;
  out.push_back(softmax);
  models::Operation scale = softmax;
  scale.op_class = models::OpClass::kElementwise;
  scale.name = op.name + ".scale";
  scale.flops = scores;
  scale.bytes = 2 * es * scores;
  out.push_back(scale);
  return out;
}

absl::Status CheckCanPrice(const PredictorModel& model,
                           const models::WorkloadDescriptor& descriptor,
                           bool have_level2) {
  if (!have_level2 && model.level1.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the model has no level-2 model for phase '", models::PhaseName(descriptor.spec.phase),
        "' and no level-1 models"));
  }
  const bool operation = descriptor.spec.kind == models::WorkloadKind::kOperation;
  if (operation && (descriptor.operations.empty() ||
                    !model.level1.contains(descriptor.operations.front().op_class))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no level-1 model for operation class '",
        descriptor.operations.empty() ? "none" : OpClassKey(descriptor.operations.front().op_class),
        "'"));
  }
  return absl::OkStatus();
}

bool OutsideTrainingRange(const FittedModel& model, size_t j, double value) {
  const double slack =
      1e-9 * std::max(std::abs(model.feature_min[j]), std::abs(model.feature_max[j]));
  return value < model.feature_min[j] - slack || value > model.feature_max[j] + slack;
}

Method Level2Method(bool uses_level1, bool uses_gpu, bool reduced) {
  if (!uses_level1 && !uses_gpu) return Method::kLevel2Direct;
  return reduced ? Method::kTwoLevelReduced : Method::kTwoLevel;
}

void AnswerWithLevel1(double level1_ms, double level1_lo, double level1_hi, double floor_ms,
                      bool operation, Prediction& prediction) {
  prediction.iteration_ms = level1_ms;
  prediction.lo_ms = level1_lo;
  prediction.hi_ms = level1_hi;
  if (prediction.method == Method::kLevel1Fallback) {
    if (floor_ms > prediction.iteration_ms) {
      // The band keeps its shape around the raised answer.
      const double raise = prediction.iteration_ms > 0 ? floor_ms / prediction.iteration_ms : 0;
      prediction.iteration_ms = floor_ms;
      prediction.lo_ms = raise > 0 ? prediction.lo_ms * raise : floor_ms;
      prediction.hi_ms = raise > 0 ? prediction.hi_ms * raise : floor_ms;
    }
  } else {
    prediction.method = operation ? Method::kLevel1Operation : Method::kLevel1Sum;
  }
  const double center = prediction.iteration_ms;
  if (!operation && center > 0 && prediction.lo_ms > 0) {
    prediction.lo_ms = center * std::pow(prediction.lo_ms / center, kLevel1FallbackWidening);
    prediction.hi_ms = center * std::pow(prediction.hi_ms / center, kLevel1FallbackWidening);
  }
}

bool IsHostTerm(absl::string_view workload_feature) {
  return workload_feature == "dispatch_ms" || workload_feature == "module_latency_ms" ||
         workload_feature == "launch_ms";
}

double HostTermsMs(const FittedModel& model, absl::Span<const double> values) {
  // Per Predict on the pricing plan's path: the raw coefficients of the host
  // terms only, as LinearFit::RawCoefficients makes them, without its vector.
  const LinearFit& fit = model.fit;
  double host_ms = 0;
  const size_t n = std::min({model.features.size(), values.size(), fit.coefficients.size()});
  for (size_t j = 0; j < n; ++j) {
    if (IsHostTerm(model.features[j])) host_ms += fit.coefficients[j] / fit.scale[j] * values[j];
  }
  return std::isfinite(host_ms) ? std::max(0.0, host_ms) : 0.0;
}

void SetBreakdownScale(double level1_ms, double host_ms, Prediction& prediction) {
  prediction.host_ms = std::clamp(host_ms, 0.0, std::max(0.0, prediction.iteration_ms));
  const double rest_ms = prediction.iteration_ms - prediction.host_ms;
  prediction.breakdown_scale = level1_ms > 0 ? rest_ms / level1_ms : 1;
}

}  // namespace perfcast::predictor::internal
