#include "predictor/cross_validation.h"

#include <cmath>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "predictor/folds.h"

namespace perfcast::predictor {
namespace {

// Σ w·a·bᵀ-style block of rows [begin, begin+count) of x, in one GEMM-like
// pass: Eigen's rankUpdate touches each row once and only the lower half.
Eigen::MatrixXd WeightedGram(const Eigen::MatrixXd& x, const Eigen::VectorXd& w,
                             bool unit_weights, int64_t begin, int64_t count) {
  const Eigen::Index p = x.cols();
  Eigen::MatrixXd gram = Eigen::MatrixXd::Zero(p, p);
  if (unit_weights) {
    gram.selfadjointView<Eigen::Lower>().rankUpdate(x.middleRows(begin, count).transpose());
  } else {
    const Eigen::MatrixXd scaled =
        x.middleRows(begin, count).array().colwise() * w.segment(begin, count).cwiseSqrt().array();
    gram.selfadjointView<Eigen::Lower>().rankUpdate(scaled.transpose());
  }
  gram.triangularView<Eigen::StrictlyUpper>() = gram.transpose();
  return gram;
}

}  // namespace

absl::string_view ScoringName(Scoring scoring) {
  switch (scoring) {
    case Scoring::kMape: return "mape";
    case Scoring::kMse: return "mse";
    case Scoring::kR2: return "r2";
  }
  return "unknown";
}

absl::StatusOr<Scoring> ParseScoring(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "mape") return Scoring::kMape;
  if (lower == "mse") return Scoring::kMse;
  if (lower == "r2") return Scoring::kR2;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown scoring '", name, "': expected mape, mse or r2"));
}

absl::StatusOr<CrossValidator> CrossValidator::Create(const Eigen::MatrixXd& x,
                                                      const Eigen::VectorXd& y,
                                                      absl::Span<const int> fold_of_row,
                                                      const RegressionOptions& options) {
  const int64_t n = x.rows();
  const int64_t p = x.cols();
  if (y.size() != n || static_cast<int64_t>(fold_of_row.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cross-validation: ", n, " rows, ", y.size(), " targets, ", fold_of_row.size(),
        " fold ids"));
  }
  if (n == 0) return absl::InvalidArgumentError("cross-validation: no rows");
  if (!x.allFinite() || !y.allFinite()) {
    return absl::InvalidArgumentError("cross-validation: non-finite feature or target");
  }
  if (!(options.ridge >= 0)) return absl::InvalidArgumentError("ridge must be >= 0");
  ASSIGN_OR_RETURN(int k, CountFolds(fold_of_row));
  if (k < 2) {
    return absl::FailedPreconditionError("cross-validation needs at least two folds");
  }
  ASSIGN_OR_RETURN(Eigen::VectorXd weights, RowWeights(y, options));
  for (int64_t i = 0; i < n; ++i) {
    if (y(i) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cross-validation: row ", i, " has target 0; relative errors are undefined"));
    }
  }

  CrossValidator cv;
  cv.options_ = options;
  // Counting sort of rows by fold keeps each fold contiguous and rows in
  // their input order within it.
  cv.fold_begin_.assign(k + 1, 0);
  for (int f : fold_of_row) ++cv.fold_begin_[f + 1];
  for (int f = 0; f < k; ++f) cv.fold_begin_[f + 1] += cv.fold_begin_[f];
  cv.original_row_.resize(n);
  std::vector<int64_t> next(cv.fold_begin_.begin(), cv.fold_begin_.end() - 1);
  for (int64_t i = 0; i < n; ++i) cv.original_row_[next[fold_of_row[i]]++] = i;

  cv.x_.resize(n, p);
  cv.y_.resize(n);
  Eigen::VectorXd w(n);
  for (int64_t r = 0; r < n; ++r) {
    cv.y_(r) = y(cv.original_row_[r]);
    w(r) = weights(cv.original_row_[r]);
  }
  if (options.loss == Loss::kAbsolute) cv.w_ = w;
  for (int64_t j = 0; j < p; ++j) {
    const double mean = x.col(j).mean();
    const double sd = std::sqrt((x.col(j).array() - mean).square().mean());
    const double scale = sd > 0 ? sd : 1.0;
    for (int64_t r = 0; r < n; ++r) cv.x_(r, j) = (x(cv.original_row_[r], j) - mean) / scale;
  }
  cv.inv_abs_y_ = cv.y_.cwiseAbs().cwiseInverse();

  const int folds = k;
  cv.sum_w_.resize(folds);
  cv.sum_wy_.resize(folds);
  cv.sum_wyy_.resize(folds);
  cv.sum_wx_.resize(folds);
  cv.sum_wxy_.resize(folds);
  cv.sum_wxx_.resize(folds);
  for (int f = 0; f < folds; ++f) {
    const int64_t begin = cv.fold_begin_[f];
    const int64_t count = cv.fold_begin_[f + 1] - begin;
    const auto wf = w.segment(begin, count);
    const auto yf = cv.y_.segment(begin, count);
    const Eigen::VectorXd wy = wf.cwiseProduct(yf);
    cv.sum_w_[f] = wf.sum();
    cv.sum_wy_[f] = wy.sum();
    cv.sum_wyy_[f] = wy.dot(yf);
    cv.sum_wx_[f] = cv.x_.middleRows(begin, count).transpose() * wf;
    cv.sum_wxy_[f] = cv.x_.middleRows(begin, count).transpose() * wy;
    cv.sum_wxx_[f] = WeightedGram(cv.x_, w, !options.relative_weights, begin, count);
  }
  cv.train_w_.assign(folds, 0);
  cv.train_wy_.assign(folds, 0);
  cv.train_wx_.assign(folds, Eigen::VectorXd::Zero(p));
  cv.train_wxy_.assign(folds, Eigen::VectorXd::Zero(p));
  cv.train_wxx_.assign(folds, Eigen::MatrixXd::Zero(p, p));
  for (int f = 0; f < folds; ++f) {
    for (int g = 0; g < folds; ++g) {
      if (g == f) continue;
      cv.train_w_[f] += cv.sum_w_[g];
      cv.train_wy_[f] += cv.sum_wy_[g];
      cv.train_wx_[f] += cv.sum_wx_[g];
      cv.train_wxy_[f] += cv.sum_wxy_[g];
      cv.train_wxx_[f] += cv.sum_wxx_[g];
    }
  }
  return cv;
}

absl::StatusOr<CrossValidator::FoldFit> CrossValidator::FitFold(
    int fold, absl::Span<const int> subset) const {
  const int s = static_cast<int>(subset.size());
  const double sw = train_w_[fold];
  const double mean_y = train_wy_[fold] / sw;
  Eigen::VectorXd mean_x(s);
  for (int a = 0; a < s; ++a) mean_x(a) = train_wx_[fold](subset[a]) / sw;
  FoldFit fit;
  if (s == 0) {
    fit.intercept = mean_y;
    if (options_.loss == Loss::kAbsolute) return FitFoldAbsolute(fold, subset, Eigen::VectorXd(), fit);
    return fit;
  }
  // Weighted covariance of the subset, then scaled to a correlation matrix
  // so that the ridge and the singularity test mean the same as in FitLinear.
  Eigen::MatrixXd g(s, s);
  Eigen::VectorXd c(s);
  for (int a = 0; a < s; ++a) {
    c(a) = train_wxy_[fold](subset[a]) / sw - mean_x(a) * mean_y;
    for (int b = 0; b <= a; ++b) {
      g(a, b) = train_wxx_[fold](subset[a], subset[b]) / sw - mean_x(a) * mean_x(b);
      g(b, a) = g(a, b);
    }
  }
  Eigen::VectorXd sd(s);
  for (int a = 0; a < s; ++a) {
    if (!(g(a, a) > 1e-26)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "column ", subset[a], " is constant on the training rows of fold ", fold));
    }
    sd(a) = std::sqrt(g(a, a));
  }
  const Eigen::MatrixXd corr = sd.cwiseInverse().asDiagonal() * g * sd.cwiseInverse().asDiagonal() +
                               options_.ridge * Eigen::MatrixXd::Identity(s, s);
  ASSIGN_OR_RETURN(Eigen::VectorXd z, SolveGram(corr, c.cwiseQuotient(sd), options_.non_negative));
  fit.beta = z.cwiseQuotient(sd);
  fit.intercept = mean_y - mean_x.dot(fit.beta);
  if (options_.loss == Loss::kAbsolute) return FitFoldAbsolute(fold, subset, sd, fit);
  return fit;
}

absl::StatusOr<CrossValidator::FoldFit> CrossValidator::FitFoldAbsolute(
    int fold, absl::Span<const int> subset, const Eigen::VectorXd& sd,
    const FoldFit& squared) const {
  // The absolute loss has no sufficient statistics: its reweighted solves
  // read the training rows themselves (the rows outside fold f's block),
  // scaled by their sd as the squared fit is, so that the ridge means the same.
  const int s = static_cast<int>(subset.size());
  const int64_t begin = fold_begin_[fold];
  const int64_t end = fold_begin_[fold + 1];
  const int64_t n = num_rows() - (end - begin);
  Eigen::MatrixXd z(n, s);
  Eigen::VectorXd y(n), w(n);
  int64_t row = 0;
  for (int64_t r = 0; r < num_rows(); ++r) {
    if (r == begin) r = end;
    if (r >= num_rows()) break;
    for (int a = 0; a < s; ++a) z(row, a) = x_(r, subset[a]) / sd(a);
    y(row) = y_(r);
    w(row) = w_(r);
    ++row;
  }
  ASSIGN_OR_RETURN(
      AffineSolution solved,
      SolveAbsoluteLoss(z, y, w, AffineSolution{squared.intercept, squared.beta.cwiseProduct(sd)},
                        options_.ridge, options_.non_negative));
  FoldFit fit;
  fit.intercept = solved.intercept;
  fit.beta = solved.beta.cwiseQuotient(sd);
  return fit;
}

double CrossValidator::HeldOutSse(int fold, absl::Span<const int> subset,
                                  const FoldFit& fit) const {
  const int s = static_cast<int>(subset.size());
  const double b0 = fit.intercept;
  double beta_wxy = 0, beta_wx = 0, quad = 0;
  for (int a = 0; a < s; ++a) {
    beta_wxy += fit.beta(a) * sum_wxy_[fold](subset[a]);
    beta_wx += fit.beta(a) * sum_wx_[fold](subset[a]);
    double row = 0;
    for (int b = 0; b < s; ++b) row += sum_wxx_[fold](subset[a], subset[b]) * fit.beta(b);
    quad += fit.beta(a) * row;
  }
  const double sse = sum_wyy_[fold] - 2 * b0 * sum_wy_[fold] - 2 * beta_wxy +
                     b0 * b0 * sum_w_[fold] + 2 * b0 * beta_wx + quad;
  return std::max(0.0, sse);
}

absl::StatusOr<double> CrossValidator::Loss(absl::Span<const int> subset, Scoring scoring) const {
  const int folds = num_folds();
  double total = 0;
  for (int f = 0; f < folds; ++f) {
    ASSIGN_OR_RETURN(FoldFit fit, FitFold(f, subset));
    switch (scoring) {
      case Scoring::kMape: {
        const int64_t begin = fold_begin_[f];
        const int64_t count = fold_begin_[f + 1] - begin;
        Eigen::VectorXd residual = y_.segment(begin, count).array() - fit.intercept;
        for (size_t a = 0; a < subset.size(); ++a) {
          residual.noalias() -= fit.beta(a) * x_.col(subset[a]).segment(begin, count);
        }
        total += residual.cwiseAbs().dot(inv_abs_y_.segment(begin, count));
        break;
      }
      case Scoring::kMse:
        total += HeldOutSse(f, subset, fit);
        break;
      case Scoring::kR2: {
        const double sst = sum_wyy_[f] - sum_wy_[f] * sum_wy_[f] / sum_w_[f];
        if (!(sst > 0)) {
          return absl::FailedPreconditionError(
              absl::StrCat("R² is undefined: fold ", f, " has a constant target"));
        }
        total += HeldOutSse(f, subset, fit) / sst;
        break;
      }
    }
  }
  double loss = 0;
  switch (scoring) {
    case Scoring::kMape: loss = total / static_cast<double>(num_rows()); break;
    case Scoring::kMse: {
      double sw = 0;
      for (double v : sum_w_) sw += v;
      loss = total / sw;
      break;
    }
    case Scoring::kR2: loss = total / folds; break;
  }
  if (!std::isfinite(loss)) {
    return absl::FailedPreconditionError("cross-validated loss is not finite");
  }
  return loss;
}

absl::StatusOr<Eigen::VectorXd> CrossValidator::HeldOutPredictions(
    absl::Span<const int> subset) const {
  Eigen::VectorXd out(num_rows());
  for (int f = 0; f < num_folds(); ++f) {
    ASSIGN_OR_RETURN(FoldFit fit, FitFold(f, subset));
    for (int64_t r = fold_begin_[f]; r < fold_begin_[f + 1]; ++r) {
      double prediction = fit.intercept;
      for (size_t a = 0; a < subset.size(); ++a) prediction += fit.beta(a) * x_(r, subset[a]);
      out(original_row_[r]) = prediction;
    }
  }
  if (!out.allFinite()) return absl::FailedPreconditionError("non-finite held-out prediction");
  return out;
}

}  // namespace perfcast::predictor
