// Model summaries, prediction methods and profile selection rules.
#include "predictor/summary.h"

#include "gtest/gtest.h"
#include "predictor/selection.h"

namespace perfcast::predictor {
namespace {

FittedModel Fitted(std::vector<std::string> features, double cv_mape, int64_t rows) {
  FittedModel m;
  m.features = std::move(features);
  m.cv_mape = cv_mape;
  m.training_rows = rows;
  return m;
}

TEST(Summary, TopLevelIsLevelTwoWhenPresentWeightedByRows) {
  PredictorModel model;
  model.level1[models::OpClass::kGemm] = Fitted({"compute_ms"}, 0.10, 100);
  model.level2[models::Phase::kTrain] = Fitted({"level1_ms"}, 0.04, 30);
  model.level2[models::Phase::kInference] = Fitted({"level1_ms", "layers"}, 0.08, 10);
  const ModelSummary s = Summarize(model);
  EXPECT_EQ(s.target, "iteration_ms");
  EXPECT_EQ(s.training_rows, 140);
  EXPECT_DOUBLE_EQ(s.cv_mape, (0.04 * 30 + 0.08 * 10) / 40);
  EXPECT_NE(s.line.find("gemm[compute_ms] 10.0%"), std::string::npos) << s.line;
  EXPECT_NE(s.line.find("train[level1_ms] 4.0%"), std::string::npos) << s.line;
  EXPECT_EQ(SelectedFeatures(model),
            (std::vector<std::string>{"level1/gemm:compute_ms", "level2/train:level1_ms",
                                      "level2/inference:level1_ms",
                                      "level2/inference:layers"}));
}

TEST(Summary, LevelOneAloneAndInterceptOnlyModels) {
  PredictorModel model;
  model.level1[models::OpClass::kGemm] = Fitted({}, 0.2, 10);
  const ModelSummary s = Summarize(model);
  EXPECT_EQ(s.target, "call_ms");
  EXPECT_DOUBLE_EQ(s.cv_mape, 0.2);
  EXPECT_NE(s.line.find("level2: -"), std::string::npos) << s.line;
  EXPECT_FALSE(HasAnyFeature(model));
  model.level2[models::Phase::kTrain] = Fitted({"level1_ms"}, 0.1, 5);
  EXPECT_TRUE(HasAnyFeature(model));
}

TEST(Summary, PredictionCvMapeIsTheAnsweringLevels) {
  PredictorModel model;
  model.level2[models::Phase::kTrain] = Fitted({"level1_ms"}, 0.05, 5);
  EXPECT_DOUBLE_EQ(PredictionCvMape(model, models::Phase::kTrain, Method::kTwoLevel, 0.3), 0.05);
  EXPECT_DOUBLE_EQ(PredictionCvMape(model, models::Phase::kTrain, Method::kLevel1Sum, 0.3), 0.3);
  EXPECT_DOUBLE_EQ(PredictionCvMape(model, models::Phase::kInference, Method::kTwoLevel, 0.3),
                   0.3);
}

TEST(Method, NamesAndLevels) {
  EXPECT_EQ(MethodName(Method::kTwoLevel), "two-level");
  EXPECT_EQ(MethodName(Method::kLevel1Sum), "level1-sum");
  EXPECT_EQ(MethodName(Method::kLevel2Direct), "level2-direct");
  EXPECT_EQ(MethodLevel(Method::kLevel1Sum), 1);
  EXPECT_EQ(MethodLevel(Method::kTwoLevel), 2);
  EXPECT_EQ(MethodLevel(Method::kLevel2Direct), 2);
}

models::Profile ModelProfile(const std::string& family, models::Phase phase) {
  models::Profile p;
  p.workload.kind = models::WorkloadKind::kModel;
  p.workload.family = family;
  p.workload.phase = phase;
  return p;
}

TEST(Selection, GpuFiltersApplyToAllFamilyAndPhaseOnlyToModels) {
  ProfileSelection s;
  s.gpu_models = {"a-gpu", "b-gpu"};
  s.exclude_gpu_models = {"b-gpu"};
  s.families = {"lstm"};
  s.phase = models::Phase::kTrain;
  const ProfileSelector selector(s);
  const models::Profile lstm_train = ModelProfile("lstm", models::Phase::kTrain);
  EXPECT_TRUE(selector.Selects(lstm_train, "a-gpu"));
  EXPECT_FALSE(selector.Selects(lstm_train, "b-gpu"));  // excluded wins
  EXPECT_FALSE(selector.Selects(lstm_train, "c-gpu"));
  EXPECT_FALSE(selector.Selects(ModelProfile("gnn", models::Phase::kTrain), "a-gpu"));
  EXPECT_FALSE(selector.Selects(ModelProfile("lstm", models::Phase::kInference), "a-gpu"));
  models::Profile op;
  op.workload.kind = models::WorkloadKind::kOperation;
  op.workload.family = "gemm";
  EXPECT_TRUE(selector.Selects(op, "a-gpu"));  // operations feed level 1 of any family
  EXPECT_EQ(DescribeSelection(s),
            "gpu_models=a-gpu,b-gpu exclude_gpu_models=b-gpu families=lstm phase=train");
  EXPECT_EQ(DescribeSelection(ProfileSelection{}), "all profiles");
  EXPECT_TRUE(ProfileSelector(ProfileSelection{}).Selects(lstm_train, "z"));
}

}  // namespace
}  // namespace perfcast::predictor
