#include "predictor/sfs.h"

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "gtest/gtest.h"
#include "predictor/cross_validation.h"
#include "predictor/folds.h"
#include "predictor/regression.h"

namespace perfcast::predictor {
namespace {

struct Problem {
  Eigen::MatrixXd x;
  Eigen::VectorXd y;
};

// Positive features and a positive target built from `truth` columns only,
// with multiplicative noise (relative errors are what the predictor sees).
Problem MakeProblem(int n, int p, const std::vector<int>& truth, double noise_sd,
                    uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  std::normal_distribution<double> noise(0, noise_sd);
  Problem problem{Eigen::MatrixXd(n, p), Eigen::VectorXd(n)};
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < p; ++j) problem.x(i, j) = u(rng);
    double y = 0.5;
    for (size_t t = 0; t < truth.size(); ++t) y += (1.0 + t) * problem.x(i, truth[t]);
    problem.y(i) = y * (1 + noise(rng));
  }
  return problem;
}

// FitLinear on the rows outside fold `fold`, on the columns of `subset`:
// what a cross-validator's fold fit must reproduce.
absl::StatusOr<LinearFit> FitOutsideFold(const Problem& problem, const std::vector<int>& folds,
                                         int fold, const std::vector<int>& subset,
                                         const RegressionOptions& options) {
  std::vector<int> train;
  for (int i = 0; i < problem.y.size(); ++i) {
    if (folds[i] != fold) train.push_back(i);
  }
  Eigen::MatrixXd x(train.size(), subset.size());
  Eigen::VectorXd y(train.size());
  for (size_t r = 0; r < train.size(); ++r) {
    y(r) = problem.y(train[r]);
    for (size_t a = 0; a < subset.size(); ++a) x(r, a) = problem.x(train[r], subset[a]);
  }
  return FitLinear(x, y, options);
}

TEST(Folds, RandomFoldsAreBalancedAndDeterministic) {
  absl::StatusOr<std::vector<int>> a = RandomFolds(103, 5, 42);
  absl::StatusOr<std::vector<int>> b = RandomFolds(103, 5, 42);
  absl::StatusOr<std::vector<int>> c = RandomFolds(103, 5, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_NE(*a, *c);
  for (int f = 0; f < 5; ++f) {
    const auto size = std::count(a->begin(), a->end(), f);
    EXPECT_TRUE(size == 20 || size == 21) << size;
  }
  EXPECT_EQ(RandomFolds(3, 5, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Folds, ContiguousFoldsMatchKFoldSizes) {
  absl::StatusOr<std::vector<int>> folds = ContiguousFolds(13, 5);
  ASSERT_TRUE(folds.ok());
  EXPECT_EQ(*folds, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4}));
}

TEST(Folds, GroupedFoldsHoldOutWholeGroups) {
  const std::vector<std::string> groups = {"h100", "a100", "h100", "l40s", "a100", "l40s", "h100"};
  absl::StatusOr<std::vector<int>> folds = LeaveOneGroupOutFolds(groups);
  ASSERT_TRUE(folds.ok());
  for (size_t i = 0; i < groups.size(); ++i) {
    for (size_t j = 0; j < groups.size(); ++j) {
      EXPECT_EQ(groups[i] == groups[j], (*folds)[i] == (*folds)[j]) << i << "," << j;
    }
  }
  EXPECT_EQ(*CountFolds(*folds), 3);
  const std::vector<std::string> one = {"h100", "h100"};
  EXPECT_EQ(LeaveOneGroupOutFolds(one).status().code(), absl::StatusCode::kFailedPrecondition);
}

// The Gram-block fits must equal fitting each fold's training rows directly.
TEST(CrossValidator, HeldOutPredictionsMatchRowRefits) {
  const Problem problem = MakeProblem(300, 6, {1, 4}, 0.05, 9);
  const std::vector<int> folds = *RandomFolds(300, 4, 1);
  for (bool relative : {false, true}) {
    for (double ridge : {0.0, 0.1}) {
      RegressionOptions options;
      options.relative_weights = relative;
      options.ridge = ridge;
      absl::StatusOr<CrossValidator> cv =
          CrossValidator::Create(problem.x, problem.y, folds, options);
      ASSERT_TRUE(cv.ok()) << cv.status();
      const std::vector<int> subset = {4, 1, 2};
      absl::StatusOr<Eigen::VectorXd> held_out = cv->HeldOutPredictions(subset);
      ASSERT_TRUE(held_out.ok()) << held_out.status();
      for (int f = 0; f < 4; ++f) {
        absl::StatusOr<LinearFit> fit = FitOutsideFold(problem, folds, f, subset, options);
        ASSERT_TRUE(fit.ok());
        for (int i = 0; i < 300; ++i) {
          if (folds[i] != f) continue;
          const double row[] = {problem.x(i, 4), problem.x(i, 1), problem.x(i, 2)};
          EXPECT_NEAR((*held_out)(i), fit->Predict(row), 1e-9 * std::abs(problem.y(i)));
        }
      }
      // The losses agree with the held-out predictions they summarise.
      double mape = 0;
      for (int i = 0; i < 300; ++i) {
        mape += std::abs((*held_out)(i) - problem.y(i)) / problem.y(i);
      }
      EXPECT_NEAR(*cv->Loss(subset, Scoring::kMape), mape / 300, 1e-12);
      if (!relative) {
        const double mse = ((*held_out) - problem.y).squaredNorm() / 300;
        EXPECT_NEAR(*cv->Loss(subset, Scoring::kMse), mse, 1e-9 * mse);
      }
    }
  }
}

// Under the absolute loss each fold's fit is the absolute-loss fit of the
// fold's training rows (FitLinear's, up to IRLS convergence), and on rows
// with gross outliers its held-out error beats the squared loss's.
TEST(CrossValidator, AbsoluteLossHeldOutPredictionsMatchRowRefits) {
  Problem problem = MakeProblem(300, 6, {1, 4}, 0.02, 12);
  for (int i = 0; i < 300; i += 10) problem.y(i) *= 4;  // a slow collection
  const std::vector<int> folds = *RandomFolds(300, 4, 3);
  const std::vector<int> subset = {4, 1};
  RegressionOptions squared;
  RegressionOptions absolute;
  absolute.loss = Loss::kAbsolute;
  for (bool non_negative : {false, true}) {
    absolute.non_negative = non_negative;
    absl::StatusOr<CrossValidator> cv = CrossValidator::Create(problem.x, problem.y, folds, absolute);
    ASSERT_TRUE(cv.ok()) << cv.status();
    absl::StatusOr<Eigen::VectorXd> held_out = cv->HeldOutPredictions(subset);
    ASSERT_TRUE(held_out.ok()) << held_out.status();
    for (int f = 0; f < 4; ++f) {
      absl::StatusOr<LinearFit> fit = FitOutsideFold(problem, folds, f, subset, absolute);
      ASSERT_TRUE(fit.ok());
      for (int i = 0; i < 300; ++i) {
        if (folds[i] != f) continue;
        const double row[] = {problem.x(i, 4), problem.x(i, 1)};
        EXPECT_NEAR((*held_out)(i), fit->Predict(row), 1e-4 * std::abs(problem.y(i)));
      }
    }
  }
  absl::StatusOr<CrossValidator> l2 = CrossValidator::Create(problem.x, problem.y, folds, squared);
  absl::StatusOr<CrossValidator> l1 = CrossValidator::Create(problem.x, problem.y, folds, absolute);
  ASSERT_TRUE(l2.ok() && l1.ok());
  EXPECT_LT(*l1->Loss(subset, Scoring::kMape), *l2->Loss(subset, Scoring::kMape));
  // Forward selection under the absolute loss still finds the true columns.
  SfsOptions sfs;
  sfs.max_features = 4;
  absl::StatusOr<SfsResult> selected = SelectForward(*l1, sfs);
  ASSERT_TRUE(selected.ok()) << selected.status();
  EXPECT_EQ(std::set<int>(selected->selected.begin(), selected->selected.end()),
            (std::set<int>{1, 4}));
}

// A held-out row's target must not enter its own fold's fit: changing it
// leaves its prediction bit-identical, while it does move other folds'.
TEST(CrossValidator, HeldOutTargetNeverEntersItsFoldsFit) {
  Problem problem = MakeProblem(200, 5, {0, 3}, 0.1, 4);
  const std::vector<int> folds = *RandomFolds(200, 5, 8);
  for (bool relative : {false, true}) {
    RegressionOptions options;
    options.relative_weights = relative;
    const std::vector<int> subset = {0, 3};
    const Eigen::VectorXd before =
        *(*CrossValidator::Create(problem.x, problem.y, folds, options)).HeldOutPredictions(subset);
    Problem changed = problem;
    changed.y(17) *= 1000;
    const Eigen::VectorXd after =
        *(*CrossValidator::Create(changed.x, changed.y, folds, options)).HeldOutPredictions(subset);
    int moved = 0;
    for (int i = 0; i < 200; ++i) {
      if (folds[i] == folds[17]) {
        EXPECT_EQ(before(i), after(i)) << "row " << i << " shares the fold of the changed row";
      } else if (before(i) != after(i)) {
        ++moved;
      }
    }
    EXPECT_GT(moved, 100);
  }
}

TEST(SelectForward, RecoversTrueSubsetOnNoisyData) {
  const std::vector<int> truth = {3, 7, 12, 18};
  const Problem problem = MakeProblem(4000, 24, truth, 0.02, 21);
  for (Scoring scoring : {Scoring::kMape, Scoring::kMse, Scoring::kR2}) {
    absl::StatusOr<CrossValidator> cv = CrossValidator::Create(
        problem.x, problem.y, *RandomFolds(4000, 5, 3), RegressionOptions{});
    ASSERT_TRUE(cv.ok());
    SfsOptions options;
    options.scoring = scoring;
    options.max_features = 10;
    options.min_improvement = 0.005;
    absl::StatusOr<SfsResult> result = SelectForward(*cv, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(std::set<int>(result->selected.begin(), result->selected.end()),
              std::set<int>(truth.begin(), truth.end()))
        << ScoringName(scoring);
    EXPECT_LT(result->loss, result->baseline_loss);
    for (size_t i = 1; i < result->loss_path.size(); ++i) {
      EXPECT_LT(result->loss_path[i], result->loss_path[i - 1]);
    }
  }
}

TEST(SelectForward, HonoursForcedMaxFeaturesAndSkipsSingularCandidates) {
  Problem problem = MakeProblem(500, 6, {1, 2}, 0.01, 5);
  problem.x.col(5) = problem.x.col(1) * 3;  // duplicate of a true column
  absl::StatusOr<CrossValidator> cv =
      CrossValidator::Create(problem.x, problem.y, *RandomFolds(500, 5, 1), {});
  ASSERT_TRUE(cv.ok());
  SfsOptions options;
  options.forced = {0};
  options.max_features = 6;
  options.min_improvement = -1;  // always add
  absl::StatusOr<SfsResult> result = SelectForward(*cv, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->selected.front(), 0);
  // Columns 1 and 5 are collinear: at most one of them can ever be selected.
  const std::set<int> chosen(result->selected.begin(), result->selected.end());
  EXPECT_FALSE(chosen.count(1) && chosen.count(5));
  EXPECT_EQ(result->selected.size(), 5u);
  options.forced = {9};
  EXPECT_EQ(SelectForward(*cv, options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(CrossValidator, RejectsTooFewFoldsAndEmptyInput) {
  const Problem problem = MakeProblem(10, 2, {0}, 0.0, 1);
  const std::vector<int> one_fold(10, 0);
  EXPECT_EQ(CrossValidator::Create(problem.x, problem.y, one_fold, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const std::vector<int> gap = {0, 0, 0, 2, 2, 2, 2, 2, 2, 2};
  EXPECT_EQ(CrossValidator::Create(problem.x, problem.y, gap, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CrossValidator::Create(Eigen::MatrixXd(0, 2), Eigen::VectorXd(0), {}, {})
                .status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace perfcast::predictor
