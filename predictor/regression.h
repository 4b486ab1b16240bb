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
// The loss is squared by default; RegressionOptions::loss can make it
// absolute instead. MAPE judges the *absolute* relative error, and the
// squared one lets a heavy tail pull the coefficients (NeuSight's random
// narrow-load GEMM shapes: docs/code-evidence.md); the
// absolute loss minimises what is judged and bounds each row's pull without
// anyone choosing rows to drop. Relative weights already damp rows that ran
// slow (4x slower weighs 1/16), so it matters most for rows that ran fast.
// Squared stays the default: on NeuSight's cross-GPU protocol the tails it
// discounts carry the slow GPUs' behaviour that unseen GPUs share, and the
// absolute loss lost on leave-one-GPU-out (data/external/neusight/README.md).
//
// Thread-safe: all functions are pure.
#ifndef PERFCAST_PREDICTOR_REGRESSION_H_
#define PERFCAST_PREDICTOR_REGRESSION_H_

#include <vector>

#include <Eigen/Dense>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace perfcast::predictor {

// What a fit minimises over the (weighted) residuals r_i, with s_i = √w_i · r_i
// the residual as the weights scale it (the relative error r_i / y_i under
// relative weights):
//   kSquared   Σ s_i² — ordinary weighted least squares, one solve;
//   kAbsolute  Σ |s_i| — least absolute deviations (with relative weights:
//              least absolute relative error, the loss MAPE measures),
//              solved by iteratively reweighted least squares.
enum class Loss { kSquared, kAbsolute };

// "squared", "absolute".
absl::string_view LossName(Loss loss);
// InvalidArgument for any other name.
absl::StatusOr<Loss> ParseLoss(absl::string_view name);

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
  Loss loss = Loss::kSquared;

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
// Under Loss::kAbsolute the squared fit starts SolveAbsoluteLoss on the same
// standardised columns: mean and scale stay the base weights' (the squared
// fit's), only intercept and coefficients move.
absl::StatusOr<LinearFit> FitLinear(const Eigen::MatrixXd& x,
                                    const Eigen::VectorXd& y,
                                    const RegressionOptions& options);

// An affine model on given columns z: y ≈ intercept + z·beta.
struct AffineSolution {
  double intercept = 0;
  Eigen::VectorXd beta;
};

// Least absolute deviations on the columns z (rows = observations; the
// caller standardises them, and `ridge` penalises beta on z's scale):
// minimises Σ_i √w̃_i · |r_i| + ridge · ‖beta‖², w̃ = w / Σw, r = y − intercept − z·beta,
// with beta >= 0 when `non_negative` (the intercept is always free), the
// absolute twin of FitLinear's objective. Iteratively reweighted least
// squares from `start` (the squared-loss fit, typically): each step solves
// the weighted least squares with row weights w_i / max(|s_i|, ε) — the
// majoriser of |s| at the current residuals, so the loss never rises (to
// within rounding: the best iterate is kept) — until the loss falls by less
// than 1e-10 of itself or after 100 steps. ε, 1e-4 of the start's mean |s_i|,
// keeps a row the fit passes through from taking an infinite weight (below
// ε the loss is quadratic: a Huber loss with a negligible threshold).
// Deterministic. Errors: InvalidArgument for mismatched shapes, non-finite
// input or negative weights; FailedPrecondition as SolveGram's when a
// reweighted design is singular.
absl::StatusOr<AffineSolution> SolveAbsoluteLoss(const Eigen::MatrixXd& z,
                                                 const Eigen::VectorXd& y,
                                                 const Eigen::VectorXd& w,
                                                 const AffineSolution& start, double ridge,
                                                 bool non_negative);

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
