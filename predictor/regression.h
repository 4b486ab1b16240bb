// Weighted least squares on Eigen: the one solver every perfcast model uses.
//
// Models are affine in standardised inputs,
//   y ≈ intercept + Σ_j coefficients[j] · (x_j − mean[j]) / scale[j],
// because standardising makes the normal equations well scaled whatever the
// units of the features (FLOPs, seconds, counts) and makes the ridge penalty
// scale-free. Rows are weighted 1/y² by default so that the fit minimises
// squared *relative* error: a 1 ms kernel and a 1 s training step count alike,
// which is what MAPE-style evaluation rewards.
//
// Thread-safe: all functions are pure.
#ifndef PERFCAST_PREDICTOR_REGRESSION_H_
#define PERFCAST_PREDICTOR_REGRESSION_H_

#include <vector>

#include <Eigen/Dense>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace perfcast::predictor {

struct RegressionOptions {
  // L2 penalty on the standardised coefficients (never on the intercept),
  // relative to the weighted mean square: the objective is
  //   Σ w_i r_i² / Σ w_i + ridge · ‖β‖².  0 is ordinary least squares.
  double ridge = 0;
  // Constrains every coefficient to be >= 0 (Lawson–Hanson NNLS). Use it where
  // each feature is a time that can only add to the total: a negative
  // efficiency fits noise and extrapolates badly to unseen hardware.
  bool non_negative = false;
  // Weights rows by 1/y² (relative error). Otherwise all rows weigh 1.
  bool relative_weights = true;

  friend bool operator==(const RegressionOptions&, const RegressionOptions&) = default;
};

// A fitted affine model. Plain value; Predict is exact and deterministic, so
// a serialised copy predicts bit-identically.
struct LinearFit {
  std::vector<double> mean;          // per feature, weighted training mean
  std::vector<double> scale;         // per feature, weighted training stddev (> 0)
  std::vector<double> coefficients;  // per feature, on the standardised scale
  double intercept = 0;

  double Predict(absl::Span<const double> x) const;
  // The same model in the features' own units: y = raw_intercept + Σ raw_j x_j.
  std::vector<double> RawCoefficients() const;
  double RawIntercept() const;

  friend bool operator==(const LinearFit&, const LinearFit&) = default;
};

// The row weights `options` implies for targets `y`: all ones, or 1/y².
// InvalidArgument if relative weights are asked for and some y is zero or
// not finite.
absl::StatusOr<Eigen::VectorXd> RowWeights(const Eigen::VectorXd& y,
                                           const RegressionOptions& options);

// Fits y on the columns of x (rows = observations) with an intercept.
// Unconstrained fits use column-pivoting Householder QR on the weighted,
// standardised design (ridge as extra rows), so they never form XᵀX.
// Errors:
//   InvalidArgument    shape mismatch, no rows, non-finite input, ridge < 0;
//   FailedPrecondition fewer rows than coefficients, a constant column, or a
//                      rank-deficient (collinear) design, naming the column.
absl::StatusOr<LinearFit> FitLinear(const Eigen::MatrixXd& x,
                                    const Eigen::VectorXd& y,
                                    const RegressionOptions& options);

// Solves the symmetric positive-definite normal equations g·β = c, with
// β >= 0 when `non_negative` (Lawson–Hanson active set on the Gram form, so it
// works from sufficient statistics alone). Uses pivoted LDLᵀ and rejects a
// matrix whose smallest pivot is below 1e-11 of its largest with
// FailedPrecondition: for standardised features that means collinear columns.
absl::StatusOr<Eigen::VectorXd> SolveGram(const Eigen::MatrixXd& g,
                                          const Eigen::VectorXd& c,
                                          bool non_negative);

}  // namespace perfcast::predictor

#endif  // PERFCAST_PREDICTOR_REGRESSION_H_
