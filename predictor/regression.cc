#include "predictor/regression.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace perfcast::predictor {
namespace {

// Relative pivot below which a design counts as rank deficient. Standardised
// columns have unit scale, so this is a statement about collinearity, not units.
constexpr double kRankTolerance = 1e-10;
constexpr double kGramPivotTolerance = 1e-11;
// Iteratively reweighted least squares for the absolute loss: the floor ε on
// a row's scaled residual, relative to the start's mean, the step cap, and
// the relative decrease below which the loss counts as converged.
constexpr double kAbsoluteLossFloor = 1e-4;
constexpr int kMaxIrlsSteps = 100;
constexpr double kIrlsTolerance = 1e-10;

absl::StatusOr<Eigen::VectorXd> SolveUnconstrained(const Eigen::MatrixXd& g,
                                                   const Eigen::VectorXd& c) {
  Eigen::LDLT<Eigen::MatrixXd> ldlt(g);
  if (ldlt.info() != Eigen::Success) {
    return absl::FailedPreconditionError("normal equations: factorisation failed");
  }
  const Eigen::VectorXd d = ldlt.vectorD();
  const double largest = d.cwiseAbs().maxCoeff();
  if (!(largest > 0) || d.minCoeff() <= kGramPivotTolerance * largest) {
    return absl::FailedPreconditionError(
        "normal equations are singular: the selected features are collinear");
  }
  Eigen::VectorXd beta = ldlt.solve(c);
  if (!beta.allFinite()) {
    return absl::FailedPreconditionError("normal equations gave a non-finite solution");
  }
  return beta;
}

// Lawson & Hanson (1974), "Solving Least Squares Problems", ch. 23, written
// against the Gram matrix: the gradient is c − gβ and each passive-set solve
// is a sub-block of g.
absl::StatusOr<Eigen::VectorXd> SolveNonNegative(const Eigen::MatrixXd& g,
                                                 const Eigen::VectorXd& c) {
  const int p = static_cast<int>(c.size());
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(p);
  std::vector<bool> passive(p, false);
  const double tolerance = 1e-12 * std::max(1.0, c.cwiseAbs().maxCoeff());

  auto solve_passive = [&](Eigen::VectorXd& s) -> absl::Status {
    std::vector<int> index;
    for (int j = 0; j < p; ++j) {
      if (passive[j]) index.push_back(j);
    }
    const int k = static_cast<int>(index.size());
    Eigen::MatrixXd sub(k, k);
    Eigen::VectorXd rhs(k);
    for (int a = 0; a < k; ++a) {
      rhs(a) = c(index[a]);
      for (int b = 0; b < k; ++b) sub(a, b) = g(index[a], index[b]);
    }
    ASSIGN_OR_RETURN(Eigen::VectorXd solved, SolveUnconstrained(sub, rhs));
    s = Eigen::VectorXd::Zero(p);
    for (int a = 0; a < k; ++a) s(index[a]) = solved(a);
    return absl::OkStatus();
  };

  for (int outer = 0; outer < 3 * p + 10; ++outer) {
    const Eigen::VectorXd gradient = c - g * beta;
    int best = -1;
    for (int j = 0; j < p; ++j) {
      if (!passive[j] && gradient(j) > tolerance &&
          (best < 0 || gradient(j) > gradient(best))) {
        best = j;
      }
    }
    if (best < 0) return beta;
    passive[best] = true;
    for (int inner = 0; inner < 3 * p + 10; ++inner) {
      Eigen::VectorXd s;
      RETURN_IF_ERROR(solve_passive(s));
      bool feasible = true;
      for (int j = 0; j < p; ++j) {
        if (passive[j] && s(j) <= 0) feasible = false;
      }
      if (feasible) {
        beta = s;
        break;
      }
      double alpha = 1;
      for (int j = 0; j < p; ++j) {
        if (passive[j] && s(j) <= 0) alpha = std::min(alpha, beta(j) / (beta(j) - s(j)));
      }
      beta += alpha * (s - beta);
      for (int j = 0; j < p; ++j) {
        if (passive[j] && beta(j) <= tolerance) {
          passive[j] = false;
          beta(j) = 0;
        }
      }
    }
  }
  return beta;  // Iteration cap reached: beta is feasible and near optimal.
}

// |s| where |s| >= floor, s² / (2 floor) + floor / 2 below: the loss IRLS
// with weights 1 / max(|s|, floor) never increases (Huber's, with a threshold
// far below any error that matters).
double SmoothedAbsolute(const Eigen::VectorXd& s, double floor) {
  double total = 0;
  for (double v : s) {
    const double a = std::abs(v);
    total += a >= floor ? a : a * a / (2 * floor) + floor / 2;
  }
  return total;
}

}  // namespace

absl::string_view LossName(Loss loss) {
  switch (loss) {
    case Loss::kSquared: return "squared";
    case Loss::kAbsolute: return "absolute";
  }
  return "unknown";
}

absl::StatusOr<Loss> ParseLoss(absl::string_view name) {
  if (name == "squared") return Loss::kSquared;
  if (name == "absolute") return Loss::kAbsolute;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown loss '", name, "': expected squared or absolute"));
}

double LinearFit::Predict(absl::Span<const double> x) const {
  double y = intercept;
  for (size_t j = 0; j < coefficients.size(); ++j) {
    y += coefficients[j] * ((x[j] - mean[j]) / scale[j]);
  }
  return y;
}

std::vector<double> LinearFit::RawCoefficients() const {
  std::vector<double> raw(coefficients.size());
  for (size_t j = 0; j < raw.size(); ++j) raw[j] = coefficients[j] / scale[j];
  return raw;
}

double LinearFit::RawIntercept() const {
  double b = intercept;
  for (size_t j = 0; j < coefficients.size(); ++j) b -= coefficients[j] * mean[j] / scale[j];
  return b;
}

absl::StatusOr<Eigen::VectorXd> RowWeights(const Eigen::VectorXd& y,
                                           const RegressionOptions& options) {
  if (!options.relative_weights) return Eigen::VectorXd::Ones(y.size());
  Eigen::VectorXd w(y.size());
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y(i)) || y(i) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "relative weights need finite non-zero targets; row ", i, " has ", y(i)));
    }
    w(i) = 1.0 / (y(i) * y(i));
  }
  return w;
}

absl::StatusOr<LinearFit> FitLinear(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                    const RegressionOptions& options) {
  const Eigen::Index n = x.rows();
  const Eigen::Index p = x.cols();
  if (y.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("regression: ", n, " feature rows but ", y.size(), " targets"));
  }
  if (n == 0) return absl::InvalidArgumentError("regression: no rows to fit");
  if (!x.allFinite() || !y.allFinite()) {
    return absl::InvalidArgumentError("regression: non-finite feature or target");
  }
  if (!(options.ridge >= 0)) {
    return absl::InvalidArgumentError("regression: ridge must be >= 0");
  }
  if (n < p + 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "regression: ", n, " rows cannot determine ", p + 1, " coefficients"));
  }
  ASSIGN_OR_RETURN(Eigen::VectorXd weights, RowWeights(y, options));
  // Normalised weights: the objective is a weighted mean, independent of n.
  const Eigen::VectorXd w = weights / weights.sum();

  LinearFit fit;
  fit.mean.resize(p);
  fit.scale.resize(p);
  Eigen::MatrixXd a(n + (options.ridge > 0 ? p : 0), p);
  const Eigen::VectorXd sqrt_w = w.cwiseSqrt();
  const bool absolute = options.loss == Loss::kAbsolute;
  Eigen::MatrixXd z(absolute ? n : 0, absolute ? p : 0);
  for (Eigen::Index j = 0; j < p; ++j) {
    const double mean = w.dot(x.col(j));
    const Eigen::VectorXd centred = x.col(j).array() - mean;
    const double scale = std::sqrt(w.dot(centred.cwiseAbs2()));
    if (!(scale > 1e-13 * std::max(1.0, std::abs(mean)))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "regression: column ", j, " is constant over the training rows"));
    }
    fit.mean[j] = mean;
    fit.scale[j] = scale;
    a.col(j).head(n) = sqrt_w.cwiseProduct(centred) / scale;
    if (absolute) z.col(j) = centred / scale;
  }
  fit.intercept = w.dot(y);
  Eigen::VectorXd b = Eigen::VectorXd::Zero(a.rows());
  b.head(n) = sqrt_w.cwiseProduct((y.array() - fit.intercept).matrix());
  if (options.ridge > 0) {
    a.bottomRows(p) = std::sqrt(options.ridge) * Eigen::MatrixXd::Identity(p, p);
  }

  Eigen::VectorXd beta;
  if (p == 0) {
    beta.resize(0);
  } else if (!options.non_negative) {
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
    qr.setThreshold(kRankTolerance);
    if (qr.rank() < p) {
      const int culprit = qr.colsPermutation().indices()(qr.rank());
      return absl::FailedPreconditionError(absl::StrCat(
          "regression: singular design, column ", culprit,
          " is a linear combination of the others"));
    }
    beta = qr.solve(b);
  } else {
    const Eigen::MatrixXd g = a.transpose() * a;
    ASSIGN_OR_RETURN(beta, SolveGram(g, a.transpose() * b, true));
  }
  if (absolute) {
    ASSIGN_OR_RETURN(AffineSolution solved, SolveAbsoluteLoss(
        z, y, w, AffineSolution{fit.intercept, beta}, options.ridge, options.non_negative));
    fit.intercept = solved.intercept;
    beta = std::move(solved.beta);
  }
  if (!beta.allFinite() || !std::isfinite(fit.intercept)) {
    return absl::FailedPreconditionError("regression: solution is not finite");
  }
  fit.coefficients.assign(beta.data(), beta.data() + beta.size());
  return fit;
}

absl::StatusOr<Eigen::VectorXd> SolveGram(const Eigen::MatrixXd& g, const Eigen::VectorXd& c,
                                          bool non_negative) {
  if (g.rows() != g.cols() || g.rows() != c.size()) {
    return absl::InvalidArgumentError("SolveGram: shape mismatch");
  }
  if (c.size() == 0) return Eigen::VectorXd();
  if (!g.allFinite() || !c.allFinite()) {
    return absl::InvalidArgumentError("SolveGram: non-finite input");
  }
  if (non_negative) {
    // The full matrix must be non-singular too: otherwise the active-set
    // answer is not unique and depends on the order of the columns.
    ASSIGN_OR_RETURN(Eigen::VectorXd check, SolveUnconstrained(g, c));
    if (check.minCoeff() >= 0) return check;
    return SolveNonNegative(g, c);
  }
  return SolveUnconstrained(g, c);
}


absl::StatusOr<AffineSolution> SolveAbsoluteLoss(const Eigen::MatrixXd& z,
                                                 const Eigen::VectorXd& y,
                                                 const Eigen::VectorXd& w,
                                                 const AffineSolution& start, double ridge,
                                                 bool non_negative) {
  const Eigen::Index n = z.rows();
  const Eigen::Index p = z.cols();
  if (y.size() != n || w.size() != n || start.beta.size() != p) {
    return absl::InvalidArgumentError(absl::StrCat(
        "absolute loss: ", n, " rows, ", y.size(), " targets, ", w.size(), " weights, ",
        start.beta.size(), " starting coefficients for ", p, " columns"));
  }
  if (n == 0) return absl::InvalidArgumentError("absolute loss: no rows to fit");
  if (!z.allFinite() || !y.allFinite() || !w.allFinite() || !start.beta.allFinite() ||
      !std::isfinite(start.intercept)) {
    return absl::InvalidArgumentError("absolute loss: non-finite input");
  }
  if (w.minCoeff() < 0 || !(w.sum() > 0)) {
    return absl::InvalidArgumentError("absolute loss: weights must be >= 0, not all 0");
  }
  if (!(ridge >= 0)) return absl::InvalidArgumentError("absolute loss: ridge must be >= 0");
  const Eigen::VectorXd wn = w / w.sum();
  const Eigen::VectorXd sqrt_w = wn.cwiseSqrt();
  auto scaled_residuals = [&](const AffineSolution& fit) -> Eigen::VectorXd {
    return sqrt_w.cwiseProduct(((y - z * fit.beta).array() - fit.intercept).matrix());
  };
  AffineSolution best = start;
  Eigen::VectorXd s = scaled_residuals(best);
  const double floor = kAbsoluteLossFloor * s.cwiseAbs().mean();
  if (!(floor > 0)) return best;  // The start passes through every row.
  double best_loss = SmoothedAbsolute(s, floor) + ridge * best.beta.squaredNorm();
  for (int step = 0; step < kMaxIrlsSteps; ++step) {
    // Minimising Σ s²/(2m) + ridge ‖β‖² (m = max(|s|, ε) at the current fit)
    // is the weighted least squares with weights w̃/m and ridge 2·ridge.
    const Eigen::VectorXd v = wn.cwiseQuotient(s.cwiseAbs().cwiseMax(floor));
    const double sum_v = v.sum();
    const Eigen::RowVectorXd mean_z = (v.transpose() * z) / sum_v;
    const double mean_y = v.dot(y) / sum_v;
    const Eigen::MatrixXd centred = z.rowwise() - mean_z;
    const Eigen::MatrixXd weighted = centred.array().colwise() * v.array();
    Eigen::MatrixXd g = weighted.transpose() * centred;
    g.diagonal().array() += 2 * ridge;
    const Eigen::VectorXd c = weighted.transpose() * (y.array() - mean_y).matrix();
    ASSIGN_OR_RETURN(Eigen::VectorXd beta, SolveGram(g, c, non_negative));
    AffineSolution next{mean_y - mean_z.dot(beta), std::move(beta)};
    Eigen::VectorXd next_s = scaled_residuals(next);
    const double loss = SmoothedAbsolute(next_s, floor) + ridge * next.beta.squaredNorm();
    if (!(loss < best_loss)) break;  // Converged to rounding.
    const double decrease = best_loss - loss;
    best = std::move(next);
    s = std::move(next_s);
    best_loss = loss;
    if (decrease <= kIrlsTolerance * best_loss) break;
  }
  return best;
}

}  // namespace perfcast::predictor
