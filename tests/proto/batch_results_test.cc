// proto/batch_results.h: the compact PredictBatch layout written by the
// builder reads back as the per-query layout, and inconsistent tables are
// refused before anything indexes them.
#include "proto/batch_results.h"

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace perfcast::proto {
namespace {

using google::protobuf::util::MessageDifferencer;

v1::PredictResponse Answer(double ms, const char* op_class) {
  v1::PredictResponse answer;
  answer.set_iteration_ms(ms);
  answer.set_iteration_ms_low(ms * 0.9);
  answer.set_iteration_ms_high(ms * 1.1);
  answer.set_model_id(7);
  answer.set_method("two-level");
  answer.add_features("level2/train:level1_ms");
  v1::OperationEstimate* op = answer.add_breakdown();
  op->set_op_class(op_class);
  op->set_ms(ms);
  op->set_share(1);
  answer.mutable_workload()->set_family("lstm");
  (*answer.mutable_workload()->mutable_params())["layers"] = 2;
  answer.mutable_memory()->set_peak_bytes(1e9);
  return answer;
}

v1::PredictResult Expected(const v1::PredictResponse& answer, int64_t iterations, double s) {
  v1::PredictResult result;
  *result.mutable_prediction() = answer;
  result.mutable_prediction()->set_iterations(iterations);
  result.mutable_prediction()->set_job_seconds(s);
  result.mutable_prediction()->set_job_seconds_low(s / 2);
  result.mutable_prediction()->set_job_seconds_high(s * 2);
  return result;
}

TEST(BatchResultsTest, CompactTableReadsBackAsPerQueryResults) {
  const v1::PredictResponse a = Answer(3.5, "gemm"), b = Answer(8.25, "rnn");
  const int key_a = 0, key_b = 0;  // their addresses identify the answers
  v1::PredictBatchResponse response;
  {
    CompactResultsBuilder builder(response.mutable_compact(), 5);
    EXPECT_TRUE(builder.AddAnswered(&key_a, a, 10, 35, 17.5, 70));
    builder.AddFailed(5, "no node named 'x'");
    EXPECT_FALSE(builder.AddAnswered(&key_a, a, 20, 70, 35, 140));
    EXPECT_TRUE(builder.AddAnswered(&key_b, b, 4, 33, 16.5, 66));
    builder.AddFailed(3, "workload.batch_size must be >= 1, got 0");
  }
  // Each distinct answer once, without the job's fields.
  ASSERT_EQ(response.compact().answers_size(), 2);
  EXPECT_EQ(response.compact().answers(0).iterations(), 0);
  ASSERT_TRUE(ValidateBatchResponse(response).ok());
  ASSERT_EQ(BatchResultCount(response), 5);

  std::vector<v1::PredictResult> expected(5);
  expected[0] = Expected(a, 10, 35);
  expected[1].set_code(5);
  expected[1].set_error("no node named 'x'");
  expected[2] = Expected(a, 20, 70);
  expected[3] = Expected(b, 4, 33);
  expected[4].set_code(3);
  expected[4].set_error("workload.batch_size must be >= 1, got 0");
  v1::PredictResult result;
  for (int i = 0; i < 5; ++i) {
    BatchResult(response, i, &result);
    EXPECT_TRUE(MessageDifferencer::Equals(result, expected[i]))
        << i << ": " << result.ShortDebugString();
    EXPECT_EQ(result.has_prediction(), expected[i].code() == 0);
  }

  // The wire round trip changes nothing.
  v1::PredictBatchResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(response.SerializeAsString()));
  ASSERT_TRUE(ValidateBatchResponse(parsed).ok());
  for (int i = 0; i < 5; ++i) {
    BatchResult(parsed, i, &result);
    EXPECT_TRUE(MessageDifferencer::Equals(result, expected[i])) << i;
  }
}

TEST(BatchResultsTest, PerQueryLayoutReadsAsItIs) {
  v1::PredictBatchResponse response;
  *response.add_results() = Expected(Answer(1, "gemm"), 3, 3);
  response.add_results()->set_code(5);
  ASSERT_TRUE(ValidateBatchResponse(response).ok());
  ASSERT_EQ(BatchResultCount(response), 2);
  v1::PredictResult result;
  BatchResult(response, 1, &result);
  EXPECT_TRUE(MessageDifferencer::Equals(result, response.results(1)));
}

TEST(BatchResultsTest, InconsistentTablesAreRefused) {
  const v1::PredictResponse a = Answer(3.5, "gemm");
  const int key = 0;
  v1::PredictBatchResponse good;
  {
    CompactResultsBuilder builder(good.mutable_compact(), 3);
    builder.AddAnswered(&key, a, 10, 35, 17.5, 70);
    builder.AddFailed(5, "missing");
    builder.AddAnswered(&key, a, 20, 70, 35, 140);
  }
  ASSERT_TRUE(ValidateBatchResponse(good).ok());
  auto refused = [](const v1::PredictBatchResponse& r) {
    return ValidateBatchResponse(r).code() == absl::StatusCode::kDataLoss;
  };
  v1::PredictBatchResponse bad = good;
  bad.mutable_compact()->mutable_job_seconds()->RemoveLast();
  EXPECT_TRUE(refused(bad)) << "a short column";
  bad = good;
  bad.mutable_compact()->set_answer(2, 1);
  EXPECT_TRUE(refused(bad)) << "an answer index out of range";
  bad = good;
  bad.mutable_compact()->set_answer(2, -2);
  EXPECT_TRUE(refused(bad)) << "a negative index other than -1";
  bad = good;
  bad.mutable_compact()->set_answer(0, -1);
  EXPECT_TRUE(refused(bad)) << "a failed query not listed";
  bad = good;
  bad.mutable_compact()->set_answer(1, 0);
  EXPECT_TRUE(refused(bad)) << "a listed failure that is answered";
  bad = good;
  bad.mutable_compact()->clear_failed_errors();
  EXPECT_TRUE(refused(bad)) << "a failure without its message";
}

}  // namespace
}  // namespace perfcast::proto
