#include "predictor/regression.h"

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

}  // namespace
}  // namespace perfcast::predictor
