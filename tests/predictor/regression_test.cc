#include "predictor/regression.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <Eigen/Dense>

#include "gtest/gtest.h"

namespace perfcast::predictor {
namespace {

Eigen::MatrixXd RandomMatrix(int n, int p, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.5, 3.0);
  Eigen::MatrixXd x(n, p);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < p; ++j) x(i, j) = u(rng) * (j + 1);
  }
  return x;
}

TEST(FitLinear, RecoversCoefficientsOnNoiseFreeData) {
  std::mt19937_64 rng(7);
  const Eigen::MatrixXd x = RandomMatrix(50, 3, rng);
  const std::vector<double> truth = {2.0, 0.25, 7.0};
  Eigen::VectorXd y(50);
  for (int i = 0; i < 50; ++i) y(i) = 3.0 + truth[0] * x(i, 0) + truth[1] * x(i, 1) + truth[2] * x(i, 2);
  for (bool relative : {false, true}) {
    RegressionOptions options;
    options.relative_weights = relative;
    absl::StatusOr<LinearFit> fit = FitLinear(x, y, options);
    ASSERT_TRUE(fit.ok()) << fit.status();
    const std::vector<double> raw = fit->RawCoefficients();
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(raw[j], truth[j], 1e-10 * std::abs(truth[j]));
    EXPECT_NEAR(fit->RawIntercept(), 3.0, 1e-9);
  }
}

// Reference: weighted least squares by complete orthogonal decomposition of
// the raw [1, X] design, computed independently of the standardisation.
TEST(FitLinear, MatchesCompleteOrthogonalDecompositionOnRandomProblems) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0, 0.1);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 30 + trial * 7;
    const int p = 1 + trial % 6;
    const Eigen::MatrixXd x = RandomMatrix(n, p, rng);
    Eigen::VectorXd y(n);
    for (int i = 0; i < n; ++i) y(i) = 5.0 + x.row(i).sum() * 0.7 + noise(rng);
    for (bool relative : {false, true}) {
      RegressionOptions options;
      options.relative_weights = relative;
      absl::StatusOr<LinearFit> fit = FitLinear(x, y, options);
      ASSERT_TRUE(fit.ok()) << fit.status();

      Eigen::MatrixXd design(n, p + 1);
      design.col(0).setOnes();
      design.rightCols(p) = x;
      Eigen::VectorXd sqrt_w = Eigen::VectorXd::Ones(n);
      if (relative) sqrt_w = y.cwiseInverse().cwiseAbs();
      const Eigen::VectorXd reference =
          (sqrt_w.asDiagonal() * design).completeOrthogonalDecomposition().solve(
              sqrt_w.asDiagonal() * y);
      EXPECT_NEAR(fit->RawIntercept(), reference(0), 1e-9 * std::abs(reference(0)));
      const std::vector<double> raw = fit->RawCoefficients();
      for (int j = 0; j < p; ++j) {
        EXPECT_NEAR(raw[j], reference(j + 1), 1e-9 * std::abs(reference(j + 1)))
            << "trial " << trial << " column " << j;
      }
    }
  }
}

TEST(FitLinear, RidgeSolvesPenalisedNormalEquations) {
  std::mt19937_64 rng(3);
  const Eigen::MatrixXd x = RandomMatrix(40, 3, rng);
  Eigen::VectorXd y = 1.0 + x.col(0).array() * 2 - x.col(2).array();
  RegressionOptions options;
  options.relative_weights = false;
  options.ridge = 0.3;
  absl::StatusOr<LinearFit> fit = FitLinear(x, y, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  // Population-standardised columns, unit weights: (ZᵀZ/n + λI) β = Zᵀ(y−ȳ)/n.
  Eigen::MatrixXd z = x.rowwise() - x.colwise().mean();
  for (int j = 0; j < 3; ++j) z.col(j) /= std::sqrt(z.col(j).squaredNorm() / 40);
  const Eigen::VectorXd yc = y.array() - y.mean();
  const Eigen::VectorXd beta = (z.transpose() * z / 40 + 0.3 * Eigen::MatrixXd::Identity(3, 3))
                                   .ldlt()
                                   .solve(z.transpose() * yc / 40);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(fit->coefficients[j], beta(j), 1e-10);
  EXPECT_NEAR(fit->intercept, y.mean(), 1e-12);
}

// Brute force over active sets: the best feasible unconstrained sub-fit.
TEST(FitLinear, NonNegativeMatchesExhaustiveActiveSetSearch) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.5);
  const int n = 60, p = 4;
  Eigen::MatrixXd x = RandomMatrix(n, p, rng);
  x.col(3) = x.col(0) * 0.8 + x.col(3) * 0.2;  // correlated, pulls a coefficient negative
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) y(i) = 20 + 3 * x(i, 0) + 1 * x(i, 1) - 0.8 * x(i, 3) + noise(rng);
  RegressionOptions options;
  options.relative_weights = false;
  absl::StatusOr<LinearFit> unconstrained = FitLinear(x, y, options);
  ASSERT_TRUE(unconstrained.ok());
  ASSERT_LT(*std::min_element(unconstrained->coefficients.begin(),
                              unconstrained->coefficients.end()), 0);
  options.non_negative = true;
  absl::StatusOr<LinearFit> fit = FitLinear(x, y, options);
  ASSERT_TRUE(fit.ok()) << fit.status();

  auto sse = [&](const LinearFit& f) {
    double s = 0;
    for (int i = 0; i < n; ++i) {
      Eigen::VectorXd r = x.row(i).transpose();
      s += std::pow(y(i) - f.Predict({r.data(), static_cast<size_t>(p)}), 2);
    }
    return s;
  };
  double best = std::numeric_limits<double>::infinity();
  for (int mask = 0; mask < (1 << p); ++mask) {
    std::vector<int> cols;
    for (int j = 0; j < p; ++j) if (mask & (1 << j)) cols.push_back(j);
    Eigen::MatrixXd design(n, cols.size() + 1);
    design.col(0).setOnes();
    for (size_t a = 0; a < cols.size(); ++a) design.col(a + 1) = x.col(cols[a]);
    const Eigen::VectorXd b = design.colPivHouseholderQr().solve(y);
    if (b.tail(cols.size()).size() > 0 && b.tail(cols.size()).minCoeff() < 0) continue;
    best = std::min(best, (y - design * b).squaredNorm());
  }
  for (double c : fit->coefficients) EXPECT_GE(c, 0);
  EXPECT_NEAR(sse(*fit), best, 1e-8 * best);
}

TEST(FitLinear, RejectsSingularDesign) {
  std::mt19937_64 rng(1);
  Eigen::MatrixXd x = RandomMatrix(20, 3, rng);
  x.col(2) = 2 * x.col(0) - x.col(1);
  Eigen::VectorXd y = x.col(0).array() + 1;
  absl::StatusOr<LinearFit> fit = FitLinear(x, y, {});
  EXPECT_EQ(fit.status().code(), absl::StatusCode::kFailedPrecondition) << fit.status();
  RegressionOptions nonneg;
  nonneg.non_negative = true;
  EXPECT_EQ(FitLinear(x, y, nonneg).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FitLinear, RejectsConstantColumnTooFewRowsAndBadInput) {
  std::mt19937_64 rng(2);
  Eigen::MatrixXd x = RandomMatrix(10, 2, rng);
  Eigen::VectorXd y = x.col(0).array() + 1;
  Eigen::MatrixXd constant = x;
  constant.col(1).setConstant(4.0);
  EXPECT_EQ(FitLinear(constant, y, {}).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FitLinear(x.topRows(2), y.head(2), {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FitLinear(Eigen::MatrixXd(0, 2), Eigen::VectorXd(0), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  Eigen::VectorXd zero = y;
  zero(3) = 0;
  EXPECT_EQ(FitLinear(x, zero, {}).status().code(), absl::StatusCode::kInvalidArgument);
  Eigen::VectorXd nan = y;
  nan(0) = std::nan("");
  EXPECT_EQ(FitLinear(x, nan, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FitLinear(x, y.head(5), {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// y = 3 + 2·x0 + 0.5·x1 with 1% multiplicative noise; every tenth row runs
// `slowdown` times slower, as a bad collection would.
struct Contaminated {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
};
Contaminated MakeContaminated(int n, double noise_sd, double slowdown, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, noise_sd);
  Contaminated c{RandomMatrix(n, 2, rng), Eigen::VectorXd(n)};
  for (int i = 0; i < n; ++i) {
    c.y(i) = (3 + 2 * c.x(i, 0) + 0.5 * c.x(i, 1)) * (1 + noise(rng)) * (i % 10 == 0 ? slowdown : 1);
  }
  return c;
}

double MeanAbsoluteRelativeError(const LinearFit& fit, const Eigen::MatrixXd& x,
                                 const Eigen::VectorXd& y) {
  double total = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    const Eigen::VectorXd row = x.row(i).transpose();
    total += std::abs(fit.Predict({row.data(), static_cast<size_t>(row.size())}) - y(i)) /
             std::abs(y(i));
  }
  return total / static_cast<double>(y.size());
}

// Relative weights (1/y²) already damp rows that ran slow (a 4× slower row
// weighs 1/16), so squared error is pulled most by rows that ran fast; the
// absolute loss shrugs off both.
TEST(FitLinear, AbsoluteLossRecoversCoefficientsDespiteGrossOutliers) {
  const double truth[] = {3.0, 2.0, 0.5};  // intercept, x0, x1
  auto worst_miss = [&](const LinearFit& fit) {
    const std::vector<double> raw = fit.RawCoefficients();
    double worst = std::abs(fit.RawIntercept() - truth[0]) / truth[0];
    for (int j = 0; j < 2; ++j) {
      worst = std::max(worst, std::abs(raw[j] - truth[j + 1]) / truth[j + 1]);
    }
    return worst;
  };
  for (double outlier : {4.0, 0.25}) {
    const Contaminated data = MakeContaminated(400, 0.01, outlier, 21);
    RegressionOptions squared;
    RegressionOptions absolute;
    absolute.loss = Loss::kAbsolute;
    absl::StatusOr<LinearFit> l2 = FitLinear(data.x, data.y, squared);
    absl::StatusOr<LinearFit> l1 = FitLinear(data.x, data.y, absolute);
    ASSERT_TRUE(l2.ok()) << l2.status();
    ASSERT_TRUE(l1.ok()) << l1.status();
    EXPECT_LT(worst_miss(*l1), 0.02) << outlier;
    EXPECT_GT(worst_miss(*l2), outlier > 1 ? 0.02 : 0.2) << outlier;
    EXPECT_LT(MeanAbsoluteRelativeError(*l1, data.x, data.y),
              MeanAbsoluteRelativeError(*l2, data.x, data.y));
    // Standardisation is the base weights' whatever the loss.
    EXPECT_EQ(l1->mean, l2->mean);
    EXPECT_EQ(l1->scale, l2->scale);
  }
}

TEST(FitLinear, AbsoluteAndSquaredLossAgreeOnCleanData) {
  const Contaminated data = MakeContaminated(400, 0.002, 1.0, 22);
  for (bool relative : {false, true}) {
    RegressionOptions squared;
    squared.relative_weights = relative;
    RegressionOptions absolute = squared;
    absolute.loss = Loss::kAbsolute;
    absl::StatusOr<LinearFit> l2 = FitLinear(data.x, data.y, squared);
    absl::StatusOr<LinearFit> l1 = FitLinear(data.x, data.y, absolute);
    ASSERT_TRUE(l2.ok() && l1.ok());
    const std::vector<double> a = l1->RawCoefficients();
    const std::vector<double> b = l2->RawCoefficients();
    for (int j = 0; j < 2; ++j) EXPECT_NEAR(a[j], b[j], 0.01 * std::abs(b[j])) << relative;
    EXPECT_NEAR(l1->RawIntercept(), l2->RawIntercept(), 0.01 * std::abs(l2->RawIntercept()));
  }
  // No noise at all: the squared fit passes through every row and is kept.
  Eigen::VectorXd exact(data.y.size());
  for (Eigen::Index i = 0; i < exact.size(); ++i) exact(i) = 1 + data.x(i, 0) + 4 * data.x(i, 1);
  RegressionOptions absolute;
  absolute.loss = Loss::kAbsolute;
  absl::StatusOr<LinearFit> fit = FitLinear(data.x, exact, absolute);
  ASSERT_TRUE(fit.ok());
  EXPECT_NEAR(fit->RawCoefficients()[1], 4.0, 1e-9);
}

// The absolute-loss optimum: no step of any coefficient or the intercept
// lowers the mean absolute relative error, and it beats the squared fit.
TEST(FitLinear, AbsoluteLossIsAMinimumOfTheAbsoluteError) {
  const Contaminated data = MakeContaminated(300, 0.05, 2.5, 23);
  RegressionOptions absolute;
  absolute.loss = Loss::kAbsolute;
  absl::StatusOr<LinearFit> fit = FitLinear(data.x, data.y, absolute);
  ASSERT_TRUE(fit.ok());
  const double best = MeanAbsoluteRelativeError(*fit, data.x, data.y);
  EXPECT_LT(best, MeanAbsoluteRelativeError(*FitLinear(data.x, data.y, {}), data.x, data.y));
  for (int k = 0; k < 3; ++k) {
    for (double step : {-1e-2, -1e-3, 1e-3, 1e-2}) {
      LinearFit moved = *fit;
      if (k == 2) {
        moved.intercept += step;
      } else {
        moved.coefficients[k] += step;
      }
      EXPECT_GE(MeanAbsoluteRelativeError(moved, data.x, data.y), best - 1e-7) << k << " " << step;
    }
  }
}

TEST(FitLinear, AbsoluteLossKeepsCoefficientsNonNegative) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.5);
  const int n = 60, p = 4;
  Eigen::MatrixXd x = RandomMatrix(n, p, rng);
  x.col(3) = x.col(0) * 0.8 + x.col(3) * 0.2;
  Eigen::VectorXd y(n);
  for (int i = 0; i < n; ++i) y(i) = 20 + 3 * x(i, 0) + 1 * x(i, 1) - 0.8 * x(i, 3) + noise(rng);
  RegressionOptions options;
  options.loss = Loss::kAbsolute;
  absl::StatusOr<LinearFit> free_fit = FitLinear(x, y, options);
  ASSERT_TRUE(free_fit.ok());
  ASSERT_LT(*std::min_element(free_fit->coefficients.begin(), free_fit->coefficients.end()), 0);
  options.non_negative = true;
  absl::StatusOr<LinearFit> fit = FitLinear(x, y, options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  for (double c : fit->coefficients) EXPECT_GE(c, 0);
  // No better feasible point along any coordinate.
  const double best = MeanAbsoluteRelativeError(*fit, x, y);
  for (int k = 0; k < p; ++k) {
    for (double step : {-1e-3, 1e-3}) {
      LinearFit moved = *fit;
      moved.coefficients[k] += step;
      if (moved.coefficients[k] < 0) continue;
      EXPECT_GE(MeanAbsoluteRelativeError(moved, x, y), best - 1e-8) << k << " " << step;
    }
  }
}

TEST(SolveAbsoluteLoss, InterceptOnlyIsTheMedian) {
  Eigen::VectorXd y(5);
  y << 1, 2, 3, 4, 100;
  absl::StatusOr<AffineSolution> median =
      SolveAbsoluteLoss(Eigen::MatrixXd(5, 0), y, Eigen::VectorXd::Ones(5),
                        AffineSolution{y.mean(), Eigen::VectorXd(0)}, 0, false);
  ASSERT_TRUE(median.ok()) << median.status();
  EXPECT_NEAR(median->intercept, 3.0, 1e-3);
}

TEST(SolveAbsoluteLoss, RejectsBadInput) {
  const Eigen::MatrixXd z = Eigen::MatrixXd::Ones(4, 1);
  const Eigen::VectorXd y = Eigen::VectorXd::Ones(4);
  const AffineSolution start{0, Eigen::VectorXd::Zero(1)};
  Eigen::VectorXd negative = Eigen::VectorXd::Ones(4);
  negative(2) = -1;
  EXPECT_EQ(SolveAbsoluteLoss(z, y, negative, start, 0, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SolveAbsoluteLoss(z, y.head(3), y, start, 0, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SolveAbsoluteLoss(z, y, y, AffineSolution{0, Eigen::VectorXd(2)}, 0, false)
                .status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SolveAbsoluteLoss(z, y, y, start, -1, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseLoss("cubic").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*ParseLoss(LossName(Loss::kAbsolute)), Loss::kAbsolute);
  EXPECT_EQ(*ParseLoss(LossName(Loss::kSquared)), Loss::kSquared);
}

}  // namespace
}  // namespace perfcast::predictor
